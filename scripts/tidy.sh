#!/usr/bin/env bash
# clang-tidy over the project's C++ sources (library, command, rank programs,
# Python module, benchmarks, fuzzer) with the checks of .clang-tidy, every
# finding an error (docs/testing.md, Static analysis, says which checks and
# why). Uses the compile commands of a configured build directory.
#   scripts/tidy.sh [BUILD_DIR] [FILE...]     (default build/, every source)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tidy: $build/compile_commands.json is missing (configure first: scripts/build.sh)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  # The sources this build compiles (tests aside: gtest's macros trip the
  # checks, not our code), and the fuzzer, whose flags clang-tidy infers from
  # its neighbours. A part the build left out (the CUDA executor without
  # nvcc) is left out here too.
  mapfile -t files < <(python3 - "$build/compile_commands.json" <<'EOF'
import json, os, subprocess, sys
built = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for f in subprocess.run(["git", "ls-files", "*.cc"], capture_output=True, text=True, check=True).stdout.split():
    if f.startswith(("tests/", "realexec/cuda/")):
        continue
    if os.path.realpath(f) in built or f.startswith("fuzz/"):
        print(f)
EOF
  )
fi
# One clang-tidy per file, as many at once as there are cores; GCC-only
# warning flags in the compile commands are not errors to clang. The
# fuzzer's flags are borrowed from whichever built file clang-tidy finds
# nearest, which need not see the workloads headers it includes: those
# include directories are added to every file (harmless to the others).
# Compiler chatter (warning counts from system headers) is dropped; findings
# remain. xargs exits non-zero when any clang-tidy did.
includes=()
for part in core topology workloads interop; do includes+=("--extra-arg=-I$PWD/$part/include"); done
set +e
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option "${includes[@]}" 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$'
status=("${PIPESTATUS[@]}")
set -e
if [ "${status[1]}" != 0 ]; then
  echo "tidy: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
