#!/usr/bin/env bash
# The critical path of a measured run (shardsim run --json and --trace): a
# two-stage pipeline on two MPI ranks. The path's categories sum to its
# length, it crosses both stages, its length is the traced step's end (to
# the ranks' clock skew), and the trace carries the path as a process.
#   measured_critical_path.sh SHARDSIM SCENARIO WORKDIR
set -euo pipefail
bin=$1 scenario=$2 work=$3
mkdir -p "$work"
"$bin" run "$scenario" --ranks 2 --steps 1 --warmup 0 --timeout-s 60 --json --trace "$work/path.trace.json" \
  > "$work/path.run.json"
python3 - "$work/path.run.json" "$work/path.trace.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
cp = run["critical_path"]
assert "length_s" in cp, cp
total = sum(c["s"] for c in cp["by_category_s"])
assert abs(total - cp["length_s"]) <= 1e-9 * max(1.0, cp["length_s"]), (total, cp["length_s"])
assert cp["devices"] == 2, cp["devices"]  # the path runs through both stages
assert any(c["category"].endswith(": transfer") for c in cp["by_category_s"]), cp["by_category_s"]
step = run["step_times_s"][0]
assert abs(cp["length_s"] - step) <= 0.05 * step, (cp["length_s"], step)
trace = json.load(open(sys.argv[2]))["traceEvents"]
names = [e for e in trace if e.get("ph") == "M" and e["args"].get("name") == "critical path"]
assert len(names) == 1, names
pid = names[0]["pid"]
slices = [e for e in trace if e.get("ph") == "X" and e["pid"] == pid]
assert len(slices) == cp["ops"], (len(slices), cp["ops"])
assert any(e.get("args", {}).get("critical_path") for e in trace if e.get("ph") == "X" and e["pid"] != pid)
print("measured critical path: %.4f s over %d ops on %d ranks" % (cp["length_s"], cp["ops"], cp["devices"]))
PY
