#!/usr/bin/env bash
# The engine's symmetry reduction against the full simulation on a shipped
# example: `shardsim simulate` with every device (--set
# simulator.symmetry=false) and with one device per orbit give the same
# step time and breakdown to 1e-9, with the replica shortcut off in both.
#   symmetry_matches_full.sh SHARDSIM SCENARIO
set -euo pipefail
bin=$1 scenario=$2
common=(simulate "$scenario" --json --no-timing --replica-shortcut off --critical-path off)
fast=$("$bin" "${common[@]}")
full=$("$bin" "${common[@]}" --set simulator.symmetry=false)
python3 - "$fast" "$full" <<'PY'
import json, sys
fast, full = json.loads(sys.argv[1]), json.loads(sys.argv[2])
t = full["step_time_s"]
pairs = [("step_time_s", fast["step_time_s"], t)]
pairs += [("breakdown." + k, fast["breakdown"][k], v) for k, v in full["breakdown"].items()]
bad = [(k, a, b) for k, a, b in pairs if abs(a - b) > 1e-9 * t]
print(f'symmetry: {fast["sim"]["symmetry"]}; {fast["sim"]["simulated_devices"]} of '
      f'{full["sim"]["simulated_devices"]} devices run; step {fast["step_time_s"]!r} vs {t!r}')
if full["sim"]["symmetry"] != "" or full["sim"]["simulated_devices"] != full["devices"]:
    sys.exit("the full run did not run every device")
if bad:
    sys.exit("symmetric and full runs differ: " + ", ".join(f"{k} {a!r} != {b!r}" for k, a, b in bad))
PY
