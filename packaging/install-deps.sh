#!/usr/bin/env bash
# Installs every build and test dependency of powerctl from Debian 12's packages.
# Idempotent: packages already present are skipped, and nothing is printed
# beyond one line when everything is there.
set -euo pipefail

BUILD_PKGS=(
  cmake ninja-build g++ pkg-config git
  libcli11-dev libcurl4-openssl-dev nlohmann-json3-dev libyaml-cpp-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libssl-dev libboost1.81-dev libspdlog-dev libfmt-dev libnftables-dev
  # jemalloc: the allocator of the powerctl binary (cmake/Allocator.cmake says why).
  libjemalloc-dev
  # The servers' /metrics (core/server/metrics_registry.h); only its core library is linked.
  prometheus-cpp-dev
)
TEST_PKGS=(
  libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # The sanitized libFuzzer build of tests/fuzz/run.sh (fuzzing sessions, not the suite).
  clang libclang-rt-14-dev
  # The suite replays the fuzz corpora under memcheck (tests/fuzz/CMakeLists.txt).
  valgrind
  python3 python3-yaml etcd-server openssl jq curl procps iproute2 bash-completion
  # The lb-agent's network-namespace test (tests/integration/test_lb_netns.py): the nft tool
  # loads a kube-proxy stand-in and lists what is left.
  nftables
  # The lb-agent's `--mode ipvs` runs ipvsadm (core/lb/ipvs_admin.h); its unit tests use shell
  # stand-ins, tests/integration/test_lb_ipvs.py the real tool on kernels with IPVS.
  ipvsadm
  prometheus prometheus-node-exporter wrk
  # Renders simulate's HTML report in tests (headless screenshots).
  chromium
  # The completion scripts are tested in each shell they are written for.
  zsh fish
  # Building kube-apiserver/kube-scheduler/kube-controller-manager from Debian's source package.
  golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev
  # The extender image (packaging/image/build.sh, tests/e2e/test_image.py): a Debian root
  # filesystem from debootstrap, assembled by buildah on vfs storage (no daemon, no
  # fuse-overlayfs, no OCI runtime: nothing is run through buildah); uidmap is buildah's own
  # dependency, listed so the set is explicit.
  buildah debootstrap uidmap
)

want=("${BUILD_PKGS[@]}")
if [[ "${1:-}" != "--build-only" ]]; then
  want+=("${TEST_PKGS[@]}")
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}); run as root or install them with apt-get" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
