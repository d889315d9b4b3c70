"""The extender's OCI image as packaging/image/build.sh makes it (buildah on vfs storage, Debian 12
root filesystem from debootstrap): its configuration, its files, and powerctl running in it as
65532:65532 on a read-only root, as the generated Deployment runs it.

Needs root (debootstrap, chroot, mount namespaces, buildah's storage). The root filesystem is
cached in $POWERCTL_IMAGE_CACHE_DIR (default /var/cache/powerctl-image), so only the first run
pays for debootstrap."""
import json
import os
import queue
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import urllib.request

import yaml

BINARY = os.path.abspath(os.environ.get("POWERCTL_BINARY") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "powerctl"))
SOURCE_DIR = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_SH = os.path.join(SOURCE_DIR, "packaging", "image", "build.sh")
TLS = os.path.join(SOURCE_DIR, "tests", "fixtures", "tls")
TAG = "localhost/powerctl-e2e-image:test"
BUILDAH = ["buildah", "--storage-driver", "vfs"]
USER = "65532:65532"
UID = GID = 65532
START_LINE = re.compile(r"listening on (https?)://127\.0\.0\.1:(\d+)\S* \(.*\), "
                        r"ops on http://127\.0\.0\.1:(\d+)")

# Runs a command chrooted into a read-only bind mount of the image's root filesystem, as the
# image's user, in a private mount namespace (so every mount goes away with the process). Like
# the Deployment: /proc and /dev from the runtime, /etc/powerctl mounted read-only, nothing
# else writable. `exec` keeps one PID from unshare to powerctl, so signals reach the server.
RUN_READ_ONLY = r"""
set -e
root=$1 view=$2 etc=$3; shift 3
mount --bind "$root" "$view"
mount -o remount,bind,ro "$view"
mount -t proc proc "$view/proc"
mount --rbind /dev "$view/dev"
if [ -n "$etc" ]; then
  mount --bind "$etc" "$view/etc/powerctl"
  mount -o remount,bind,ro "$view/etc/powerctl"
fi
exec chroot --userspec=""" + USER + r""" "$view" "$@"
"""


def buildah(*args, check=True):
    r = subprocess.run([*BUILDAH, *args], capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"buildah {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return r.stdout.strip()


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("POWERCTL_") and k not in ("KUBECONFIG", "NO_COLOR")}


@unittest.skipUnless(os.geteuid() == 0,
                     "the image test needs root (debootstrap, chroot, mount namespaces, buildah "
                     "storage); run it as root, e.g. in CI's container or with sudo")
class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="powerctl-image-test.")
        cls.archive = os.path.join(cls.tmp, "powerctl-image.tar")
        cls.ctr = None
        t0 = time.monotonic()
        r = subprocess.run([BUILD_SH, "--binary", BINARY, "--tag", TAG, "--archive", cls.archive],
                           capture_output=True, text=True, timeout=1700)
        cls.build_seconds = time.monotonic() - t0
        sys.stderr.write(r.stdout + r.stderr)
        sys.stderr.write(f"test_image: build.sh took {cls.build_seconds:.1f} s\n")
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError(f"build.sh exited {r.returncode}")
        cls.build_log = r.stdout
        cls.image = json.loads(buildah("inspect", "--type", "image", TAG))
        cls.config = cls.image["OCIv1"]["config"]
        # What a container runtime gives the process: the image's Env, and HOME from the user's
        # /etc/passwd entry (/nonexistent), not this test's environment.
        cls.env = dict(e.split("=", 1) for e in cls.config.get("Env", []))
        cls.env["HOME"] = "/nonexistent"
        cls.ctr = buildah("from", "--pull-never", "--name", f"powerctl-image-test-{os.getpid()}", TAG)
        cls.root = buildah("mount", cls.ctr)

    @classmethod
    def tearDownClass(cls):
        if cls.ctr:
            buildah("umount", cls.ctr, check=False)
            buildah("rm", cls.ctr, check=False)
        buildah("rmi", TAG, check=False)  # the cached root filesystem stays; the image is cheap to remake
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_read_only(self, *argv, etc=""):
        view = tempfile.mkdtemp(dir=self.tmp)
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", RUN_READ_ONLY, "sh",
                self.root, view, etc, *argv]

    def run_in_image(self, *argv):
        return subprocess.run(self.run_read_only(*argv), capture_output=True, text=True, timeout=60,
                              env=self.env)

    # --- configuration --------------------------------------------------------------------------
    def test_config_runs_the_extender_as_numeric_non_root_user(self):
        c = self.config
        self.assertEqual(c["User"], USER)  # numeric, so runAsNonRoot can verify it without /etc/passwd
        self.assertEqual(c["Entrypoint"], ["/usr/bin/powerctl"])
        self.assertEqual(c["Cmd"], ["schedule-server", "--help"])
        self.assertEqual(sorted(c["ExposedPorts"]), ["8080/tcp", "8443/tcp"])
        self.assertEqual(c.get("StopSignal"), "SIGTERM")
        self.assertEqual((self.image["OCIv1"]["os"], self.image["OCIv1"]["architecture"]), ("linux", "amd64"))
        version = subprocess.run([BINARY, "version"], capture_output=True, text=True).stdout.split()[1]
        self.assertEqual(c["Labels"]["org.opencontainers.image.version"], version)
        self.assertEqual(c["Labels"]["org.opencontainers.image.title"], "powerctl")

    def test_user_has_no_shell_and_no_home(self):
        with open(os.path.join(self.root, "etc", "passwd")) as f:
            entry = next(line.rstrip("\n").split(":") for line in f if line.startswith("powerctl:"))
        self.assertEqual(entry[2:4], [str(UID), str(GID)])
        self.assertEqual(entry[5:7], ["/nonexistent", "/usr/sbin/nologin"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "nonexistent")))
        with open(os.path.join(self.root, "etc", "group")) as f:
            self.assertIn(f"powerctl:x:{GID}:", f.read())

    # --- files ------------------------------------------------------------------------------------
    def test_nothing_writable_by_others_or_the_user_and_no_setuid(self):
        world_writable, owned_by_user, setid = [], [], []
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    continue
                rel = "/" + os.path.relpath(path, self.root)
                if st.st_mode & stat.S_IWOTH and rel != "/tmp":
                    world_writable.append(rel)
                if st.st_uid == UID or st.st_gid == GID:
                    owned_by_user.append(rel)
                if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    setid.append(rel)
        self.assertEqual(world_writable, [], "world-writable outside /tmp")
        self.assertEqual(owned_by_user, [], "files the runtime user owns")
        self.assertEqual(setid, [], "setuid/setgid files")
        tmp = os.lstat(os.path.join(self.root, "tmp"))
        self.assertEqual(stat.S_IMODE(tmp.st_mode), 0o1777)  # sticky, root-owned: the one exception
        self.assertEqual(tmp.st_uid, 0)

    def test_binary_is_stripped_root_owned_and_loads_all_libraries(self):
        path = os.path.join(self.root, "usr", "bin", "powerctl")
        st = os.stat(path)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (0, 0, 0o755))
        sections = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
        self.assertNotIn(".debug_info", sections)
        self.assertNotIn(".symtab", sections)
        r = subprocess.run(["chroot", self.root, "/lib64/ld-linux-x86-64.so.2", "--list",
                            "/usr/bin/powerctl"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("not found", r.stdout)

    def test_no_package_lists_or_docs_left(self):
        for rel in ("var/lib/apt/lists", "var/cache/apt", "usr/share/man"):
            leftovers = [f for f in os.listdir(os.path.join(self.root, rel)) if f not in ("partial", "lock")]
            self.assertEqual(leftovers, [], rel)
        docs = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(self.root, "usr/share/doc"))
                for f in fs if f != "copyright"]
        self.assertEqual(docs, [])

    # --- running -------------------------------------------------------------------------------------
    def test_powerctl_runs_as_the_user_on_a_read_only_root(self):
        r = self.run_in_image("/usr/bin/powerctl", "version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("powerctl "), r.stdout)
        r = self.run_in_image("/usr/bin/powerctl", "schedule-server", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Usage: powerctl schedule-server", r.stdout)
        # the same process sees itself as 65532 on a read-only /
        r = self.run_in_image("/bin/sh", "-c", "id -u; id -g; cat /proc/self/mountinfo; touch /tmp/x")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[:2], [str(UID), str(GID)])
        root_mount = next(line.split() for line in lines[2:] if line.split()[4] == "/")
        self.assertIn("ro", root_mount[5].split(","), root_mount)
        self.assertIn("Read-only file system", r.stderr)
        self.assertNotEqual(r.returncode, 0)

    def test_schedule_server_serves_on_a_read_only_root_and_stops_on_sigterm(self):
        # /etc/powerctl as the Deployment mounts it: the TLS Secret (0440, group fsGroup) read-only.
        etc = os.path.join(self.tmp, "etc-powerctl")
        os.makedirs(os.path.join(etc, "tls"), exist_ok=True)
        for src, dst in (("server.crt", "tls.crt"), ("server.key", "tls.key"), ("ca.crt", "ca.crt")):
            path = os.path.join(etc, "tls", dst)
            shutil.copyfile(os.path.join(TLS, src), path)
            os.chown(path, 0, GID)
            os.chmod(path, 0o440)
        proc = subprocess.Popen(
            self.run_read_only("/usr/bin/powerctl", "schedule-server", "--listen", "127.0.0.1:0",
                               "--ops-listen", "127.0.0.1:0", "--tls-cert", "/etc/powerctl/tls/tls.crt",
                               "--tls-key", "/etc/powerctl/tls/tls.key",
                               "--client-ca", "/etc/powerctl/tls/ca.crt", etc=etc),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env)
        lines, stderr = queue.Queue(), []

        def pump():
            for line in proc.stderr:
                stderr.append(line)
                lines.put(line)
            lines.put(None)
        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        try:
            match, deadline = None, time.monotonic() + 30
            while match is None and time.monotonic() < deadline:
                try:
                    line = lines.get(timeout=1)
                except queue.Empty:
                    continue
                if line is None:
                    break
                match = START_LINE.search(line)
            self.assertIsNotNone(match, "no start line; stderr:\n" + "".join(stderr))
            self.assertEqual(match.group(1), "https")
            with urllib.request.urlopen(f"http://127.0.0.1:{match.group(3)}/healthz", timeout=10) as resp:
                self.assertEqual(resp.status, 200)
            proc.send_signal(signal.SIGTERM)  # to powerctl itself: unshare, sh and chroot exec'd it
            self.assertEqual(proc.wait(timeout=30), 0, "".join(stderr))
        finally:
            if proc.poll() is None:
                proc.kill()  # by PID: only the process this test started
                proc.wait()
            thread.join(timeout=10)
            proc.stderr.close()
        self.assertNotIn("Read-only file system", "".join(stderr))

    # --- the manifests that run it -------------------------------------------------------------------
    def generate(self, component):
        r = subprocess.run([BINARY, "generate", component], capture_output=True, text=True,
                           env=clean_env(), timeout=60, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        objects = [d for d in yaml.safe_load_all(r.stdout) if d is not None]
        return next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]

    def test_generated_deployments_match_the_image(self):
        pod = self.generate("extender")
        c = next(c for c in pod["containers"] if c["name"] == "extender")
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(f'{pod["securityContext"]["runAsUser"]}:{pod["securityContext"]["runAsGroup"]}',
                         self.config["User"])
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
        self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
        # args, not command: the image's entrypoint /usr/bin/powerctl runs them
        self.assertNotIn("command", c)
        self.assertEqual(c["args"][0], "schedule-server")
        self.assertEqual(sorted(f'{p["containerPort"]}/tcp' for p in c["ports"]),
                         sorted(self.config["ExposedPorts"]))
        # the second kube-scheduler (its own upstream image) is held to the same rules
        pod = self.generate("scheduler")
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        for c in pod["containers"]:
            self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"], c["name"])

    def test_oci_archive_holds_the_tagged_image(self):
        with tarfile.open(self.archive) as tar:
            names = tar.getnames()
            self.assertIn("oci-layout", names)
            index = json.load(tar.extractfile("index.json"))
        refs = [m.get("annotations", {}).get("org.opencontainers.image.ref.name") for m in index["manifests"]]
        self.assertEqual(len(refs), 1)
        self.assertTrue(TAG.endswith(refs[0]) or refs[0] == TAG, refs)


if __name__ == "__main__":
    unittest.main()
