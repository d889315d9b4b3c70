"""Golden manifests per component and Kubernetes version, with injected key material.

Regenerate after an intended change with:
    POWERCTL_UPDATE_GOLDEN=1 /usr/bin/python3 -m unittest test_golden   (in tests/integration)
then read the diff: it is the review of what users' clusters will receive.
"""
import difflib
import os
import unittest

from support import SOURCE_DIR, run

VERSIONS = ["1.20", "1.21", "1.22", "1.23", "1.24", "1.25", "1.29", "1.30", "1.34"]
COMPONENTS = ["namespace", "rbac", "secrets", "policies", "model", "extender", "scheduler", "lb"]
GOLDEN = os.path.join(SOURCE_DIR, "tests", "fixtures", "golden")
CONFIG = os.path.join(GOLDEN, "powerctl.yaml")
CERTS = os.path.join(SOURCE_DIR, "tests", "fixtures", "tls")
UPDATE = os.environ.get("POWERCTL_UPDATE_GOLDEN") == "1"


class GoldenTest(unittest.TestCase):
    def check(self, version, component):
        r = run("generate", component, "--kube-version", version, "-c", CONFIG, "--cert-dir", CERTS)
        self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(GOLDEN, version, component + ".yaml")
        if UPDATE:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(r.stdout)
            return
        with open(path) as f:
            want = f.read()
        if r.stdout != want:
            diff = "".join(difflib.unified_diff(want.splitlines(True), r.stdout.splitlines(True),
                                                path, "generated"))
            self.fail(f"{component} at {version} differs from its golden file:\n{diff}")


def _add(version, component):
    def test(self):
        self.check(version, component)
    setattr(GoldenTest, f"test_{component}_{version.replace('.', '_')}", test)


for _v in VERSIONS:
    for _c in COMPONENTS:
        _add(_v, _c)

if __name__ == "__main__":
    unittest.main()
