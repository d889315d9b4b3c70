#!/usr/bin/python3
"""Self-test of the e2e harness (cluster.py) against a real control plane.

    /usr/bin/python3 tests/e2e/test_harness.py [-v]

POWERCTL_E2E_CLUSTER_DIR  attach to the cluster running there (started with
                          `cluster.py up`) instead of starting a private one;
                          it is left running.
POWERCTL_K8S_BIN          directory holding kube-apiserver & co.
"""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

NODES = ["node-a", "node-b"]
ATTACHED = bool(os.environ.get("POWERCTL_E2E_CLUSTER_DIR"))


def _missing_binaries():
    bin_dir = cluster.default_bin_dir()
    missing = [b for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
               if not os.access(os.path.join(bin_dir, b), os.X_OK)]
    return f"kubernetes binaries missing in {bin_dir}: {missing}" if missing else None


@unittest.skipIf(not ATTACHED and _missing_binaries(), _missing_binaries() or "")
class HarnessTest(unittest.TestCase):
    c = None
    tmp = None

    @classmethod
    def setUpClass(cls):
        if ATTACHED:
            cls.c = cluster.Cluster.attach(os.environ["POWERCTL_E2E_CLUSTER_DIR"])
            cls.nodes = cls.c.nodes
        else:
            cls.tmp = tempfile.mkdtemp(prefix="powerctl-e2e-harness-")
            t0 = time.monotonic()
            cls.c = cluster.Cluster.start(cls.tmp, nodes=NODES, scheduler=True)
            cls.startup = time.monotonic() - t0
            cls.nodes = NODES
        cls.ns = "harness-" + secrets.token_hex(3)
        cls.c.ensure_namespace(cls.ns)

    failed = False

    def tearDown(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        if result is not None and (result.errors or result.failures):
            type(self).failed = True

    @classmethod
    def tearDownClass(cls):
        if cls.c is None:
            return
        if ATTACHED:
            cls.c.api("DELETE", f"/api/v1/namespaces/{cls.ns}")
            return
        cls.c.stop()  # normally already done by test_9; idempotent
        if cls.failed or os.environ.get("POWERCTL_E2E_KEEP"):
            print(f"\ncluster files and logs kept in {cls.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_nodes_ready_and_untainted(self):
        self.assertTrue(self.nodes, "cluster has no nodes")
        for name in self.nodes:
            node = self.c.wait_node_ready(name, timeout=30)
            conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
            self.assertEqual(conds.get("Ready"), "True", name)
            taints = node["spec"].get("taints") or []
            self.assertFalse([t for t in taints if t["key"].startswith("node.kubernetes.io/")],
                             f"{name} still tainted: {taints}")
            self.assertEqual(node["status"]["allocatable"]["pods"], "110")

    def test_2_deployment_becomes_available(self):
        ns = self.ns
        labels = {"app": "pause"}
        dep = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "pause", "namespace": ns},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{
                                      "name": "pause", "image": "registry.invalid/pause:1",
                                      "resources": {"requests": {"cpu": "100m",
                                                                 "memory": "64Mi"}}}]}}},
        }
        self.c.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", dep)

        def available():
            d = self.c.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/pause")
            st = d.get("status", {})
            if (d["metadata"]["generation"] == st.get("observedGeneration")
                    and st.get("availableReplicas") == 2 and st.get("updatedReplicas") == 2):
                return d
            return None
        d = self.c.wait_for(available, timeout=60, what="deployment pause to be available")
        self.assertEqual(d["status"]["availableReplicas"], 2)
        self.assertEqual(d["status"]["updatedReplicas"], 2)

        pods = self.c.request("GET", f"/api/v1/namespaces/{ns}/pods",
                              query={"labelSelector": "app=pause"})["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")]
        self.assertEqual(len(running), 2, [p["metadata"]["name"] for p in pods])
        for p in running:
            self.assertIn(p["spec"]["nodeName"], self.nodes)
            self.assertTrue(p["status"].get("podIP"))
            self.assertTrue(all(cs["ready"] for cs in p["status"]["containerStatuses"]))

        # deleting it lets the garbage collector and the fake kubelet remove the pods
        self.c.request("DELETE", f"/apis/apps/v1/namespaces/{ns}/deployments/pause",
                       {"kind": "DeleteOptions", "apiVersion": "v1",
                        "propagationPolicy": "Foreground"})
        self.c.wait_for(lambda: not self.c.request(
            "GET", f"/api/v1/namespaces/{ns}/pods",
            query={"labelSelector": "app=pause"})["items"], timeout=60, what="pods to be deleted")

    def test_3_token_request_authenticates_as_service_account(self):
        ns = self.ns
        token = self.c.service_account_token(ns, "probe")
        self.assertTrue(token.count(".") == 2, "not a JWT")
        # authenticated (so not 401) but not authorized (so 403) ...
        status, body = self.c.api("GET", "/api/v1/nodes", token=token)
        self.assertEqual(status, 403, body)
        self.assertIn(f"system:serviceaccount:{ns}:probe", body.get("message", ""))
        # ... while a bogus token is rejected outright
        status, _ = self.c.api("GET", "/api/v1/nodes", token="not-a-token")
        self.assertEqual(status, 401)
        # and a kubeconfig for the identity can be written
        path = os.path.join(self.c.dir, f"probe-{ns}.kubeconfig")
        self.c.write_kubeconfig(path, token=token, user="probe", namespace=ns)
        with open(path) as f:
            text = f.read()
        self.assertIn(self.c.server, text)
        self.assertIn(token, text)

    def test_4_client_certificate_identity(self):
        crt, key = self.c.issue_client_cert("e2e-user", groups=["e2e-group"])
        status, body = self.c.api("GET", "/api/v1/nodes", token="", cert=crt, key=key)
        self.assertEqual(status, 403, body)
        self.assertIn('"e2e-user"', body.get("message", ""))

    def test_5_node_added_at_run_time(self):
        name = "late-" + secrets.token_hex(3)
        node = self.c.create_node(name, cpu="16", memory="64Gi", labels={"power": "low"})
        try:
            self.assertEqual(node["status"]["capacity"]["cpu"], "16")
            self.assertEqual(node["metadata"]["labels"]["power"], "low")
            # the annotation makes the fake kubelet report the node NotReady, and back
            self.c.request("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"annotations": {
                cluster.ANNOTATION_NODE_READY: "false"}}})
            self.c.wait_for(lambda: not cluster.node_is_ready(
                self.c.request("GET", f"/api/v1/nodes/{name}")), 10, f"{name} NotReady")
            self.c.request("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"annotations": {
                cluster.ANNOTATION_NODE_READY: None}}})
            self.c.wait_node_ready(name, 10)
            unmanaged = self.c.create_node(name + "-x", managed=False)
            self.assertFalse(cluster.node_is_ready(unmanaged))
            self.c.delete_node(name + "-x")
        finally:
            self.c.delete_node(name)

    @unittest.skipIf(ATTACHED, "attached to a shared cluster; it is stopped by its owner")
    def test_9_stop_leaves_no_processes(self):
        procs = self.c.processes
        self.assertEqual({p["role"] for p in procs},
                         {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                          "fake-kubelet"})
        for p in procs:
            self.assertTrue(cluster.pid_alive(p["pid"], p["start_time"]), p)
        self.c.stop()
        for p in procs:
            self.assertFalse(os.path.exists(f"/proc/{p['pid']}"), f"{p['role']} pid {p['pid']} left")
        self.assertFalse(os.path.exists(os.path.join(self.c.dir, "etcd-data")))
        self.c.stop()  # idempotent


@unittest.skipIf(ATTACHED or bool(_missing_binaries()), "attached, or binaries missing")
class CliTest(unittest.TestCase):
    """`up`/`down` as the ctest fixtures use them (no nodes, no scheduler)."""

    def test_up_down(self):
        d = tempfile.mkdtemp(prefix="powerctl-e2e-cli-")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cluster.py")
        try:
            r = subprocess.run([cluster.PYTHON, script, "up", "--dir", d, "--nodes", "solo:2:4Gi"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=180)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip().splitlines()[-1], os.path.join(d, "admin.kubeconfig"))
            c = cluster.Cluster.attach(d)
            self.assertEqual(c.request("GET", "/api/v1/nodes/solo")["status"]["capacity"]["cpu"], "2")
            # a second `up` on a running cluster must refuse
            r2 = subprocess.run([cluster.PYTHON, script, "up", "--dir", d], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertNotEqual(r2.returncode, 0)
            self.assertIn("already running", r2.stderr)
            pids = c.pids()
        finally:
            subprocess.run([cluster.PYTHON, script, "down", "--dir", d], timeout=120)
        for p in c.processes:
            self.assertFalse(cluster.pid_alive(p["pid"], p["start_time"]), p)
        r = subprocess.run([cluster.PYTHON, script, "down", "--dir", d], timeout=60)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(len(pids), 4)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
