#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler and kube-controller-manager v1.20.2 from
# Debian's `kubernetes` source package and caches them, so later runs (and CI on
# the same machine) start in seconds. kubectl comes from Debian's binary package
# `kubernetes-client`, unpacked beside them rather than installed, so a kubectl
# already on the machine (/usr/bin/kubectl) is neither used nor replaced. Prints the directory holding the binaries
# on its last line of stdout.
#
#   POWERCTL_CACHE   cache root (default /var/cache/powerctl)
set -euo pipefail

cache=${POWERCTL_CACHE:-/var/cache/powerctl}
# "-reflect2": built with Debian's reflect2 1.0.2 in place of the vendored 1.0.1 (see below).
bindir="$cache/kubernetes-1.20.2-reflect2/bin"
bins=(kube-apiserver kube-scheduler kube-controller-manager)

have_all() {
  for b in "${bins[@]}"; do [[ -x "$bindir/$b" && -s "$bindir/$b" ]] || return 1; done
}

log() { echo "build-kubernetes: $*" >&2; }

# Debian's kubectl 1.20.2 (with its kustomize), for the GitOps tests.
ensure_kubectl() {
  [[ -x "$bindir/kubectl" && -s "$bindir/kubectl" ]] && return 0
  local unpack
  unpack=$(mktemp -d)
  log "unpacking Debian's kubernetes-client (kubectl)"
  (cd "$unpack" && apt-get download -qq kubernetes-client >/dev/null 2>&1) || {
    apt-get update -qq && (cd "$unpack" && apt-get download -qq kubernetes-client >/dev/null)
  }
  dpkg-deb -x "$unpack"/kubernetes-client_*.deb "$unpack/root"
  mkdir -p "$bindir"
  install -m 0755 "$unpack/root/usr/bin/kubectl" "$bindir/kubectl"
  rm -rf "$unpack"
}

if have_all; then
  ensure_kubectl
  echo "build-kubernetes: cached in $bindir" >&2
  echo "$bindir"
  exit 0
fi

mkdir -p "$cache"
work="$cache/kubernetes-src"
mkdir -p "$work"
cd "$work"

# A deb-src entry copied from the system's Debian entries (deb822 or one-line form).
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src ' /etc/apt/sources.list; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    log "adding a deb-src entry for Debian's sources"
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
      >/etc/apt/sources.list.d/powerctl-debian-src.sources
  else
    grep -E '^deb .*debian' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
      >/etc/apt/sources.list.d/powerctl-debian-src.list
  fi
  apt-get update -qq
fi

if ! ls kubernetes_*.orig.tar.* >/dev/null 2>&1; then
  log "downloading Debian's kubernetes source package"
  apt-get source --download-only -qq kubernetes >&2
fi

tree="$work/kubernetes-1.20.2"
if [[ ! -f "$tree/Makefile" ]]; then
  log "unpacking the orig tarball"
  rm -rf "$tree" "$work/unpack"
  mkdir -p "$work/unpack"
  tar -xf "$(ls kubernetes_*.orig.tar.* | head -n1)" -C "$work/unpack"
  mv "$work/unpack"/* "$tree"
  rmdir "$work/unpack"
fi

export GOPATH="$work/.go" GOFLAGS=-mod=vendor GO111MODULE=auto GOTOOLCHAIN=local
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$tree" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"

# The vendored github.com/modern-go/reflect2 v1.0.1 reads Go runtime map internals that
# changed in Go 1.18: built with Debian's Go 1.19, kube-apiserver segfaults in mapiterinit
# the first time it serialises a custom resource. reflect2 1.0.2 (Debian's
# golang-github-modern-go-reflect2-dev) is the upstream fix with the same API.
reflect2=/usr/share/gocode/src/github.com/modern-go/reflect2
if [[ ! -f "$reflect2/reflect2.go" ]]; then
  log "missing $reflect2: install golang-github-modern-go-reflect2-dev (packaging/install-deps.sh)"
  exit 1
fi
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp "$reflect2"/*.go "$reflect2"/*.s vendor/github.com/modern-go/reflect2/ 2>/dev/null ||
  cp "$reflect2"/*.go vendor/github.com/modern-go/reflect2/
rm -f vendor/github.com/modern-go/reflect2/*_test.go

# A failed make leaves empty generator binaries behind; start clean each attempt.
rm -rf _output
log "building ${bins[*]} (5-7 minutes on 2 cores)"
if ! CGO_ENABLED=0 make WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager" >"$work/make.log" 2>&1; then
  tail -n 40 "$work/make.log" >&2
  log "make failed; full log in $work/make.log"
  exit 1
fi

mkdir -p "$bindir"
for b in "${bins[@]}"; do
  install -m 0755 "_output/bin/$b" "$bindir/$b"
done
ensure_kubectl
log "built into $bindir"
echo "$bindir"
