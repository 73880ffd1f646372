#!/usr/bin/env bash
# An interrupted run never leaves a truncated file under the real name:
# start `shardsim simulate --trace` with a large trace, kill it (SIGKILL)
# while the temporary file is being written, and check that the real name
# is absent or holds a complete trace. Repeats until one kill landed
# mid-write (or gives up after 40 tries, which fails the test).
#   interrupted_write.sh SHARDSIM SCENARIO WORKDIR
set -u
bin=$1 scenario=$2 work=$3
mkdir -p "$work"
trace="$work/interrupted.trace.json"
caught=0
for try in $(seq 1 40); do
  rm -f "$trace" "$trace".tmp.*
  "$bin" simulate "$scenario" --trace "$trace" --trace-devices 0-63 >/dev/null 2>&1 &
  pid=$!
  # Wait for the temporary file to appear, then kill at once (as long as
  # the writer lives: under the sanitizers its simulation alone takes
  # seconds).
  while kill -0 "$pid" 2>/dev/null; do
    if compgen -G "$trace.tmp.*" >/dev/null; then
      kill -9 "$pid" 2>/dev/null && caught=1
      break
    fi
  done
  wait "$pid" 2>/dev/null
  if [ -e "$trace" ]; then
    # Whatever exists under the real name must be complete.
    tail -c 4 "$trace" | grep -q ']}' || { echo "truncated trace under the real name (try $try)"; exit 1; }
  fi
  # Caught with nothing under the real name: the kill landed mid-write. (A
  # complete file means the rename won the race; try again.)
  if [ "$caught" = 1 ] && [ ! -e "$trace" ]; then
    echo "killed mid-write on try $try: no file under the real name"
    rm -f "$trace".tmp.*
    exit 0
  fi
  caught=0
done
echo "never caught the writer mid-write in 40 tries"
exit 1
