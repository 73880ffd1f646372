#!/usr/bin/env bash
# clang-tidy over the project's C++ sources (library, command, rank programs,
# Python module, benchmarks, fuzzer) with the checks of .clang-tidy, every
# finding an error (docs/testing.md, Static analysis, says which checks and
# why). Uses the compile commands of a configured build directory.
#   scripts/tidy.sh [BUILD_DIR]            every source, in batches (CI)
#   scripts/tidy.sh BUILD_DIR FILE...      the named files, one by one
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tidy: $build/compile_commands.json is missing (configure first: scripts/build.sh)" >&2
  exit 2
fi
# The fuzzers' flags are borrowed from a built file, which need not see the
# headers they include: those include directories are added to every file
# (harmless to the others).
includes=()
for part in core topology workloads interop; do includes+=("--extra-arg=-I$PWD/$part/include"); done
db=$build
if [ $# -gt 0 ]; then
  files=("$@")
  checks=()
else
  # The sources this build compiles (tests aside: gtest's macros trip the
  # checks, not our code), and the fuzzers. A part the build
  # left out (the CUDA executor without nvcc) is left out here too.
  # Parsing dominates (a file that includes Boost.Graph's algorithms takes
  # 15 s), so the sources of one target are checked as batches of 16, one
  # file that includes them, like the clang build's unity batches (same
  # order, same size: two files of a target that define one internal name
  # would already fail that build). The batches and their compile commands
  # (the first member's) go to BUILD_DIR/tidy/. Findings in the included
  # files are reported through .clang-tidy's header filter, which covers
  # every source folder; the include of a .cc file is the point here, so
  # bugprone-suspicious-include is off for the batches.
  db=$build/tidy
  rm -rf "$db"
  mkdir -p "$db"
  mapfile -t files < <(python3 - "$build/compile_commands.json" "$db" <<'EOF'
import json, os, re, shlex, subprocess, sys
entries, out = json.load(open(sys.argv[1])), sys.argv[2]
tracked = subprocess.run(["git", "ls-files", "*.cc"], capture_output=True, text=True, check=True).stdout.split()
wanted = {os.path.realpath(f) for f in tracked if not f.startswith(("tests/", "realexec/cuda/"))}
# A unity build (scripts/build.sh) lists its batches, not its sources: each
# batch file's includes are its sources, in order, with its command.
def target_of(e):
    m = re.search(r"-o (\S+?\.dir)/", e["command"])
    return m.group(1) if m else ""
def unity_index(e):
    m = re.search(r"/Unity/unity_(\d+)_cxx\.cxx$", e["file"])
    return int(m.group(1)) if m else -1
sources = []
for e in sorted(entries, key=lambda e: (target_of(e), unity_index(e))):
    if unity_index(e) < 0:
        sources.append(e)
        continue
    for f in re.findall(r'^#include "([^"]+)"', open(e["file"]).read(), re.M):
        sources.append(dict(e, file=f, command=e["command"].replace(e["file"], f)))
targets = {}  # target object folder -> [entry], in the build's order
for e in sources:
    if os.path.realpath(e["file"]) not in wanted:
        continue
    targets.setdefault((e["directory"], target_of(e)), []).append(e)
batches = []
for (directory, target), members in targets.items():
    for i in range(0, len(members), 16):
        group = members[i:i + 16]
        name = os.path.join(out, f"{target.replace('/', '_')}_{i // 16}.cc")
        with open(name, "w") as f:
            for m in group:
                f.write(f'#include "{os.path.realpath(m["file"])}"\n')
        command = group[0]["command"].replace(group[0]["file"], name)
        batches.append({"directory": directory, "command": command, "file": name})
# The fuzzers are not in the build: one by one, with the flags of the last
# batch (the extra include directories above make up the rest).
for f in tracked:
    if f.startswith("fuzz/"):
        name = os.path.realpath(f)
        batches.append({"directory": batches[-1]["directory"], "file": name,
                        "command": batches[-1]["command"].replace(batches[-1]["file"], name)})
json.dump(batches, open(os.path.join(out, "compile_commands.json"), "w"), indent=1)
for b in batches:
    print(b["file"])
EOF
  )
  checks=(--checks=-bugprone-suspicious-include)
fi
# One clang-tidy per file, as many at once as there are cores; GCC-only
# warning flags in the compile commands are not errors to clang. Compiler
# chatter (warning counts from system headers) is dropped; findings remain.
# xargs exits non-zero when any clang-tidy did.
set +e
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$db" --quiet "${checks[@]}" --extra-arg=-Wno-unknown-warning-option "${includes[@]}" 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$'
status=("${PIPESTATUS[@]}")
set -e
if [ "${status[1]}" != 0 ]; then
  echo "tidy: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
