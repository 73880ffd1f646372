#!/usr/bin/env bash
# Re-records examples/validation/accuracy.json, the accuracy record CTest
# holds every later run to (validate.accuracy). Run it only when a change
# is meant to move the validation figures, and say why in the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
./build/cli/shardsim validate examples/validation --record examples/validation/accuracy.json > /dev/null
# docs/validation.md's tables are made from the record (CTest docs.validation_tables).
python3 scripts/validation_tables.py --write
