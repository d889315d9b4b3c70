#!/usr/bin/env bash
# Installs what is missing, builds powerctl into build/, and runs its main job on the
# embedded defaults: simulating power-aware placement on the bundled demo cluster (24 nodes of
# four server generations) against kube-scheduler's default scoring and two published peers.
# Safe to re-run: installed packages and an up-to-date build are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> [1/3] dependencies"
packaging/install-deps.sh --build-only

echo "==> [2/3] build (build/powerctl)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOWERCTL_BUILD_TESTS=OFF \
  -DPOWERCTL_UNITY_BUILD=ON >/dev/null
cmake --build build --target powerctl

echo "==> [3/3] powerctl simulate (bundled demo cluster, built-in model)"
build/powerctl simulate --report build/simulate.html
echo "==> report: $(pwd)/build/simulate.html; next: build/powerctl generate all renders the setup"
