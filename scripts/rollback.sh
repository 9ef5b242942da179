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
# Run it from a clean checkout of main as GitHub has it (git fetch && git switch --detach origin/main):
# the checker it runs is this checkout's, so any other commit, or local changes, are refused.
# Needs git, the GitHub CLI (gh auth login; gh repo view, or GH_REPO, must name the repository
# infra/env/<env>.pipeline.json pins), Node.js, and the Azure CLI signed in as for scripts/deploy.sh.
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
  echo "the run id is a number (gh run list -w deploy.yml -b main -e push -s success)" >&2
  exit 2
}
steps=(--code-only)
[ "${3:-}" = "--with-infrastructure" ] && steps=()
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
refuse() {
  echo "refused before run $run is read; nothing of it is downloaded or deployed:" >&2
  printf '  %s\n' "$@" >&2
  exit 1
}
first_line() { sed -n '/[^[:space:]]/{p;q;}' "$1"; }
lower() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]'; }
# "This repository" is the one this environment's pipeline file pins, never just gh's default (a fork's
# clone, GH_REPO): a fork's own successful push to its main passes every other check.
pin_file="$root/infra/env/$env.pipeline.json"
pinned="$(node -e 'try { const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).githubRepository; if (typeof r === "string") process.stdout.write(r); } catch {}' "$pin_file")"
if [[ ! "$pinned" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ || "$pinned" == *REPLACE-WITH* ]]; then
  refuse "ERR_REPOSITORY_UNPINNED: $pin_file pins no repository: set \"githubRepository\" to the owner/name given to infra/bootstrap.bicep (docs/deploy.md, Bootstrap)"
fi
repository="$(gh repo view --json nameWithOwner | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).nameWithOwner)')"
if [ "$(lower "$repository")" != "$(lower "$pinned")" ]; then
  refuse "ERR_REPOSITORY_MISMATCH: asked from $repository (gh repo view: this clone's repository, or GH_REPO), but $pin_file pins $pinned: run it from a clone of $pinned, or with GH_REPO=$pinned"
fi
# The checker below is this checkout's: it must be the reviewed one, main as GitHub has it now, unchanged.
reasons=()
errors="$(mktemp)"
if changes="$(git -C "$root" status --porcelain --untracked-files=no 2>"$errors")" && [ -n "$changes" ]; then
  reasons+=("ERR_CHECKOUT_CHANGED: $root has local changes ($(printf '%s\n' "$changes" | cut -c4- | head -n 5 | paste -sd, -)): run the checker as main has it, not edited")
fi
head="$(git -C "$root" rev-parse --verify HEAD 2>"$errors")" || head="not a git checkout ($(first_line "$errors"))"
if main_json="$(gh api "repos/$pinned/branches/main" 2>"$errors")"; then
  main="$(printf '%s' "$main_json" | node -e 'const b = JSON.parse(require("fs").readFileSync(0, "utf8")); process.stdout.write(String(b?.commit?.sha ?? "no commit"))')"
else
  main="unreadable: gh exited $? ($(first_line "$errors"))"
fi
rm -f "$errors"
if [ "$head" != "$main" ]; then
  reasons+=("ERR_CHECKOUT_NOT_MAIN: $root is at $head, not $pinned's main ($main): git fetch && git switch --detach <the remote of $pinned>/main")
fi
[ ${#reasons[@]} -eq 0 ] || refuse "${reasons[@]}"
# Refused before anything is downloaded: a pull request's or a fork's artifact must never run as the deployer.
node "$here/provenance.cjs" "$run" --environment "$env" --repository "$repository"
release="$(mktemp -d)"
gh run download "$run" --repo "$repository" --name draw-request-service --dir "$release"
echo "re-deploying run $run: $(cat "$release/build.json")"
bash "$release/scripts/deploy.sh" "$env" ${steps[@]+"${steps[@]}"} --package "$release/draw-request-service.zip" --yes
