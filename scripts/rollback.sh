#!/usr/bin/env bash
# Re-deploys the code of an earlier pipeline run to one environment: the same artifact that run built
# and tested (Flex Consumption has no deployment slots; this is the way back). The artifact's own
# scripts/deploy.sh runs, so the steps are the ones that artifact was built with.
#
# Usage: scripts/rollback.sh <dev|prod> <run id> [--with-infrastructure]
#   <run id>               a run of .github/workflows/deploy.yml on main (gh run list -w deploy.yml -b main)
#   --with-infrastructure  also re-deploy that run's infra/ and Partners rows (partners added or changed
#                          since come back as that run had them: read docs/deploy.md, Rollback, first)
# Needs the GitHub CLI (gh auth login) and the Azure CLI signed in as for scripts/deploy.sh.
# The pipeline's workflow_dispatch does the same without a person's credentials.
set -euo pipefail
env="${1:-}"
run="${2:-}"
case "$env" in dev | prod) ;; *)
  sed -n '/^# Usage:/,/^# Needs/p' "$0" >&2
  exit 2
  ;;
esac
[[ "$run" =~ ^[0-9]+$ ]] || {
  echo "the run id is a number (gh run list -w deploy.yml -b main)" >&2
  exit 2
}
steps=(--code-only)
[ "${3:-}" = "--with-infrastructure" ] && steps=()
release="$(mktemp -d)"
gh run download "$run" --name draw-request-service --dir "$release"
echo "re-deploying run $run: $(cat "$release/build.json")"
bash "$release/scripts/deploy.sh" "$env" ${steps[@]+"${steps[@]}"} --package "$release/draw-request-service.zip" --yes
