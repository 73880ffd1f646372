#!/usr/bin/env bash
# Speed of the two network backends on the same scenarios: step time (they
# should agree), engine events, wall time of the whole command (the SimGrid
# figure includes starting its worker) and events per wall second.
#   bench/backend_bench.sh [path/to/shardsim] [scenario.json ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/cli/shardsim}
shift || true
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  scenarios=("$root/examples/llama3-8b-h100x64.json" "$root/examples/mixtral-8x7b-h100x64.json"
             "$root/examples/llama3-8b-tpu-v5e-256.json")
fi
field() { grep -o "\"$1\": [^,}]*" | head -1 | sed 's/.*: //; s/"//g'; }
printf '%-28s %-13s %12s %10s %9s %12s\n' scenario backend step_time_s events wall_s events/s
for s in "${scenarios[@]}"; do
  for backend in native simgrid; do
    start=$(date +%s.%N)
    out=$("$bin" simulate "$s" --backend "$backend" --json)
    end=$(date +%s.%N)
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
    events=$(echo "$out" | field events)
    printf '%-28s %-13s %12.6f %10d %9.3f %12.0f\n' "$(basename "$s" .json)" "$backend" \
      "$(echo "$out" | field step_time_s)" "$events" "$wall" "$(awk -v e="$events" -v w="$wall" 'BEGIN { print e / w }')"
  done
done
