#!/usr/bin/env bash
# Deploys one environment of the Draw Request Service: the infrastructure (infra/main.bicep with
# infra/env/<env>.parameters.json), then the code (the zip `npm run package` builds), then a smoke
# check that POST /DrawRequest without a token answers 401. docs/deploy.md explains each step.
#
# Usage: scripts/deploy.sh <dev|prod> [--infra-only | --code-only]
#
# Needs the Azure CLI, signed in (`az login`) with the target subscription selected
# (`az account set --subscription <id>`), and Node.js/npm. Environment:
#   RESOURCE_GROUP  the environment's resource group (default: rg-drawreq-<env>)
#   LOCATION        region for the resource group if it does not exist yet (a Flex Consumption region)
set -euo pipefail

usage() {
  echo "usage: $0 <dev|prod> [--infra-only | --code-only]" >&2
  exit 2
}

env="${1:-}"
mode="${2:-all}"
case "$env" in dev | prod) ;; *) usage ;; esac
case "$mode" in all | --infra-only | --code-only) ;; *) usage ;; esac

cd "$(dirname "$0")/.."
params="infra/env/${env}.parameters.json"
group="${RESOURCE_GROUP:-rg-drawreq-${env}}"
zip="dist/draw-request-service.zip"

if grep -q 'REPLACE-WITH' "$params"; then
  echo "$params still has placeholders; fill them in (docs/deploy.md, step 1) and commit:" >&2
  grep -n 'REPLACE-WITH' "$params" >&2
  exit 1
fi

echo "subscription: $(az account show --query '[name, id]' -o tsv | tr '\t' ' ')"
echo "environment:  ${env}, resource group ${group}"

if [ "$mode" != "--code-only" ]; then
  if [ "$(az group exists --name "$group")" != "true" ]; then
    az group create --name "$group" --location "${LOCATION:?set LOCATION to create resource group $group}" --output none
  fi
  deployment="drawreq-${env}-$(date -u +%Y%m%d%H%M%S)"
  # What would change, then the deployment itself (incremental: resources not in the template stay).
  az deployment group what-if --resource-group "$group" --template-file infra/main.bicep --parameters "@${params}"
  az deployment group create \
    --name "$deployment" \
    --resource-group "$group" \
    --template-file infra/main.bicep \
    --parameters "@${params}" \
    --output none
  echo "infrastructure deployed: $deployment"
fi

# The app's name and URL come from the latest successful deployment of main.bicep in the group.
output() {
  az deployment group list --resource-group "$group" \
    --query "[?starts_with(name, 'drawreq-${env}-') && properties.provisioningState=='Succeeded'] | sort_by(@, &properties.timestamp) | [-1].properties.outputs.$1.value" \
    --output tsv
}
app="$(output functionAppName)"
url="$(output functionAppUrl)"
if [ -z "$app" ]; then
  echo "no successful infrastructure deployment found in $group: run $0 $env first" >&2
  exit 1
fi

if [ "$mode" != "--infra-only" ]; then
  npm ci --no-audit --no-fund
  npm run package
  # Flex Consumption: the zip goes to the app's deployment container (One Deploy). Right after the
  # first infrastructure deployment the identity's role on that container may still be propagating.
  for attempt in 1 2 3 4 5; do
    if az functionapp deploy --resource-group "$group" --name "$app" --src-path "$zip" --type zip --output none; then
      break
    fi
    if [ "$attempt" -eq 5 ]; then
      echo "code deployment failed" >&2
      exit 1
    fi
    echo "code deployment failed (attempt $attempt); retrying in 60 s"
    sleep 60
  done
  echo "code deployed to $app"
fi

# Smoke check: the host is up, routes /DrawRequest and runs authentication (as the availability test does).
for attempt in $(seq 1 20); do
  status="$(curl --silent --output /dev/null --write-out '%{http_code}' --max-time 30 \
    --request POST --header 'Content-Type: application/json' --data '[]' "${url}/DrawRequest" || true)"
  if [ "$status" = "401" ]; then
    echo "smoke check: POST ${url}/DrawRequest without a token answered 401"
    exit 0
  fi
  echo "smoke check: answered ${status:-nothing} (attempt $attempt); waiting 15 s"
  sleep 15
done
echo "smoke check failed: POST ${url}/DrawRequest never answered 401; see Application Insights (docs/runbook.md)" >&2
exit 1
