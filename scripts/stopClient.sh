#!/usr/bin/env bash
# On-call's emergency stop of one client (docs/runbook.md, "Stop one client"): puts the client on the
# stop list (StoppedClients), so the service refuses its tokens (401 ERR_AUTH_STOPPED_CLIENT) within 5
# minutes, tokens already issued included, whatever its Partners row says. Run by the stop-client workflow
# (.github/workflows/stop-client.yml) as the environment's stop identity, on the environment's runner:
# inside its network when its storage is closed.
#
# It only ever inserts one stop-list row: the stop identity may do nothing else (it may read the Partners
# table, insert into the stop list, and no more: no merge, replace or delete of any row, no table
# operation). A client id that is not a GUID is refused before any Azure call; one with no Partners row is
# refused and nothing is written. A client already stopped stays as it is. Lifting a stop is a reviewed
# change of the parameters file, through the deployment (docs/deploy.md, section 7), never this script.
# The account is the pipeline file's storageAccountName: the stop identity cannot ask Azure where it is.
#
# Usage: scripts/stopClient.sh <dev|prod> <client application id>
set -euo pipefail
env="${1:-}"
client="${2:-}"
case "$env" in dev | prod) ;; *)
  echo "usage: $0 <dev|prod> <client application id>" >&2
  exit 2
  ;;
esac
# Strictly a GUID, before anything else: the id becomes a table key and a log line. The value given is
# not echoed back (a workflow input printed verbatim could hold a workflow command).
if ! [[ "$client" =~ ^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$ ]]; then
  echo "refused, nothing changed: ERR_STOP_CLIENT_ID: the client id given is not a client application id (a GUID: 8-4-4-4-12 hexadecimal digits, e.g. 0b9f3c52-1111-4222-8333-944455556666)" >&2
  exit 2
fi
# Entra writes application ids in lower case, and the Partners rows are keyed by them as written.
client="${client,,}"

here="$(dirname "$0")"
target="$(bash "$here/target.sh" "$env")"
account="$(sed -n 's/^storageAccountName=//p' <<<"$target")"
# The tables' names and the runner group, from the environment's files (for the messages below).
read -r partners stops group < <(node -e '
  const fs = require("node:fs");
  const [parametersFile, pipelineFile] = process.argv.slice(1);
  const p = JSON.parse(fs.readFileSync(parametersFile, "utf8")).parameters;
  const name = (parameter, fallback) => (p[parameter] === undefined ? fallback : p[parameter].value);
  const group = JSON.parse(fs.readFileSync(pipelineFile, "utf8")).privateRunnerGroup || "-";
  console.log(`${name("partnersTableName", "Partners")} ${name("stoppedClientsTableName", "StoppedClients")} ${group}`);
' "$here/../infra/env/${env}.parameters.json" "$here/../infra/env/${env}.pipeline.json")

echo "stopping client ${client} in ${env}: ${account}, table ${stops}"
error="$(mktemp)"
trap 'rm -f "$error"' EXIT
explain() {
  cat "$error" >&2
  if grep -q 'AuthorizationFailure' "$error"; then
    if [ "$group" != "-" ]; then
      echo "  ${account} answers only inside ${env}'s network: run the stop-client workflow, whose job runs on the runner group ${group} (privateRunnerGroup of infra/env/${env}.pipeline.json)" >&2
    fi
  elif grep -q 'AuthorizationPermissionMismatch' "$error"; then
    echo "  is this the stop identity, granted the stop list and a read of the Partners table (the deployment grants stopPrincipalId of infra/env/${env}.pipeline.json)?" >&2
  fi
}
if ! row="$(az storage entity show --auth-mode login --account-name "$account" --table-name "$partners" \
  --partition-key "$client" --row-key "" --output json 2>"$error")"; then
  if grep -q 'ResourceNotFound' "$error"; then
    echo "refused, nothing changed: ERR_STOP_NO_ROW: client ${client} has no Partners row in ${env}: it is no partner's client here (check the id and the environment); nothing is written" >&2
    exit 1
  fi
  explain
  echo "the Partners row of ${client} could not be read; nothing changed" >&2
  exit 1
fi
# The partner id last: it may hold spaces.
partner="$(node -e 'console.log(JSON.parse(process.argv[1]).PartnerId ?? "-")' "$row")"

# Who stopped it, for the lift: the workflow run, or a person's local run.
stop_id="${GITHUB_RUN_ID:-local-$(date -u +%Y%m%d%H%M%S)}"
if ! az storage entity insert --auth-mode login --account-name "$account" --table-name "$stops" --if-exists fail \
  --entity PartitionKey="$client" RowKey="" StopId="$stop_id" StoppedBy="${GITHUB_ACTOR:-${USER:-unknown}}" \
  StoppedAt="$(date -u +%Y-%m-%dT%H:%M:%SZ)" StoppedAt@odata.type=Edm.DateTime --output none 2>"$error"; then
  if grep -q 'EntityAlreadyExists' "$error"; then
    echo "already stopped: client ${client} (partner ${partner}) is on the stop list of ${env}; nothing changed"
    exit 0
  fi
  explain
  echo "client ${client} was not stopped; nothing changed" >&2
  exit 1
fi

echo "stopped: client ${client} (partner ${partner}) in ${env}: on the stop list as stop ${stop_id}"
echo "  its tokens are refused (401 ERR_AUTH_STOPPED_CLIENT) within 5 minutes, tokens already issued included"
echo "  a deployment does not undo it; to lift it, a reviewed change adds \"liftStop\": \"${stop_id}\""
echo "  to client ${client}'s entry in infra/env/${env}.parameters.json (docs/deploy.md, section 7)"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    echo "### Client ${client} stopped in ${env}"
    echo
    echo "Partner \`${partner}\`: on the stop list of \`${account}\`/\`${stops}\` as stop \`${stop_id}\`. Its tokens are refused within 5 minutes."
    echo
    echo "A deployment does not undo it. **To lift it**, a reviewed change adds \`\"liftStop\": \"${stop_id}\"\` to this client's entry in \`infra/env/${env}.parameters.json\`."
  } >>"$GITHUB_STEP_SUMMARY"
fi
