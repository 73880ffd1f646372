#!/usr/bin/env bash
# Predicted (shardsim simulate) against measured (shardsim run, 2 CPU ranks)
# step time of the tiny scenarios in examples/realexec. Each scenario runs
# RUNS times (default 5) with --steps 5; the figure is the median of the
# runs' medians (the machine is shared and noisy). With PROFILE (a file of
# shardsim calibrate, relative to examples/realexec) a second prediction uses
# it (cluster.calibration). docs/realexec.md records the output.
#   [PROFILE=profiles/cpu-host-2ranks.json] scripts/realexec-bench.sh [RUNS] [BUILD_DIR]
set -euo pipefail
runs=${1:-5}
build=${2:-build}
bin="$build/cli/shardsim"
here=$(cd "$(dirname "$0")/.." && pwd)
printf '%-22s %12s %8s %12s %8s %12s   %s\n' scenario predicted_s error calibrated_s error measured_s "run medians (s)"
for f in "$here"/examples/realexec/*.json; do
  pred=$("$bin" simulate "$f" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
  cal=0
  if [ -n "${PROFILE:-}" ]; then
    cal=$("$bin" simulate "$f" --set "cluster.calibration=$PROFILE" --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
  fi
  meds=()
  for _ in $(seq 1 "$runs"); do
    meds+=("$("$bin" run "$f" --steps 5 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')")
  done
  python3 - "$(basename "$f" .json)" "$pred" "$cal" "${meds[@]}" <<'PY'
import statistics, sys
name, pred, cal, meds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), [float(x) for x in sys.argv[4:]]
m = statistics.median(meds)
err = lambda p: f"{100 * (p - m) / m:+7.1f}%" if p > 0 else "      -"
print(f"{name:<22} {pred:12.4f} {err(pred)} {cal:12.4f} {err(cal)} {m:12.4f}   " + " ".join(f"{x:.4f}" for x in meds))
PY
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
