"""Golden manifests per component and Kubernetes version, with injected key material.

Regenerate after an intended change with:
    POWERCTL_UPDATE_GOLDEN=1 /usr/bin/python3 -m unittest test_golden   (in tests/integration)
then read the diff: it is the review of what users' clusters will receive.
"""
import difflib
import os
import sys
import unittest

import yaml
from support import SOURCE_DIR, run

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))
import openapi_schema  # noqa: E402 (tests/e2e: shared with the e2e suite)

VERSIONS = ["1.20", "1.21", "1.22", "1.23", "1.24", "1.25", "1.29", "1.30", "1.34", "1.35", "1.36",
            "1.37"]
# Lines whose published OpenAPI definitions are in tests/fixtures/openapi.
SCHEMA_LINES = ["1.35", "1.36", "1.37"]
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


class GoldenSchemaTest(unittest.TestCase):
    """Each golden of a line passes that line's OpenAPI schema, strictly (unknown fields too)."""

    def test_goldens_pass_their_lines_schema(self):
        for version in SCHEMA_LINES:
            definitions = openapi_schema.load(version)
            for component in COMPONENTS:
                with self.subTest(version=version, component=component), \
                        open(os.path.join(GOLDEN, version, component + ".yaml")) as f:
                    for obj in (o for o in yaml.safe_load_all(f) if o):
                        self.assertEqual(openapi_schema.problems(definitions, obj), [],
                                         f"{obj['kind']}/{obj['metadata']['name']}")


def _add(version, component):
    def test(self):
        self.check(version, component)
    setattr(GoldenTest, f"test_{component}_{version.replace('.', '_')}", test)


for _v in VERSIONS:
    for _c in COMPONENTS:
        _add(_v, _c)

if __name__ == "__main__":
    unittest.main()
