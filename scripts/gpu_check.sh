#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine (one GPU is enough), from a
# bundle made by scripts/gpu_bundle.sh, run as root in a checkout of the
# commit the bundle was built from:
#
#   scripts/gpu_check.sh BUNDLE.tar.xz RESULTS_DIR CHIP
#
# CHIP names the GPU's preset (h100, h200, ...): the profile is written as
# RESULTS_DIR/CHIP-cuda.profile.json.
#
# 1. the unit test of the kernels against the CPU references, a one-GPU run
#    with --verify in bf16 and in fp8;
# 2. `shardsim calibrate --backend cuda` -> RESULTS_DIR/CHIP-cuda.profile.json;
# 3. every variant of examples/validation/realexec/variants.json run for real
#    (5 steps after 2 warm-up) -> RESULTS_DIR/measured/NAME.run.json, and its
#    simulation with that profile, compared.
# examples/validation/realexec/make_scenarios.py RESULTS_DIR CHIP SPLIT turns
# RESULTS_DIR into the validation rows. Each step reports its exit status and the run goes on.
set -u
if [ $# -ne 3 ] || [ ! -f "$1" ] || [[ ! "$3" =~ ^[a-z0-9-]+$ ]]; then
  echo "usage: scripts/gpu_check.sh BUNDLE.tar.xz RESULTS_DIR CHIP (CHIP: lower case, e.g. h100)" >&2
  exit 2
fi
bundle=$(realpath "$1")
results=$2
chip=$3
cd "$(dirname "$0")/.."
mkdir -p "$results/measured"
results=$(realpath "$results")
step() { echo; echo "=== $* ($(date +%T))"; }
# mpirun's log of a failed run (the launcher names it), then forget it.
mpirun_logs() { for f in "${TMPDIR:-/tmp}"/shardsim-run-*/mpirun.log; do [ -f "$f" ] && tail -20 "$f" && rm -f "$f"; done; }

b=$(mktemp -d)
tar -xJf "$bundle" -C "$b" || { echo "gpu_check.sh: cannot unpack $bundle" >&2; exit 2; }
# The machine's own Open MPI / PMIx plugins (another build) would be loaded
# by the bundle's libmpi: replace them by the bundle's.
rm -rf /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi /usr/share/pmix /etc/openmpi
cp -a "$b/root/." / || { echo "gpu_check.sh: cannot install Open MPI's runtime" >&2; exit 2; }
cuda_dirs=""
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  p=$(find /usr/local /usr/lib -name "$lib" 2>/dev/null | head -1)
  [ -n "$p" ] || { echo "gpu_check.sh: $lib not found under /usr/local or /usr/lib" >&2; exit 2; }
  cuda_dirs="$cuda_dirs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="$b/lib$cuda_dirs" PATH="$b/bin:$PATH"
# One node: shared memory only (no network transports to probe).
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_mca_base_component_show_load_errors=0
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv,noheader

step probe
shardsim-cuda-probe; echo "rc $?"
step unit test
timeout 180 shardsim_cuda_tests; echo "rc $?"
step verify bf16
timeout 150 shardsim run examples/realexec/tiny-gpt-cpu2.json --backend cuda --set cluster.devices=1 --set plan.dp=1 \
  --set plan.global_batch=2 --steps 1 --warmup 0 --verify --timeout-s 120
echo "rc $?"; mpirun_logs
step verify fp8
timeout 150 shardsim run examples/validation/realexec/base.json --backend cuda --set plan.matmul_dtype=fp8 \
  --set model.layers=2 --set plan.global_batch=2 --steps 1 --warmup 0 --verify --timeout-s 120
echo "rc $?"; mpirun_logs
step calibrate
profile="$results/$chip-cuda.profile.json"
timeout 200 shardsim calibrate --backend cuda --ranks 1 --out "$profile" --timeout-s 180
echo "rc $?"; mpirun_logs

variants=examples/validation/realexec/variants.json
for name in $(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['variants']))" "$variants"); do
  mapfile -t sets < <(python3 -c "
import json, sys
for k, v in json.load(open(sys.argv[1]))['variants'][sys.argv[2]].items():
    print('--set'); print(k + '=' + (v if isinstance(v, str) else json.dumps(v)))" "$variants" "$name")
  step "variant $name: ${sets[*]}"
  timeout 200 shardsim run examples/validation/realexec/base.json --backend cuda --ranks 1 --steps 5 --warmup 2 \
    --json --timeout-s 180 "${sets[@]}" > "$results/measured/$name.run.json"
  echo "rc $?"; mpirun_logs
  shardsim simulate examples/validation/realexec/base.json --json --no-timing --set "cluster.calibration=$profile" \
    "${sets[@]}" > "$results/measured/$name.sim.json" &&
    shardsim compare "$results/measured/$name.sim.json" "$results/measured/$name.run.json" | head -1
done
step done
