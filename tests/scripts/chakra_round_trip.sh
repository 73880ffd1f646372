#!/usr/bin/env bash
# Issue 18's bar on a shipped example: `shardsim export chakra` then
# `shardsim simulate DIR` gives the scenario's own step time (to 1e-9), MFU,
# tokens and peak memory; the directory is removed afterwards.
#   chakra_round_trip.sh SHARDSIM SCENARIO WORKDIR
set -euo pipefail
bin=$1 scenario=$2 work=$3
dir="$work/$(basename "$scenario" .json).chakra"
rm -rf "$dir"
mkdir -p "$work"
trap 'rm -rf "$dir"' EXIT
"$bin" export chakra "$scenario" --out "$dir"
direct=$("$bin" simulate "$scenario" --json --no-timing --critical-path off)
back=$("$bin" simulate "$dir" --json --no-timing --critical-path off)
python3 - "$direct" "$back" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
t = a["step_time_s"]
print(f'scenario {t!r} s, trace {b["step_time_s"]!r} s ({b["sim"]["simulated_devices"]} ranks run)')
bad = []
if abs(b["step_time_s"] - t) > 1e-9 * t:
    bad.append(f'step_time_s {b["step_time_s"]!r} != {t!r}')
if abs(b["mfu"] - a["mfu"]) > 1e-9:
    bad.append(f'mfu {b["mfu"]!r} != {a["mfu"]!r}')
for k in ("tokens_per_step", "model"):
    if b[k] != a[k]:
        bad.append(f"{k} {b[k]!r} != {a[k]!r}")
if b["memory"]["peak_bytes_per_device"] != a["memory"]["peak_bytes_per_device"]:
    bad.append("memory peak differs")
if bad:
    sys.exit("the exported trace simulates differently: " + ", ".join(bad))
PY
