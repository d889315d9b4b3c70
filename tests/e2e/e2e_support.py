"""Shared pieces of the end-to-end tests: the cluster, powerctl, applying manifests."""
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import yaml

import cluster as cl

BINARY = os.environ.get("POWERCTL_BINARY") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "powerctl")
SOURCE_DIR = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))

# kind -> (API path prefix, plural, namespaced)
RESOURCES = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "Service": ("/api/v1", "services", True),
    "Pod": ("/api/v1", "pods", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "TASPolicy": ("/apis/telemetry.intel.com/v1alpha1", "taspolicies", True),
}


def object_path(obj):
    prefix, plural, namespaced = RESOURCES[obj["kind"]]
    meta = obj["metadata"]
    if namespaced:
        return f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
    return f"{prefix}/{plural}/{meta['name']}"


def powerctl(*args, env=None, check=True, timeout=120):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCTL_")}
    full_env.update(env or {})
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, env=full_env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"powerctl {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return r


class JsonDocumentServer:
    """Serves `document` (replaceable at any time) as JSON to GET requests whose path starts with
    `path_prefix`, 404 otherwise, on address:port (port 0: a free one), recording every path:
    a stand-in for powerctl's ops ports behind the API server's service and pod proxies."""

    def __init__(self, address, path_prefix, document=None):
        self.document = document if document is not None else {}
        self.paths = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                outer.paths.append(self.path)
                if not self.path.startswith(path_prefix):
                    self.send_error(404)
                    return
                body = json.dumps(outer.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((address, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def load_docs(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


class ClusterTest(unittest.TestCase):
    """Uses the cluster of $POWERCTL_E2E_CLUSTER_DIR (ctest fixture) or starts its own."""

    cluster = None
    owned = False

    @classmethod
    def setUpClass(cls):
        shared = os.environ.get("POWERCTL_E2E_CLUSTER_DIR")
        if shared:
            cls.cluster = cl.Cluster.attach(shared)
        else:
            cls._own_dir = tempfile.mkdtemp(prefix="powerctl-e2e-")
            cls.cluster = cl.Cluster.start(cls._own_dir, nodes=["node-a", "node-b:8:32Gi", "node-c"],
                                           scheduler=True)
            cls.owned = True

    @classmethod
    def tearDownClass(cls):
        if cls.owned:
            cls.cluster.stop()
            shutil.rmtree(cls._own_dir, True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="powerctl-e2e-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def apply(self, obj, token=None):
        """Server-side apply of one object; returns (status, body)."""
        return self.cluster.api("PATCH", object_path(obj) + "?fieldManager=powerctl-e2e&force=true", obj,
                                content_type="application/apply-patch+yaml", token=token)

    def get(self, obj):
        return self.cluster.api("GET", object_path(obj))
