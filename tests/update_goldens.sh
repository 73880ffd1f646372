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
# record EXPECTED COMMAND...: "exit N" then the command's stdout (exit 0)
# or its stderr (any other exit) into EXPECTED.
record() {
  local expected=$1 err rc out
  shift
  err=$(mktemp)
  set +e
  out=$("$@" 2>"$err")
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    printf 'exit %s\n%s\n' "$rc" "$out" > "$expected"
  else
    { printf 'exit %s\n' "$rc"; cat "$err"; } > "$expected"
  fi
  rm -f "$err"
}
for dir in commands simgrid; do
cd "$here/golden/$dir"
for f in *.args; do
  read -r -a argv < "$f"
  record "${f%.args}.expected" "$bin" "${argv[@]}"
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
  (cd "$work" && record "${case}expected" "$bin" simulate . --json --no-timing)
  rm -rf "$work"
done
echo "goldens regenerated with $bin"
