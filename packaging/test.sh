#!/usr/bin/env bash
# Installs every build and test dependency, builds powerctl and its tests with warnings
# as errors, builds the libFuzzer targets with clang (build-fuzz/, ASan + UBSan), builds (or
# reuses) Kubernetes v1.20.2 from Debian's source package, and runs the whole suite with
# ctest: unit, integration and end-to-end against real components, then a replay of the
# committed fuzz corpora (ctest -L fuzz in build-fuzz/; the long fuzzing runs are
# tests/fuzz/run.sh). Safe to re-run: each step skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "==> [1/5] dependencies"
packaging/install-deps.sh

echo "==> [2/5] build (build/, warnings as errors)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOWERCTL_BUILD_TESTS=ON \
  -DPOWERCTL_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build

echo "==> [3/5] fuzz targets (build-fuzz/, clang with libFuzzer, ASan and UBSan)"
launcher=()  # the fuzz build compiles core a second time: use ccache when it is installed
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DPOWERCTL_BUILD_FUZZ=ON \
  -DPOWERCTL_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz --target powerctl_fuzzers

echo "==> [4/5] Kubernetes v1.20.2 binaries for the end-to-end tests"
tests/e2e/build-kubernetes.sh >/dev/null

echo "==> [5/5] tests"
status=0
ctest --test-dir build --output-on-failure --timeout 900 -j "$jobs" || status=1
echo "==> [5/5] tests: replay of the committed fuzz corpora (build-fuzz/, label fuzz)"
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j "$jobs" || status=1
exit "$status"
