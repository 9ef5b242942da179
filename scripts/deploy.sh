#!/usr/bin/env bash
# Deploys one environment of the Draw Request Service. A person runs it from a shell; the pipeline
# (.github/workflows/deploy.yml) runs the same steps, one job step each, so the two cannot drift.
#
#   what-if   preview infra/main.bicep with infra/env/<env>.parameters.json (in the job summary on GitHub)
#   infra     deploy it (Azure resources and the Entra application, service principal and role grants)
#   partners  write the Partners row of each partner the parameters file lists (from the deployment's output)
#   code      deploy the package (the zip `npm run package` builds, or --package <zip>)
#   smoke     POST /DrawRequest without a token must answer 401; with the smoke identity's token, the
#             400 only the deployed tenant, audience, Partners row and tables give (scripts/smokeCheck.cjs)
#
# Usage: scripts/deploy.sh <dev|prod> [--what-if | --infra-only | --code-only | --step <name> ...]
#                          [--package <zip>] [--plan] [--yes] | --close-storage
#   (no mode)     every step; after the what-if a person is asked to confirm (--yes: not asked)
#   --what-if     the preview only        --infra-only  what-if, infra, partners
#   --code-only   code, smoke             --step <name> exactly the steps named, in the order above
#   --package     deploy this zip instead of building one (the pipeline's artifact, or a rollback)
#   --plan        what-if with read permissions only (--validation-level ProviderNoRbac): pull requests
#   --close-storage  closed storage only: public access off and every IP rule removed (idempotent; the
#                 pipeline runs it after the partners step whatever happened)
#
# Needs the Azure CLI signed in (az login, or azure/login in the pipeline) with the subscription
# selected, and Node.js/npm when it builds the package. Environment:
#   RESOURCE_GROUP               the environment's group (default rg-drawreq-<env>; bootstrap.bicep creates it)
#   LOCATION                     region, only to create a missing group
#   DEPLOYMENT_NAME              name of the deployment (default drawreq-<env>-<UTC time>)
#   PARTNER_WRITER_PRINCIPAL_ID  object id that may write the Partners table (default: whoever is signed in)
#   SMOKE_CLIENT_ID              client id of the smoke identity (default: the environment's deploying
#                                identity, deployClientId of infra/env/<env>.pipeline.json)
#   DEPLOY_CLIENT_IP             this machine's public IPv4 address, for the partners step's temporary
#                                storage rule when storage is closed (storageClosed) (default: asked of
#                                https://api.ipify.org); STORAGE_RULE_WAIT_SECONDS between write attempts (10)
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^#   --close-storage/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

env="${1:-}"
case "$env" in dev | prod) ;; *) usage ;; esac
shift

all_steps=(what-if infra partners code smoke)
steps=()
package=""
plan=false
yes=false
mode_given=false
close_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --what-if) steps+=(what-if) mode_given=true ;;
    --infra-only) steps+=(what-if infra partners) mode_given=true ;;
    --code-only) steps+=(code smoke) mode_given=true ;;
    --step)
      [ $# -ge 2 ] || usage
      case " ${all_steps[*]} " in *" $2 "*) ;; *) usage ;; esac
      steps+=("$2") mode_given=true
      shift
      ;;
    --package)
      [ $# -ge 2 ] && [ -f "$2" ] || {
        echo "--package needs an existing zip (got ${2:-nothing})" >&2
        exit 2
      }
      # Absolute, as the script moves to the folder it is in (the repository, or the artifact's).
      package="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
      shift
      ;;
    --plan) plan=true ;;
    --yes) yes=true ;;
    --close-storage) close_only=true mode_given=true ;;
    *) usage ;;
  esac
  shift
done
[ "$mode_given" = true ] || steps=("${all_steps[@]}")
runs() { case " ${steps[*]-} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

cd "$(dirname "$0")/.."
params="infra/env/${env}.parameters.json"
group="${RESOURCE_GROUP:-rg-drawreq-${env}}"
deployment="${DEPLOYMENT_NAME:-drawreq-${env}-$(date -u +%Y%m%d%H%M%S)}"
export AZURE_CORE_NO_COLOR=true AZURE_CORE_ONLY_SHOW_ERRORS=true

if grep -q 'REPLACE-WITH' "$params"; then
  echo "$params still has placeholders; fill them in (docs/deploy.md) and commit:" >&2
  grep -n 'REPLACE-WITH' "$params" >&2
  exit 1
fi

# The smoke identity is the environment's deploying identity: the deployment grants it the app role and
# writes its Partners row (a reserved partner that owns no loan), whoever runs this script.
smoke_client="${SMOKE_CLIENT_ID:-$(bash scripts/target.sh "$env" 2>/dev/null | sed -n 's/^deployClientId=//p' || true)}"

echo "subscription: $(az account show --query "join(' ', [name, id])" -o tsv)"
echo "environment:  ${env}, resource group ${group}, steps: ${steps[*]-}"

# Who may write the Partners table: the identity that deploys (docs/deploy.md, "Partners as data").
writer_args=()
if runs what-if || runs infra; then
  writer="${PARTNER_WRITER_PRINCIPAL_ID:-}"
  writer_type=ServicePrincipal
  if [ -z "$writer" ]; then
    if [ "$(az account show --query user.type -o tsv)" = "servicePrincipal" ]; then
      writer="$(az ad sp show --id "$(az account show --query user.name -o tsv)" --query id -o tsv)"
    else
      writer="$(az ad signed-in-user show --query id -o tsv)"
      writer_type=User
    fi
  fi
  writer_args=(--parameters "partnerWriterPrincipalId=${writer}" "partnerWriterPrincipalType=${writer_type}")
  [ -z "$smoke_client" ] || writer_args+=("smokeClientAppId=${smoke_client}")
fi
# ${a[@]+"${a[@]}"}: an empty array expands to nothing under set -u, also in bash 3.2 (macOS).
template_args=(--resource-group "$group" --template-file infra/main.bicep --parameters "@${params}" ${writer_args[@]+"${writer_args[@]}"})

if runs what-if; then
  level=()
  [ "$plan" = true ] && level=(--validation-level ProviderNoRbac)
  preview="$(az deployment group what-if --name "$deployment" "${template_args[@]}" ${level[@]+"${level[@]}"})"
  echo "$preview"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '### What-if: %s (%s)\n\n```text\n%s\n```\n' "$env" "$group" "$preview" >>"$GITHUB_STEP_SUMMARY"
  fi
  if runs infra && [ "$yes" != true ] && [ -t 0 ]; then
    read -r -p "Deploy these changes to ${env}? [y/N] " answer
    case "$answer" in y | Y | yes) ;; *)
      echo "nothing deployed"
      exit 1
      ;;
    esac
  fi
fi

if runs infra; then
  if [ "$(az group exists --name "$group")" != "true" ]; then
    az group create --name "$group" --location "${LOCATION:?set LOCATION to create resource group $group}" --output none
  fi
  az deployment group create --name "$deployment" "${template_args[@]}" --output none
  echo "infrastructure deployed: $deployment"
fi

# An output of this run's deployment, or of the latest successful one when this run deployed none;
# $2, when given, is a JMESPath applied to the output's value.
output() {
  if runs infra; then
    az deployment group show --resource-group "$group" --name "$deployment" --query "properties.outputs.$1.value${2:-}" --output tsv
  else
    az deployment group list --resource-group "$group" \
      --query "[?starts_with(name, 'drawreq-${env}-') && properties.provisioningState=='Succeeded'] | sort_by(@, &properties.timestamp) | [-1].properties.outputs.$1.value${2:-}" \
      --output tsv
  fi
}

# A closed environment's storage (networkIsolated and storagePublicAccess false: output storageClosed)
# answers only on its private endpoints, and this machine (a GitHub-hosted runner, a person's) is outside
# the network. For the Partners rows alone, a rule admits this machine's public address: opened just
# before the writes, closed right after them, also when they fail (trap, and the pipeline's
# --close-storage step). The rows still need the Partners role (Microsoft Entra ID; no key exists).
# LIMITATION (why no environment is closed yet, docs/deploy.md, "Network isolation"): Azure Storage IP
# network rules have no effect on requests that originate from the same Azure region as the storage
# account, and GitHub-hosted runners are Azure virtual machines: in that region the rule never admits them.
rule_account=""
rule_ip=""
rule_added=false
public_opened=false
close_storage() {
  [ -n "$rule_account" ] || return 0
  if [ "$rule_added" != true ] && [ "$public_opened" != true ]; then
    rule_account=""
    return 0
  fi
  local public_left=false rule_left=false
  if [ "$public_opened" = true ]; then
    az storage account update --resource-group "$group" --name "$rule_account" --public-network-access Disabled --output none || public_left=true
  fi
  if [ "$rule_added" = true ]; then
    az storage account network-rule remove --resource-group "$group" --account-name "$rule_account" --ip-address "$rule_ip" --output none || rule_left=true
  fi
  if [ "$public_left" = true ]; then
    echo "STORAGE LEFT OPEN to ${rule_ip}: run scripts/deploy.sh <env> --close-storage, or the infra step" >&2
    return 1
  fi
  if [ "$rule_left" = true ]; then
    echo "public network access Disabled, but the rule for ${rule_ip} remains: run scripts/deploy.sh <env> --close-storage, or the infra step" >&2
    return 1
  fi
  echo "storage closed again: public network access Disabled, no rule"
  rule_account=""
}
open_storage() {
  rule_ip="${DEPLOY_CLIENT_IP:-$(curl -fsS --max-time 10 https://api.ipify.org || true)}"
  if ! [[ "$rule_ip" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
    echo "no public IPv4 address of this machine (got '${rule_ip}'): set DEPLOY_CLIENT_IP" >&2
    exit 1
  fi
  rule_account="$1"
  trap 'close_storage || exit 1' EXIT
  az storage account network-rule add --resource-group "$group" --account-name "$rule_account" --ip-address "$rule_ip" --output none
  rule_added=true
  public_opened=true
  az storage account update --resource-group "$group" --name "$rule_account" --public-network-access Enabled --default-action Deny --output none
  echo "storage open to ${rule_ip} only, for the Partners rows"
}

if [ "$close_only" = true ]; then
  account="$(output storageAccountName)"
  case "$(output storageClosed)" in
    true | True) ;;
    *)
      echo "storage not closed by the deployment (storageClosed false): nothing to close"
      exit 0
      ;;
  esac
  az storage account update --resource-group "$group" --name "$account" --public-network-access Disabled --output none
  for ip in $(az storage account network-rule list --resource-group "$group" --account-name "$account" --query "ipRules[].ipAddressOrRange" --output tsv); do
    az storage account network-rule remove --resource-group "$group" --account-name "$account" --ip-address "$ip" --output none
  done
  echo "storage closed: public network access Disabled, no IP rule"
  exit 0
fi

if runs partners; then
  account="$(output storageAccountName)"
  table="$(output partnersTableName)"
  # to_string: the CLI's tsv writes booleans as True/False; the table wants true/false.
  rows="$(output partnerRows "[].[clientId, partnerId, to_string(active)]")"
  closed="$(output storageClosed)"
  case "$closed" in true | True) open_storage "$account" ;; esac
  count=0
  while IFS=$'\t' read -r client partner active; do
    [ -n "$client" ] || continue
    # A new rule takes effect within moments to a minute or two: the first writes may be refused meanwhile.
    for attempt in 1 2 3 4 5 6; do
      if az storage entity insert --auth-mode login --account-name "$account" --table-name "$table" --if-exists replace \
        --entity PartitionKey="$client" RowKey="" PartnerId="$partner" Active="$active" Active@odata.type=Edm.Boolean --output none; then
        break
      fi
      if [ -z "$rule_account" ]; then
        echo "Partners row of ${partner} not written" >&2
        exit 1
      fi
      if [ "$attempt" -eq 6 ]; then
        echo "Partners row of ${partner} not written: the temporary rule for ${rule_ip} did not take effect after 6 attempts." >&2
        echo "  Azure Storage IP network rules have no effect on requests that originate from the same Azure region" >&2
        echo "  as the storage account (Microsoft Learn, Azure Storage firewall limitations); a GitHub-hosted runner" >&2
        echo "  or Cloud Shell in that region is such a request. Write from inside the network (docs/deploy.md, \"Network isolation\")." >&2
        exit 1
      fi
      sleep "${STORAGE_RULE_WAIT_SECONDS:-10}"
    done
    count=$((count + 1))
  done <<<"$rows"
  echo "partners written: $count"
  close_storage
  trap - EXIT
fi

if runs code || runs smoke; then
  app="$(output functionAppName)"
  url="$(output functionAppUrl)"
  if [ -z "$app" ]; then
    echo "no successful infrastructure deployment found in $group: deploy the infrastructure first" >&2
    exit 1
  fi
fi

if runs code; then
  if [ -z "$package" ]; then
    npm ci --no-audit --no-fund
    npm run package
    package="dist/draw-request-service.zip"
  fi
  [ -f "$package" ] || {
    echo "no package at $package" >&2
    exit 1
  }
  # Flex Consumption: the zip goes to the app's deployment container (One Deploy). Right after the
  # first infrastructure deployment the identity's role on that container may still be propagating.
  for attempt in 1 2 3 4 5; do
    if az functionapp deploy --resource-group "$group" --name "$app" --src-path "$package" --type zip --output none; then
      break
    fi
    if [ "$attempt" -eq 5 ]; then
      echo "code deployment failed" >&2
      exit 1
    fi
    echo "code deployment failed (attempt $attempt); retrying in ${DEPLOY_RETRY_SECONDS:-60} s"
    sleep "${DEPLOY_RETRY_SECONDS:-60}"
  done
  echo "code deployed to $app: $package"
fi

if runs smoke; then
  # A token only the smoke identity can get: signed in as anyone else (a person), the settings go unproven.
  token=""
  signed_in="$(az account show --query user.name -o tsv)"
  if [ -n "$smoke_client" ] && [ "$signed_in" = "$smoke_client" ]; then
    scope="$(output apiIdentifierUri)/.default"
    token="$(az account get-access-token --scope "$scope" --query accessToken -o tsv)" || {
      echo "smoke check failed (SMOKE_NO_TOKEN): $signed_in got no token for $scope: is the API application deployed, and its app role granted to the smoke identity (infra step)?" >&2
      exit 1
    }
  else
    echo "smoke check: signed in as ${signed_in}, not the smoke identity (${smoke_client:-none: infra/env/${env}.pipeline.json is not filled in}); only the check without a token runs"
  fi
  SMOKE_TOKEN="$token" node scripts/smokeCheck.cjs "$url"
fi
