#!/usr/bin/env bash
# Installs every Debian package shardsim needs to build, test and benchmark.
# Run as root on Debian 12 (or with sudo). Safe to run again.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config git ca-certificates \
  nlohmann-json3-dev libboost-graph-dev libsimgrid-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libopenmpi-dev openmpi-bin libopenblas-dev \
  libprotobuf-dev protobuf-compiler \
  clang clang-tidy libclang-rt-14-dev \
  python3 python3-dev python3-pybind11 python3-pytest python3-matplotlib python3-pandas >/dev/null
# Headless Chromium renders the HTML report in its test; that test skips
# without it, so a missing package is not fatal.
apt-get install -y -qq --no-install-recommends chromium >/dev/null ||
  echo "shardsim: chromium not installed; the report rendering test will be skipped"
echo "shardsim: dependencies installed"
