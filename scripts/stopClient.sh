#!/usr/bin/env bash
# On-call's emergency stop of one client (docs/runbook.md, "Stop one client"): sets the client's Partners
# row inactive, so the service refuses its tokens (401 ERR_AUTH_INACTIVE_CLIENT) within 5 minutes, tokens
# already issued included. Run by the stop-client workflow (.github/workflows/stop-client.yml) as the
# environment's stop identity, on the environment's runner: inside its network when its storage is closed.
#
# It only ever writes Active=false: never true, never a delete, never a new row. A client id that is not
# a GUID is refused before any Azure call; one with no Partners row is refused and nothing is written. The
# merge carries If-Match: *, which Table storage applies to an existing row only: it never creates one
# (without it, a merge may be an Insert Or Merge).
# The account is the pipeline file's storageAccountName: the stop identity may read the Partners table
# and nothing else, so it cannot ask Azure where the table is.
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
# The table's name and the runner group, from the environment's files (for the messages below).
read -r table group < <(node -e '
  const fs = require("node:fs");
  const [parametersFile, pipelineFile] = process.argv.slice(1);
  const p = JSON.parse(fs.readFileSync(parametersFile, "utf8")).parameters;
  const group = JSON.parse(fs.readFileSync(pipelineFile, "utf8")).privateRunnerGroup || "-";
  console.log(`${p.partnersTableName === undefined ? "Partners" : p.partnersTableName.value} ${group}`);
' "$here/../infra/env/${env}.parameters.json" "$here/../infra/env/${env}.pipeline.json")

echo "stopping client ${client} in ${env}: ${account}, table ${table}"
error="$(mktemp)"
trap 'rm -f "$error"' EXIT
if ! row="$(az storage entity show --auth-mode login --account-name "$account" --table-name "$table" \
  --partition-key "$client" --row-key "" --output json 2>"$error")"; then
  if grep -q 'ResourceNotFound' "$error"; then
    echo "refused, nothing changed: ERR_STOP_NO_ROW: client ${client} has no Partners row in ${env}: it is no partner's client here (check the id and the environment); no row is created" >&2
    exit 1
  fi
  cat "$error" >&2
  echo "the Partners row of ${client} could not be read; nothing changed" >&2
  if grep -q 'AuthorizationFailure' "$error"; then
    if [ "$group" != "-" ]; then
      echo "  ${account} answers only inside ${env}'s network: run the stop-client workflow, whose job runs on the runner group ${group} (privateRunnerGroup of infra/env/${env}.pipeline.json)" >&2
    else
      echo "  is the stop identity granted the Partners table (the deployment grants stopPrincipalId of infra/env/${env}.pipeline.json)?" >&2
    fi
  fi
  exit 1
fi
# The partner id last: it may hold spaces.
read -r active partner < <(node -e '
  const row = JSON.parse(process.argv[1]);
  console.log(`${row.Active ?? "-"} ${row.PartnerId ?? "-"}`);
' "$row")

if ! az storage entity merge --auth-mode login --account-name "$account" --table-name "$table" --if-match '*' \
  --entity PartitionKey="$client" RowKey="" Active=false Active@odata.type=Edm.Boolean --output none; then
  echo "the Partners row of ${client} was not changed (removed since it was read, or refused): nothing is created; see the error above" >&2
  exit 1
fi

echo "stopped: client ${client} (partner ${partner}) in ${env}: Active ${active} -> false"
echo "  its tokens are refused (401 ERR_AUTH_INACTIVE_CLIENT) within 5 minutes, tokens already issued included"
echo "now commit \"active\": false for client ${client} in infra/env/${env}.parameters.json,"
echo "or the next deployment writes the row back as the file has it (docs/deploy.md, section 7)"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    echo "### Client ${client} stopped in ${env}"
    echo
    echo "Partner \`${partner}\`: \`Active\` ${active} → false in \`${account}\`/\`${table}\`. Its tokens are refused within 5 minutes."
    echo
    echo "**Now** commit \`\"active\": false\` for this client in \`infra/env/${env}.parameters.json\`, or the next deployment writes the row back."
  } >>"$GITHUB_STEP_SUMMARY"
fi
