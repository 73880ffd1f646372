#!/usr/bin/env bash
# Packs what `shardsim run --backend cuda` and `shardsim calibrate --backend
# cuda` need on a GPU machine that has a CUDA 13 driver and libraries but not
# this project's Debian packages (a rented or lent GPU box): the executables
# of BUILD, every shared library they and Open MPI's runtime load except
# glibc, libstdc++ and CUDA's own (the GPU machine's are used), and Open MPI
# 4.1's launcher, plugins and help files at their Debian paths.
#
#   scripts/gpu_bundle.sh [BUILD] [OUT.tar.xz]     (default build, gpu-bundle.tar.xz)
#
# On the GPU machine, as root, in a checkout of the same commit:
#   scripts/gpu_check.sh OUT.tar.xz RESULTS_DIR CHIP
# unpacks it (replacing that machine's own Open MPI and PMIx plugins, which
# a Debian-built libmpi cannot load) and runs the CUDA checks
# (docs/realexec.md, "Runs on a GPU"). Needs dpkg (Debian or Ubuntu here).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-gpu-bundle.tar.xz}
for exe in cli/shardsim cli/shardsim-rank-cuda cli/shardsim-cuda-probe tests/shardsim_cuda_tests; do
  [ -x "$build/$exe" ] || { echo "gpu_bundle.sh: $build/$exe not built (needs nvcc and NCCL)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/lib" "$work/root"
cp "$build/cli/shardsim" "$build/cli/shardsim-rank-cuda" "$build/cli/shardsim-cuda-probe" \
  "$build/tests/shardsim_cuda_tests" "$work/bin/"
# Open MPI's runtime (mpirun, orted, plugins, help texts, PMIx) at its paths.
dpkg -L openmpi-bin libopenmpi3 openmpi-common libpmix2 | sort -u | while read -r f; do
  { [ -f "$f" ] || [ -L "$f" ]; } || continue
  case "$f" in /usr/share/doc/* | /usr/share/man/* | */java/* | *libmpi_java* | */include/* | *.h) continue ;; esac
  mkdir -p "$work/root$(dirname "$f")"
  cp -a "$f" "$work/root$f"
done
ln -sf orterun "$work/root/usr/bin/mpirun"
# Every library those load, but the C library, the C++ runtime and CUDA's.
{
  ls "$work"/bin/*
  find "$work/root" -type f -name '*.so*'
  echo "$work/root/usr/bin/orted" "$work/root/usr/bin/orterun"
} | xargs -n1 ldd 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libnccl|libcuda|ld-linux[^/]*)\.so' |
  grep -v "^$work" | while read -r lib; do cp -L "$lib" "$work/lib/"; done
tar -C "$work" -cf - bin lib root | xz -T2 -6 > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(du -h "$out" | cut -f1)"
