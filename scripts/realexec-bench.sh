#!/usr/bin/env bash
# Predicted (shardsim simulate) against measured (shardsim run, 2 CPU ranks)
# step time of the tiny scenarios in examples/realexec. Each scenario runs
# RUNS times (default 5) with --steps 5; the figure is the median of the
# runs' medians (the machine is shared and noisy). docs/realexec.md records
# the output.
#   scripts/realexec-bench.sh [RUNS] [BUILD_DIR]
set -euo pipefail
runs=${1:-5}
build=${2:-build}
bin="$build/cli/shardsim"
here=$(cd "$(dirname "$0")/.." && pwd)
printf '%-22s %12s %12s %8s   %s\n' scenario predicted_s measured_s error "run medians (s)"
for f in "$here"/examples/realexec/*.json; do
  pred=$("$bin" simulate "$f" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
  meds=()
  for _ in $(seq 1 "$runs"); do
    meds+=("$("$bin" run "$f" --steps 5 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')")
  done
  python3 - "$(basename "$f" .json)" "$pred" "${meds[@]}" <<'PY'
import statistics, sys
name, pred, meds = sys.argv[1], float(sys.argv[2]), [float(x) for x in sys.argv[3:]]
m = statistics.median(meds)
print(f"{name:<22} {pred:12.4f} {m:12.4f} {100 * (pred - m) / m:+7.1f}%   " + " ".join(f"{x:.4f}" for x in meds))
PY
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
