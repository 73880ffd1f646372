#!/usr/bin/env bash
# Regenerates tests/golden/*/*.expected from the current build. Review the
# diff like code before committing it.
#   tests/update_goldens.sh [path/to/shardsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/cli/shardsim}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
cd "$here/golden/scenarios"
for f in *.json; do
  "$bin" simulate "$f" --json --no-timing > "${f%.json}.expected"
done
for dir in errors bounds; do
cd "$here/golden/$dir"
for f in *.json; do
  set +e
  "$bin" simulate "$f" --json 2> "${f%.json}.expected" > /dev/null
  rc=$?
  set -e
  if [ "$rc" -ne 2 ]; then echo "error case $f exited $rc, expected 2" >&2; exit 1; fi
done
done
for dir in commands simgrid; do
cd "$here/golden/$dir"
for f in *.args; do
  read -r -a argv < "$f"
  set +e
  out=$("$bin" "${argv[@]}" 2>/tmp/shardsim_golden_err.$$)
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    printf 'exit %s\n%s\n' "$rc" "$out" > "${f%.args}.expected"
  else
    { printf 'exit %s\n' "$rc"; cat /tmp/shardsim_golden_err.$$; } > "${f%.args}.expected"
  fi
  rm -f /tmp/shardsim_golden_err.$$
done
done
# Hand-written Chakra traces: packed into a scratch directory and simulated
# there, as tests/golden/run_golden.cmake does.
for case in "$here"/golden/chakra/*/; do
  work=$(mktemp -d)
  for t in "$case"*.txt; do
    "$bin" chakra pack "$t" --out "$work/$(basename "${t%.txt}").et"
  done
  for extra in scenario.json comm_groups.json; do
    if [ -f "$case$extra" ]; then cp "$case$extra" "$work/"; fi
  done
  set +e
  out=$(cd "$work" && "$bin" simulate . --json --no-timing 2>/tmp/shardsim_golden_err.$$)
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    printf 'exit %s\n%s\n' "$rc" "$out" > "${case}expected"
  else
    { printf 'exit %s\n' "$rc"; cat /tmp/shardsim_golden_err.$$; } > "${case}expected"
  fi
  rm -rf "$work" /tmp/shardsim_golden_err.$$
done
echo "goldens regenerated with $bin"
