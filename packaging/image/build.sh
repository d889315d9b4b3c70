#!/usr/bin/env bash
# Builds the extender's OCI image (`powerctl schedule-server`) without a daemon and without an
# image registry: a Debian 12 root filesystem made with debootstrap (--variant=minbase plus the
# runtime library packages in packaging/image/packages.txt), the stripped binary at
# /usr/bin/powerctl, a non-root user 65532:65532 without a shell, assembled and committed with
# buildah on vfs storage. This is the tested path (tests/e2e/test_image.py); packaging/Dockerfile
# only points here.
#
#   sudo packaging/image/build.sh [--binary build/powerctl] [--tag localhost/powerctl:VERSION]
#        [--cache-dir /var/cache/powerctl-image] [--archive build/powerctl-image.tar | --no-archive]
#        [--mirror URL] [--no-updates] [--rebuild-rootfs]
#   packaging/image/build.sh --derive-packages [BINARY]   # print the package list ldd implies
#
# The root filesystem is cached as a tarball in the cache directory, keyed on the package list,
# the suite, the mirror and the recipe below; a second run only unpacks it, adds the binary and
# commits. Security updates (bookworm-security, bookworm-updates) are applied when the root
# filesystem is made; --rebuild-rootfs makes it again to pick up newer ones.
# Needs root (debootstrap, chroot, buildah's vfs storage under /var/lib/containers).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

binary=$src/build/powerctl
tag=""
cache_dir=${POWERCTL_IMAGE_CACHE_DIR:-/var/cache/powerctl-image}
archive=$src/build/powerctl-image.tar
mirror=${POWERCTL_IMAGE_MIRROR:-http://deb.debian.org/debian}
security_mirror=${POWERCTL_IMAGE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
updates=1
rebuild_rootfs=0
derive_only=0
packages_file=$here/packages.txt
uid=65532
gid=65532

log() { echo "build-image: $*"; }
die() { echo "build-image: error: $*" >&2; exit 1; }

while (($#)); do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --cache-dir) cache_dir=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --no-archive) archive=""; shift ;;
    --mirror) mirror=$2; shift 2 ;;
    --no-updates) updates=0; shift ;;
    --rebuild-rootfs) rebuild_rootfs=1; shift ;;
    --derive-packages) derive_only=1; shift; if (($#)) && [[ $1 != --* ]]; then binary=$1; shift; fi ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ -f $binary ]] || die "binary '$binary' not found (build it first, or pass --binary PATH)"
binary=$(readlink -f "$binary")

# --- which Debian package provides each library the binary loads -----------------------------
# Prints "library package" per line; package is "?" when no installed package owns the file.
# dpkg -S knows the path the package ships, which is /lib/... or /usr/lib/... (merged /usr),
# so both spellings are tried before the resolved symlink target.
library_packages() {
  local -a libs candidates
  local -A owner=()
  local lib real c pkg path
  mapfile -t libs < <(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
  for lib in "${libs[@]}"; do
    real=$(readlink -f "$lib")
    candidates+=("$lib" "${lib/#\/usr\/lib\//\/lib\/}" "${lib/#\/lib\//\/usr\/lib\/}"
                 "$real" "${real/#\/usr\/lib\//\/lib\/}")
  done
  # One dpkg -S for all of them (it is slow per call); lines are "pkg[:arch][, pkg2...]: path".
  while IFS= read -r line; do
    pkg=${line%%: /*}; path=${line#"$pkg": }
    pkg=${pkg%%,*}; owner[$path]=${pkg%%:*}
  done < <(dpkg -S "${candidates[@]}" 2>/dev/null || true)
  for lib in "${libs[@]}"; do
    real=$(readlink -f "$lib")
    pkg="?"
    for c in "$lib" "${lib/#\/usr\/lib\//\/lib\/}" "${lib/#\/lib\//\/usr\/lib\/}" \
             "$real" "${real/#\/usr\/lib\//\/lib\/}"; do
      if [[ -n ${owner[$c]:-} ]]; then pkg=${owner[$c]}; break; fi
    done
    echo "$lib $pkg"
  done
  ldd "$1" | awk '/not found/ {print $1 " ?"}'
}

if ((derive_only)); then
  library_packages "$binary" | awk '{print $2}' | sort -u
  exit 0
fi

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot and buildah's vfs storage need it)"
for tool in debootstrap buildah ldd dpkg strip flock unshare; do
  command -v "$tool" >/dev/null || die "'$tool' not found; run packaging/install-deps.sh"
done

mapfile -t packages < <(sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$packages_file" | sort -u)
((${#packages[@]})) || die "$packages_file lists no packages"

version=$("$binary" version 2>/dev/null | awk 'NR == 1 {print $2}')
version=${version#v}
[[ -n $version ]] || die "'$binary version' printed nothing"
tag=${tag:-localhost/powerctl:$version}
start=$SECONDS

# --- 1. every library the binary needs is covered by packages.txt ------------------------------
log "[1/5] checking that $packages_file covers every library of $binary"
declare -A listed=()
for p in "${packages[@]}"; do listed[$p]=1; done
uncovered=()
while read -r lib pkg; do
  if [[ $pkg == "?" ]]; then
    uncovered+=("$lib (no Debian package owns it)")
  elif [[ -z ${listed[$pkg]:-} ]]; then
    uncovered+=("$lib (package $pkg)")
  fi
done < <(library_packages "$binary")
if ((${#uncovered[@]})); then
  echo "build-image: error: libraries of $binary whose package $packages_file does not list:" >&2
  printf '  %s\n' "${uncovered[@]}" >&2
  die "add the packages to $packages_file (packaging/image/build.sh --derive-packages prints the list)"
fi

# --- 2. the cached root filesystem ---------------------------------------------------------------
# Everything that decides the root filesystem's content goes into the cache key, including this
# function's own text, so editing the recipe invalidates the cache.
make_rootfs() {
  local root=$1 debs=$2 logs=$3
  debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
    --cache-dir="$debs" "$suite" "$root" "$mirror" >"$logs/debootstrap.log" 2>&1 ||
    { tail -n 30 "$logs/debootstrap.log" >&2; die "debootstrap failed (log: $logs/debootstrap.log)"; }
  if ((updates)); then
    cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # A private mount namespace: /proc goes away with the command, whatever happens.
    # shellcheck disable=SC2016  # $1 expands in the inner shell
    unshare --mount --propagation private sh -ec '
      mount -t proc proc "$1/proc"
      chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get -qq update
      chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o Dpkg::Options::=--force-confold upgrade
    ' sh "$root" >"$logs/upgrade.log" 2>&1 ||
      { tail -n 30 "$logs/upgrade.log" >&2; die "security updates failed (log: $logs/upgrade.log)"; }
  fi
  # The runtime user: numeric 65532:65532 (what the Deployment's runAsUser/runAsGroup say),
  # no home directory, no login shell.
  chroot "$root" groupadd --gid "$gid" powerctl
  chroot "$root" useradd -K UID_MAX="$uid" -K GID_MAX="$gid" --uid "$uid" --gid "$gid" \
    --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin powerctl
  chroot "$root" passwd --lock powerctl >/dev/null
  chroot "$root" apt-get clean
  # Shrink: package lists and caches, docs (copyright files stay), man pages, locales, logs.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
         "$root"/var/lib/dpkg/*-old "$root"/usr/share/man/* "$root"/usr/share/info/* \
         "$root"/usr/share/locale/* "$root"/usr/share/lintian "$root"/usr/share/linda \
         "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/* "$root"/root/.bash_history
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "${root:?}"/dev/*   # the runtime provides /dev
  : >"$root/etc/resolv.conf"
  : >"$root/etc/machine-id"
  # Nothing world-writable but /tmp (sticky), and no setuid/setgid programs: the container runs
  # as 65532 with a read-only root and no privilege escalation, so these are only attack surface.
  chmod 0755 "$root/var/tmp"
  find "$root" -xdev -perm -0002 ! -type l ! -path "$root/tmp" -exec chmod o-w {} +
  find "$root" -xdev -perm /6000 ! -type l -exec chmod ug-s {} +
  chmod 1777 "$root/tmp"
  mkdir -p "$root/etc/powerctl"   # the Deployment mounts its ConfigMap here
}

mkdir -p "$cache_dir/debs"
cache_dir=$(readlink -f "$cache_dir")
exec 9>"$cache_dir/lock"
flock 9   # one build at a time per cache (parallel test runs, CI jobs on one host)

key=$( { printf '%s\n' "${packages[@]}"; echo "$suite $mirror $security_mirror $updates $uid $gid";
         declare -f make_rootfs; } | sha256sum | cut -c1-16)
rootfs_tar=$cache_dir/rootfs-$suite-$key.tar
if ((rebuild_rootfs)); then rm -f "$rootfs_tar"; fi
if [[ -f $rootfs_tar ]]; then
  log "[2/5] root filesystem: cached $rootfs_tar"
else
  log "[2/5] root filesystem: debootstrap --variant=minbase $suite + ${#packages[@]} packages" \
      "(cache key $key)"
  t0=$SECONDS
  work=$(mktemp -d "$cache_dir/rootfs.XXXXXX")
  # debootstrap unmounts what it mounted in the target on exit; the guard is for a killed run.
  drop_work() {
    local m
    for m in dev/pts proc sys; do if mountpoint -q "$work/$m"; then umount -l "$work/$m"; fi; done
    rm -rf "$work"
  }
  trap drop_work EXIT
  make_rootfs "$work" "$cache_dir/debs" "$cache_dir"
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$work" -cpf "$rootfs_tar.tmp" .
  mv "$rootfs_tar.tmp" "$rootfs_tar"
  rm -rf "$work"
  trap - EXIT
  # Tarballs of other keys are stale; the .deb cache stays for the next package-list change.
  find "$cache_dir" -maxdepth 1 -name "rootfs-*.tar" ! -path "$rootfs_tar" -delete
  log "      made in $((SECONDS - t0)) s: $(du -h "$rootfs_tar" | cut -f1) tarball"
fi

# --- 3. the working container: root filesystem + stripped binary --------------------------------
B=(buildah --storage-driver vfs)
stage=$(mktemp -d)
ctr=""
cleanup() {
  if [[ -n $ctr ]]; then
    "${B[@]}" umount "$ctr" >/dev/null 2>&1 || true
    "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true
  fi
  rm -rf "$stage"
}
trap cleanup EXIT

log "[3/5] assembling: buildah from scratch, root filesystem, /usr/bin/powerctl (stripped)"
ctr=$("${B[@]}" from --name "powerctl-image-build-$$" scratch)
mnt=$("${B[@]}" mount "$ctr")
tar --numeric-owner --xattrs --xattrs-include='*' -C "$mnt" -xpf "$rootfs_tar"
strip --strip-unneeded -o "$stage/powerctl" "$binary"
install -m 0755 -o 0 -g 0 "$stage/powerctl" "$mnt/usr/bin/powerctl"
# The image's own loader must resolve every library (a package list that drifted from the binary
# fails here, not in the cluster).
if ! loaded=$(chroot "$mnt" /lib64/ld-linux-x86-64.so.2 --list /usr/bin/powerctl 2>&1) ||
   grep -q 'not found' <<<"$loaded"; then
  grep 'not found' <<<"$loaded" >&2 || echo "$loaded" >&2
  die "the image cannot load /usr/bin/powerctl; update $packages_file"
fi
"${B[@]}" umount "$ctr" >/dev/null

# --- 4. image configuration and commit ------------------------------------------------------------
log "[4/5] config (user $uid:$gid, entrypoint /usr/bin/powerctl, ports 8443 8080), commit $tag"
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
"${B[@]}" config \
  --os linux --arch amd64 \
  --user "$uid:$gid" \
  --workingdir / \
  --env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  --entrypoint '["/usr/bin/powerctl"]' \
  --cmd '["schedule-server","--help"]' \
  --port 8443/tcp --port 8080/tcp \
  --stop-signal SIGTERM \
  --label org.opencontainers.image.title=powerctl \
  --label "org.opencontainers.image.description=powerctl schedule-server, a power-aware scheduler extender" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "io.powerctl.base=debian $suite, debootstrap --variant=minbase" \
  --label "io.powerctl.rootfs-key=$key" \
  "$ctr"
old_id=$("${B[@]}" images --noheading --no-trunc --format '{{.ID}}' "$tag" 2>/dev/null || true)
id=$("${B[@]}" commit --quiet --format oci --rm "$ctr" "$tag")
ctr=""
if [[ -n $old_id && $old_id != "$id" && $old_id != "sha256:$id" ]]; then
  "${B[@]}" rmi "$old_id" >/dev/null 2>&1 || true   # the previous build of this tag, now untagged
fi
size=$("${B[@]}" images --noheading --format '{{.Size}}' "$tag")

# --- 5. optional OCI archive --------------------------------------------------------------------
if [[ -n $archive ]]; then
  log "[5/5] oci-archive $archive"
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive.tmp"
  "${B[@]}" push --quiet "$tag" "oci-archive:$archive.tmp:$tag"
  mv "$archive.tmp" "$archive"
  log "      archive: $(du -h "$archive" | cut -f1)"
else
  log "[5/5] no archive (--no-archive)"
fi
log "done: $tag (${id:0:12}), $size, in $((SECONDS - start)) s"
