#!/usr/bin/env bash
# Installs every build and test dependency, builds powerctl and its tests with warnings
# as errors, builds (or reuses) Kubernetes v1.20.2 from Debian's source package, and runs
# the whole suite with ctest: unit, integration and end-to-end against real components.
# Safe to re-run: each step skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "==> [1/4] dependencies"
packaging/install-deps.sh

echo "==> [2/4] build (build/, warnings as errors)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOWERCTL_BUILD_TESTS=ON \
  -DPOWERCTL_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build

echo "==> [3/4] Kubernetes v1.20.2 binaries for the end-to-end tests"
tests/e2e/build-kubernetes.sh >/dev/null

echo "==> [4/4] tests"
cd build
ctest --output-on-failure --timeout 900 -j "$jobs"
