#!/usr/bin/env bash
# Prints, as name=value lines for $GITHUB_OUTPUT, where the pipeline deploys an environment and as
# whom: infra/env/<env>.pipeline.json (the outputs of infra/bootstrap.bicep, committed). Refuses a file
# that still holds a placeholder, naming it.
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
const names = ['tenantId', 'subscriptionId', 'resourceGroup', 'deployClientId', 'deployPrincipalId', 'planClientId'];
const missing = names.filter((n) => typeof target[n] !== 'string' || target[n] === '' || target[n].includes('REPLACE-WITH'));
if (missing.length > 0) {
  console.error(`${file}: set ${missing.join(', ')} from the outputs of infra/bootstrap.bicep (docs/deploy.md, Bootstrap)`);
  process.exit(1);
}
for (const n of names) console.log(`${n}=${target[n]}`);
JS
