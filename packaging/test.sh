#!/usr/bin/env bash
# Installs every build and test dependency, builds powerctl and its tests once (gcc, unity
# batches, warnings as errors) while Kubernetes v1.20.2 is built from Debian's source package
# beside it (or reused from its cache), and runs the whole suite with ctest: unit, integration,
# end-to-end against real components, and a replay of the committed fuzz corpora under
# valgrind's memcheck (label fuzz; the sanitized libFuzzer build is tests/fuzz/run.sh). Prints
# each phase's time, and fails when the tests or the whole run pass their budget
# (docs/install.md#build-and-test-time), so growth shows before it reaches CI's limit.
# Safe to re-run: each step skips what is already done.
#
#   POWERCTL_TEST_BUDGET_MINUTES    the tests phase's budget (default 15)
#   POWERCTL_TOTAL_BUDGET_MINUTES   the whole run's budget (default 45)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
test_budget=${POWERCTL_TEST_BUDGET_MINUTES:-15}
total_budget=${POWERCTL_TOTAL_BUDGET_MINUTES:-45}
started=$SECONDS
phase_started=$SECONDS
phases=()

# Ends the phase begun at $phase_started: records "name  m:ss" for the report at the end.
end_phase() {
  local took=$((SECONDS - phase_started))
  phases+=("$(printf '%-38s %3d:%02d' "$1" $((took / 60)) $((took % 60)))")
  phase_started=$SECONDS
}

echo "==> [1/4] dependencies"
packaging/install-deps.sh
end_phase dependencies

echo "==> [2/4] Kubernetes v1.20.2 binaries, in the background (log: build/kubernetes.log)"
mkdir -p build
rm -f build/kubernetes.seconds
(
  kube_started=$SECONDS
  tests/e2e/build-kubernetes.sh >/dev/null
  echo $((SECONDS - kube_started)) >build/kubernetes.seconds
) 2>build/kubernetes.log &
kube_pid=$!

echo "==> [3/4] build (build/, unity batches, warnings as errors)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOWERCTL_BUILD_TESTS=ON \
  -DPOWERCTL_WARNINGS_AS_ERRORS=ON -DPOWERCTL_UNITY_BUILD=ON >/dev/null
if ! cmake --build build; then
  kill "$kube_pid" 2>/dev/null || true
  wait "$kube_pid" 2>/dev/null || true
  exit 1
fi
end_phase build

echo "==> [2/4] waiting for the Kubernetes binaries"
if ! wait "$kube_pid"; then
  tail -n 40 build/kubernetes.log >&2
  echo "==> the Kubernetes build failed; its log is build/kubernetes.log" >&2
  exit 1
fi
tail -n 1 build/kubernetes.log
kube_took=$(cat build/kubernetes.seconds)
end_phase "kubernetes (waited for after the build)"

echo "==> [4/4] tests (ctest -j $((jobs + 1)): unit, integration, e2e, bench smoke, fuzz replay)"
status=0
ctest --test-dir build --output-on-failure --timeout 900 -j "$((jobs + 1))" || status=1
tests_took=$((SECONDS - phase_started))
end_phase tests

total=$((SECONDS - started))
echo "==> phase times (m:ss)"
for line in "${phases[@]}"; do echo "    $line"; done
printf '    %-38s %3d:%02d\n' "kubernetes (its own, beside the build)" $((kube_took / 60)) $((kube_took % 60))
printf '    %-38s %3d:%02d\n' total $((total / 60)) $((total % 60))
if ((tests_took > test_budget * 60)); then
  echo "==> OVER BUDGET: the tests took longer than ${test_budget} minutes (docs/install.md#build-and-test-time)" >&2
  status=1
fi
if ((total > total_budget * 60)); then
  echo "==> OVER BUDGET: the whole run took longer than ${total_budget} minutes (docs/install.md#build-and-test-time)" >&2
  status=1
fi
exit "$status"
