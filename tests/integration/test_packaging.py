"""The .deb that CPack builds carries the binary, the completions and the man page, and the
installed binary runs."""
import os
import subprocess
import tempfile
import unittest

from support import TempDirTest

BUILD_DIR = os.environ.get("POWERCTL_BUILD_DIR", "")


@unittest.skipUnless(BUILD_DIR, "POWERCTL_BUILD_DIR is not set (run through ctest)")
class PackagingTest(TempDirTest):
    def test_deb_contents_and_binary(self):
        r = subprocess.run(["cpack", "-G", "DEB", "-B", self.tmp], cwd=BUILD_DIR, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        debs = [f for f in os.listdir(self.tmp) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, os.listdir(self.tmp))
        deb = os.path.join(self.tmp, debs[0])
        listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
        for path in ("./usr/bin/powerctl", "./usr/share/bash-completion/completions/powerctl",
                     "./usr/share/zsh/vendor-completions/_powerctl",
                     "./usr/share/fish/vendor_completions.d/powerctl.fish", "./usr/share/man/man1/powerctl.1",
                     "./usr/share/powerctl/templates/scheduler-config.yaml"):
            self.assertIn(path, listing)
        info = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True, check=True).stdout
        self.assertIn("Package: powerctl", info)
        self.assertIn("libyaml-cpp", info)  # shared-library dependencies were computed
        root = os.path.join(self.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        out = subprocess.run([os.path.join(root, "usr/bin/powerctl"), "version", "--short"],
                             capture_output=True, text=True, check=True).stdout.strip()
        self.assertRegex(out, r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()
