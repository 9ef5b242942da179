#!/usr/bin/env bash
# Re-deploys the code of an earlier pipeline run to one environment: the same artifact that run built
# and tested (Flex Consumption has no deployment slots; this is the way back). The artifact's own
# scripts/deploy.sh runs, so the steps are the ones that artifact was built with; that is why the run
# must first be proven a release (scripts/provenance.cjs), exactly as the pipeline does.
#
# Usage: scripts/rollback.sh <dev|prod> <run id> [--with-infrastructure]
#   <run id>               a successful run of .github/workflows/deploy.yml for a push to main
#                          (gh run list -w deploy.yml -b main -e push -s success)
#   --with-infrastructure  also re-deploy that run's infra/ and Partners rows (partners added or changed
#                          since come back as that run had them: read docs/deploy.md, Rollback, first)
# Needs the GitHub CLI (gh auth login; the repository is the checkout's, or GH_REPO), Node.js, and the
# Azure CLI signed in as for scripts/deploy.sh. The pipeline's workflow_dispatch does the same without
# a person's credentials.
set -euo pipefail
env="${1:-}"
run="${2:-}"
case "$env" in dev | prod) ;; *)
  sed -n '/^# Usage:/,/^# Needs/p' "$0" >&2
  exit 2
  ;;
esac
[[ "$run" =~ ^[0-9]+$ ]] || {
  echo "the run id is a number (gh run list -w deploy.yml -b main -e push -s success)" >&2
  exit 2
}
steps=(--code-only)
[ "${3:-}" = "--with-infrastructure" ] && steps=()
here="$(cd "$(dirname "$0")" && pwd)"
repository="$(gh repo view --json nameWithOwner | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).nameWithOwner)')"
# Refused before anything is downloaded: a pull request's artifact must never run as the deployer.
node "$here/provenance.cjs" "$run" --repository "$repository"
release="$(mktemp -d)"
gh run download "$run" --repo "$repository" --name draw-request-service --dir "$release"
echo "re-deploying run $run: $(cat "$release/build.json")"
bash "$release/scripts/deploy.sh" "$env" ${steps[@]+"${steps[@]}"} --package "$release/draw-request-service.zip" --yes
