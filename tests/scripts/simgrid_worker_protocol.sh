#!/usr/bin/env bash
# The SimGrid worker protocol, from the caller's side: a worker that dies, exits
# with an unexpected status, or writes a truncated, corrupt or empty result
# makes `shardsim simulate --backend simgrid` exit 1 with one line naming the
# worker and what went wrong, and write no trace; a worker that rejects its
# input (exit 2, its own line) passes that line and status through.
#   simgrid_worker_protocol.sh SHARDSIM REAL_WORKER SCENARIO WORKDIR
set -uo pipefail
bin=$1 real=$2 scenario=$3 work=$4
mkdir -p "$work"
fake="$work/fake-worker"
failures=0

# expect NAME WORKER_BODY STATUS REGEX: runs the command with a fake worker.
expect() {
  local name=$1 body=$2 want_rc=$3 want=$4
  printf '#!/usr/bin/env bash\n%s\n' "$body" >"$fake"
  chmod +x "$fake"
  rm -f "$work/trace.json"
  local err rc
  err=$(SHARDSIM_SIMGRID_WORKER="$fake" REAL_WORKER="$real" "$bin" simulate "$scenario" --backend simgrid \
    --trace "$work/trace.json" 2>&1 >/dev/null)
  rc=$?
  local lines
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ "$rc" != "$want_rc" ] || [ "$lines" != 1 ] || ! printf '%s\n' "$err" | grep -qE "$want" ||
    [ -e "$work/trace.json" ]; then
    echo "FAIL $name: exit $rc (want $want_rc), $lines lines (want 1), stderr: $err"
    failures=$((failures + 1))
  else
    echo "ok   $name: $err"
  fi
}

expect crash 'kill -SEGV $$' 1 '^shardsim: error: the SimGrid worker failed \(signal 11\)$'
expect exit_status 'exit 3' 1 '^shardsim: error: the SimGrid worker failed \(exit status 3\)$'
expect empty 'exit 0' 1 "^shardsim: error: the SimGrid worker's result is unreadable \(engine result: .*; 0 bytes\)$"
expect corrupt 'head -c 4096 /dev/zero' 1 \
  "^shardsim: error: the SimGrid worker's result is unreadable \(engine result: bad magic; 4096 bytes\)$"
expect truncated '"$REAL_WORKER" "$@" | head -c 200' 1 \
  "^shardsim: error: the SimGrid worker's result is unreadable \(engine result: truncated; 200 bytes\)$"
expect trailing '"$REAL_WORKER" "$@"; printf x' 1 \
  "^shardsim: error: the SimGrid worker's result is unreadable \(engine result: trailing bytes; [0-9]+ bytes\)$"
expect rejected 'echo "x.json: error: /plan/tp: the worker says no" >&2; exit 2' 2 \
  '^x.json: error: /plan/tp: the worker says no$'
# And the real worker, through the same path, succeeds.
if ! SHARDSIM_SIMGRID_WORKER="$real" "$bin" simulate "$scenario" --backend simgrid --json >/dev/null; then
  echo "FAIL real worker"
  failures=$((failures + 1))
fi
exit $((failures > 0))
