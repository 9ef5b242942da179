#!/usr/bin/env bash
# Deploys one environment of the Draw Request Service. A person runs it from a shell; the pipeline
# (.github/workflows/deploy.yml) runs the same steps, one job step each, so the two cannot drift.
#
#   what-if   preview infra/main.bicep with infra/env/<env>.parameters.json (in the job summary on GitHub)
#   infra     deploy it (Azure resources and the Entra application, service principal and role grants)
#   partners  write the Partners row of each partner the parameters file lists (from the deployment's output),
#             and remove from the stop list each stop an entry lifts (its liftStop names the stop)
#   code      deploy the package (the zip `npm run package` builds, or --package <zip>)
#   smoke     POST /DrawRequest without a token must answer 401; with the smoke identity's token, the
#             400 only the deployed tenant, audience, Partners row and tables give (scripts/smokeCheck.cjs)
#
# Usage: scripts/deploy.sh <dev|prod> [--what-if | --infra-only | --code-only | --step <name> ...]
#                          [--package <zip>] [--plan] [--yes]
#   (no mode)     every step; after the what-if a person is asked to confirm (--yes: not asked)
#   --what-if     the preview only        --infra-only  what-if, infra, partners
#   --code-only   code, smoke             --step <name> exactly the steps named, in the order above
#   --package     deploy this zip instead of building one (the pipeline's artifact, or a rollback)
#   --plan        what-if with read permissions only (--validation-level ProviderNoRbac): the plan identity's
#
# Closed storage (networkIsolated, storagePublicAccess false) answers only inside the environment's
# network: the partners step then works only there, as the pipeline runs it (its deploy job on the
# environment's private-networked runner group, privateRunnerGroup of infra/env/<env>.pipeline.json).
# The first deployment that closes storage must follow one that isolated the environment with storage
# still public (phase 1, docs/deploy.md, "Network isolation"); an earlier state is refused.
#
# Needs the Azure CLI signed in (az login, or azure/login in the pipeline) with the subscription
# selected, and Node.js/npm when it builds the package. Environment:
#   RESOURCE_GROUP               the environment's group (default rg-drawreq-<env>; bootstrap.bicep creates it)
#   LOCATION                     region, only to create a missing group
#   DEPLOYMENT_NAME              name of the deployment (default drawreq-<env>-<UTC time>)
#   PARTNER_WRITER_PRINCIPAL_ID  object id that may write the Partners table (default: whoever is signed in)
#   SMOKE_CLIENT_ID              client id of the smoke identity (default: the environment's deploying
#                                identity, deployClientId of infra/env/<env>.pipeline.json)
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^#   --plan/p' "$0" | sed 's/^# \{0,1\}//' >&2
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
target="$(bash scripts/target.sh "$env" 2>/dev/null || true)"
smoke_client="${SMOKE_CLIENT_ID:-$(sed -n 's/^deployClientId=//p' <<<"$target")}"
# The stop identity (the stop-client workflow's) is granted the stop list and a read of the Partners table,
# and the account that workflow writes is the bootstrap's storageAccountName: both from the pipeline file
# when it is filled in.
stop_principal="$(sed -n 's/^stopPrincipalId=//p' <<<"$target")"
stop_account="$(sed -n 's/^storageAccountName=//p' <<<"$target")"

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
  [ -z "$stop_principal" ] || writer_args+=("stopPrincipalId=${stop_principal}")
fi
# Closing storage before the environment's network exists would cut off every caller at once, the app
# included (docs/deploy.md, "Network isolation": phase 1, then phase 2): refused unless the last successful
# deployment already isolated the environment.
if runs infra && node -e 'const p = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).parameters;
  const v = (n, d) => (p[n] === undefined ? d : p[n].value);
  process.exit(v("networkIsolated", false) && !v("storagePublicAccess", true) ? 0 : 1);' "$params"; then
  isolated="$(az deployment group list --resource-group "$group" \
    --query "[?starts_with(name, 'drawreq-${env}-') && properties.provisioningState=='Succeeded'] | sort_by(@, &properties.timestamp) | [-1].properties.outputs.networkIsolated.value" \
    --output tsv 2>/dev/null || true)"
  case "$isolated" in
    true | True) ;;
    *)
      echo "refused, nothing deployed: $params closes storage (storagePublicAccess false), but the last successful deployment of ${env}" >&2
      echo "  did not isolate it (networkIsolated ${isolated:-unknown: none found}). Deploy phase 1 first: networkIsolated true with" >&2
      echo "  storagePublicAccess true, then close it (docs/deploy.md, \"Moving an environment to isolation\")." >&2
      exit 1
      ;;
  esac
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

if runs partners; then
  account="$(output storageAccountName)"
  table="$(output partnersTableName)"
  stops="$(output stoppedClientsTableName)"
  # to_string: the CLI's tsv writes booleans as True/False; the table wants true/false. liftStop last: empty
  # for most entries.
  rows="$(output partnerRows "[].[clientId, partnerId, to_string(active), liftStop]")"
  count=0
  while IFS=$'\t' read -r client partner active _; do
    [ -n "$client" ] || continue
    if ! az storage entity insert --auth-mode login --account-name "$account" --table-name "$table" --if-exists replace \
      --entity PartitionKey="$client" RowKey="" PartnerId="$partner" Active="$active" Active@odata.type=Edm.Boolean --output none; then
      echo "Partners row of ${partner} not written" >&2
      case "$(output storageClosed)" in
        true | True)
          echo "  ${account} is closed to its private endpoints: the rows are written from inside the environment's network," >&2
          echo "  as the pipeline's deploy job does on its runner group (privateRunnerGroup of infra/env/${env}.pipeline.json)." >&2
          ;;
      esac
      exit 1
    fi
    count=$((count + 1))
  done <<<"$rows"
  echo "partners written: $count"
  # A lifted stop is removed only if it is still the stop the reviewed change names (its StopId): a client
  # stopped again since keeps its new stop. The delete matches the row's ETag as read.
  # Only stdout is parsed: the CLI may write warnings on stderr even when it succeeds.
  errors="$(mktemp)"
  while IFS=$'\t' read -r client _ _ lift; do
    [ -n "$client" ] && [ -n "${lift:-}" ] || continue
    if ! stop="$(az storage entity show --auth-mode login --account-name "$account" --table-name "$stops" \
      --partition-key "$client" --row-key "" --query "[StopId, etag]" --output tsv 2>"$errors")"; then
      if grep -q 'ResourceNotFound' "$errors"; then
        echo "stop ${lift} of client ${client}: not on the stop list (lifted already)"
        continue
      fi
      echo "the stop list row of ${client} could not be read: $(cat "$errors")" >&2
      exit 1
    fi
    # tsv prints a list's items one per line: the stop's id, then its ETag.
    {
      read -r stop_id
      read -r etag
    } <<<"$stop"
    if [ "$stop_id" != "$lift" ]; then
      echo "client ${client} stays stopped: its stop is ${stop_id}, not ${lift} (stopped again since the change that lifts ${lift})"
      continue
    fi
    az storage entity delete --auth-mode login --account-name "$account" --table-name "$stops" \
      --partition-key "$client" --row-key "" --if-match "$etag" --output none
    echo "stop ${lift} of client ${client} lifted"
  done <<<"$rows"
  rm -f "$errors"
  # The stop-client workflow cannot read the deployment (its identity may read the Partners table only):
  # it writes the account the pipeline file names, which must be this one.
  if [ -n "$stop_account" ] && [ "$stop_account" != "$account" ]; then
    echo "infra/env/${env}.pipeline.json: storageAccountName is ${stop_account}, but the deployment's account is ${account}:" >&2
    echo "  the stop-client workflow would not find the Partners table; set it to ${account} and commit (docs/deploy.md, Bootstrap)" >&2
    exit 1
  fi
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
