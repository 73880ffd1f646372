#!/usr/bin/env bash
# Failure injection in a real run (issue 8, item 5): one rank is killed, or
# delayed past the timeout, mid-step; or shardsim itself gets SIGINT (a
# Ctrl-C) while a rank hangs. The run must end within the timeout (plus a
# small grace), exit 1 with one line naming the rank (or the interruption),
# leave no rank process behind, and write no trace under the real name.
#   realexec_fault.sh SHARDSIM SCENARIO WORKDIR kill|delay|interrupt
set -u
bin=$1 scenario=$2 work=$3 mode=$4
mkdir -p "$work"
trace="$work/fault-$mode.trace.json"
rm -f "$trace" "$trace".tmp.*
timeout_s=4
if [ "$mode" = kill ]; then
  export SHARDSIM_FAULT="kill:rank=1:op=10"
  want='rank 1 died'
elif [ "$mode" = delay ]; then
  export SHARDSIM_FAULT="delay:rank=1:op=10:s=60"
  want='timed out after 4 s: rank 1 '
else
  export SHARDSIM_FAULT="delay:rank=1:op=10:s=60"
  want='interrupted by signal 2'
fi
start=$(date +%s.%N)
if [ "$mode" = interrupt ]; then
  "$bin" run "$scenario" --ranks 2 --steps 1 --timeout-s 60 --trace "$trace" 2>"$work/interrupt.err" >/dev/null &
  pid=$!
  sleep 2
  kill -INT $pid
  wait $pid
  rc=$?
  err=$(cat "$work/interrupt.err")
else
  err=$("$bin" run "$scenario" --ranks 2 --steps 1 --timeout-s $timeout_s --trace "$trace" 2>&1 >/dev/null)
  rc=$?
fi
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "exit $rc after $elapsed s: $err"
fail=0
[ "$rc" = 1 ] || { echo "FAIL: expected exit 1"; fail=1; }
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || { echo "FAIL: expected one line"; fail=1; }
printf '%s' "$err" | grep -q "$want" || { echo "FAIL: expected \"$want\""; fail=1; }
# Timeout + 2 s for the SIGTERM grace + 3 s for process start on a busy machine.
awk -v e="$elapsed" -v t=$timeout_s 'BEGIN { exit !(e < t + 5) }' || { echo "FAIL: took too long"; fail=1; }
if compgen -G "$trace*" >/dev/null; then echo "FAIL: a trace file was written"; fail=1; fi
sleep 0.2
if pgrep -f "shardsim-rank $scenario" >/dev/null; then
  echo "FAIL: stray rank processes:"; pgrep -fa shardsim-rank; fail=1
fi
exit $fail
