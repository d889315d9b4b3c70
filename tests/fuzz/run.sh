#!/usr/bin/env bash
# Builds powerctl's libFuzzer targets and fuzzes each one for a while.
#
#   tests/fuzz/run.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 tests/fuzz/run.sh yaml_fuzzer template_fuzzer
#   FUZZ_KEEP_GOING=1 tests/fuzz/run.sh config_fuzzer   # collect several crashes
#
# What it does:
#   1. configures build-fuzz/ (once) with
#        CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
#          -DPOWERCTL_BUILD_FUZZ=ON -DPOWERCTL_BUILD_TESTS=OFF
#      and builds the fuzzers: cmake --build build-fuzz --target powerctl_fuzzers
#   2. runs each fuzzer for FUZZ_SECONDS with -max_total_time, a per-target -max_len and
#      dictionary (tests/fuzz/dicts/), starting from the committed seeds in
#      tests/fuzz/corpus/<target>/. New interesting inputs go to build-fuzz/fuzz-corpus/<target>/
#      (never into the committed corpus; copy a few good ones over by hand if they are worth
#      keeping);
#   3. prints per target: executions, executions/s, new corpus units, and whether it crashed.
#      A crash, sanitizer report, leak, timeout (-timeout, default 10 s per input) or OOM
#      (-rss_limit_mb=2048) leaves the input in tests/fuzz/crashes/<target>-crash-<sha1>
#      (or -timeout-/-oom-/-leak-) and makes the script exit 1.
#
# Reproduce a crash:   build-fuzz/<target> tests/fuzz/crashes/<file>
# Minimise it:         build-fuzz/<target> -minimize_crash=1 -runs=100000 \
#                        -exact_artifact_path=tests/fuzz/regressions/<target>-<name> <file>
# Replay all corpora:  ctest --test-dir build-fuzz -L fuzz
#
# Environment: FUZZ_SECONDS (60), FUZZ_BUILD_DIR (build-fuzz), FUZZ_CC/FUZZ_CXX (clang,
# clang++), FUZZ_KEEP_GOING=1 (fork mode with -ignore_crashes/-ignore_timeouts/-ignore_ooms:
# keeps fuzzing after a crash; crashes are still saved), FUZZ_EXTRA_ARGS (appended to every
# fuzzer command line).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD_DIR:-build-fuzz}
crashes=tests/fuzz/crashes
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then  # every tests/fuzz/<name>_fuzzer.cpp
  for source in tests/fuzz/*_fuzzer.cpp; do
    name=${source##*/}
    targets+=("${name%.cpp}")
  done
fi

max_len() {
  case $1 in
    yaml_fuzzer | config_fuzzer) echo 8192 ;;  # real manifests and configs are 1-6 KiB
    kubeconfig_fuzzer) echo 8192 ;;  # one cluster + user with base64 certificates is ~5 KiB
    template_fuzzer) echo 4096 ;;
    pem_fuzzer) echo 4096 ;;  # a certificate with a few SANs is ~1 KiB of PEM
    scalars_fuzzer) echo 64 ;;
    *) echo 4096 ;;
  esac
}

if ! grep -q 'cmake/Fuzz.cmake' CMakeLists.txt; then
  echo "run.sh: CMakeLists.txt does not include(cmake/Fuzz.cmake)." >&2
  exit 2
fi

if [[ ! -f $build/CMakeCache.txt ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  CC=${FUZZ_CC:-clang} CXX=${FUZZ_CXX:-clang++} cmake -S . -B "$build" "${generator[@]}" \
    -DPOWERCTL_BUILD_FUZZ=ON -DPOWERCTL_BUILD_TESTS=OFF
fi
cmake --build "$build" --target powerctl_fuzzers

mkdir -p "$crashes"
summary=()
failed=0
for target in "${targets[@]}"; do
  binary=$build/$target
  [[ -x $binary ]] || { echo "run.sh: no fuzzer $binary" >&2; exit 2; }
  work=$build/fuzz-corpus/$target
  log=$build/fuzz-logs/$target.log
  mkdir -p "$work" "$(dirname "$log")"
  dict=$build/fuzz-dicts/$target.dict
  mkdir -p "$(dirname "$dict")"
  : >"$dict"
  # config_fuzzer's input is YAML too: give it the YAML tokens as well as the config keys.
  [[ $target == config_fuzzer ]] && cat tests/fuzz/dicts/yaml_fuzzer.dict >>"$dict"
  [[ -f tests/fuzz/dicts/$target.dict ]] && cat "tests/fuzz/dicts/$target.dict" >>"$dict"
  args=(-max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=10
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/$target-")
  [[ -s $dict ]] && args+=(-dict="$dict")
  if [[ ${FUZZ_KEEP_GOING:-0} == 1 ]]; then
    args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  # shellcheck disable=SC2206 # FUZZ_EXTRA_ARGS is a list of flags
  args+=(${FUZZ_EXTRA_ARGS:-})
  before=$(find "$crashes" -maxdepth 1 -name "$target-*" | wc -l)
  echo "== $target: $binary ${args[*]} $work tests/fuzz/corpus/$target"
  set +e
  "$binary" "${args[@]}" "$work" "tests/fuzz/corpus/$target" >"$log" 2>&1
  rc=$?
  set -e
  after=$(find "$crashes" -maxdepth 1 -name "$target-*" | wc -l)

  # Final stats when the run ends normally; otherwise the last "#N ..." status line.
  # (Fork mode prints "#N: ... exec/s R ..." lines and no final stats.)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [[ -z $runs ]]; then
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    rate=$(grep -oE 'exec/s:? [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  fi
  units=$(find "$work" -type f | wc -l)
  if [[ $rc -ne 0 || $after -gt $before ]]; then
    failed=1
    result="FOUND $((after - before)) new input(s) in $crashes/ (exit $rc; log $log)"
  else
    result=ok
  fi
  summary+=("$(printf '%-16s runs %-10s exec/s %-7s corpus %-6s %s' "$target" "${runs:-?}" \
    "${rate:-?}" "$units" "$result")")
done

echo
echo "== fuzzing summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit $failed
