"""Helpers for tests that drive the real powerctl binary."""
import os
import shutil
import subprocess
import tempfile
import unittest

BINARY = os.environ.get("POWERCTL_BINARY") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "powerctl")
SOURCE_DIR = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


def clean_env(**extra):
    """The environment without POWERCTL_* and colour variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POWERCTL_") and k not in ("NO_COLOR", "KUBECONFIG")}
    env.update(extra)
    return env


def run(*args, env=None, input=None, cwd=None, timeout=60):
    """Runs powerctl; returns CompletedProcess with text stdout/stderr."""
    return subprocess.run([BINARY, *args], capture_output=True, text=True, env=env or clean_env(),
                          input=input, cwd=cwd, timeout=timeout)


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="powerctl-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write(self, name, text):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def assertUsageError(self, result, *fragments):
        """Exit 2 with one 'error:' line on stderr containing every fragment."""
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
        self.assertEqual(len(lines), 1, result.stderr)
        for fragment in fragments:
            self.assertIn(fragment, lines[0])
        self.assertEqual(result.stdout, "")
