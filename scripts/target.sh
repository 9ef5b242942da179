#!/usr/bin/env bash
# Prints, as name=value lines for $GITHUB_OUTPUT, where the pipeline deploys an environment and as
# whom: infra/env/<env>.pipeline.json (the outputs of infra/bootstrap.bicep, committed; the stop-client
# workflow reads it too: its identity and the storage account of the Partners table). Refuses a file
# that still holds a placeholder, naming it. runsOn is the deploy (and stop) job's runs-on (JSON): the runner group
# privateRunnerGroup names, whose runners sit in the environment's network, else GitHub-hosted
# ubuntu-24.04; refused when the environment's parameters close its storage and no group is named, since
# only a runner inside the network can then write the Partners rows (docs/deploy.md, "Network isolation").
#
# Usage: scripts/target.sh <dev|prod>
set -euo pipefail
env="${1:-}"
case "$env" in dev | prod) ;; *)
  echo "usage: $0 <dev|prod>" >&2
  exit 2
  ;;
esac
file="$(dirname "$0")/../infra/env/${env}.pipeline.json"
node - "$file" <<'JS'
const file = process.argv[2];
const target = JSON.parse(require('node:fs').readFileSync(file, 'utf8'));
const names = ['tenantId', 'subscriptionId', 'resourceGroup', 'deployClientId', 'deployPrincipalId', 'planClientId', 'stopClientId', 'stopPrincipalId', 'storageAccountName'];
const missing = names.filter((n) => typeof target[n] !== 'string' || target[n] === '' || target[n].includes('REPLACE-WITH'));
if (missing.length > 0) {
  console.error(`${file}: set ${missing.join(', ')} from the outputs of infra/bootstrap.bicep (docs/deploy.md, Bootstrap)`);
  process.exit(1);
}
const group = target.privateRunnerGroup ?? '';
if (typeof group !== 'string' || group.includes('REPLACE-WITH')) {
  console.error(`${file}: privateRunnerGroup must be the name of a runner group, or "" for GitHub-hosted runners`);
  process.exit(1);
}
const parameters = JSON.parse(require('node:fs').readFileSync(file.replace(/pipeline\.json$/, 'parameters.json'), 'utf8')).parameters;
const value = (name, fallback) => (parameters[name] === undefined ? fallback : parameters[name].value);
if (value('networkIsolated', false) && !value('storagePublicAccess', true) && group === '') {
  console.error(`${file}: the environment's storage is closed (networkIsolated, storagePublicAccess false): set privateRunnerGroup, the runner group in its network (docs/deploy.md, "Network isolation")`);
  process.exit(1);
}
for (const n of names) console.log(`${n}=${target[n]}`);
console.log(`runsOn=${JSON.stringify(group === '' ? 'ubuntu-24.04' : { group })}`);
JS
