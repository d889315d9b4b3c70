"""Helpers for tests that drive the real powerctl binary."""
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

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


class FakeKubeApi:
    """A plain-HTTP stand-in for an API server, for commands that only read a little from one.
    `answer(path, query)` returns (status, JSON body) or None for 404; every path asked for is
    recorded in `paths`."""

    def __init__(self, answer):
        self.paths = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                owner.paths.append(url.path)
                reply = answer(url.path, urllib.parse.parse_qs(url.query))
                status, document = reply if reply else (
                    404, {"kind": "Status", "status": "Failure", "code": 404})
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kubeconfig(self, directory):
        """A kubeconfig file in `directory` whose current context talks to this server."""
        path = os.path.join(directory, "kubeconfig")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "{self.url}"}}
users:
- name: me
  user: {{token: t}}
contexts:
- name: fake
  context: {{cluster: fake, user: me}}
current-context: fake
""")
        return path

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
