"""The generated RBAC and out-of-cluster scheduler configuration work for real: kube-scheduler 1.20,
running as the generated ServiceAccount (a TokenRequest token), schedules a pod, holds its Lease,
and calls an extender over mutual TLS with the generated certificates."""
import os
import subprocess
import unittest
import uuid

import cluster as cl
from e2e_support import ClusterTest, load_docs, powerctl
from fake_extender import FakeExtender

NS = "rbac-e2e"
SCHEDULER = "rbac-e2e-scheduler"


class SchedulerRbacTest(ClusterTest):
    def test_scheduler_runs_as_generated_service_account_and_calls_extender_over_mtls(self):
        healthz_port, = cl.free_ports(1)  # v1beta1 always opens this loopback listener
        common = ["-n", NS, "--set", f"scheduler.name={SCHEDULER}", "--kube-version", "1.20",
                  "--set", f"scheduler.legacyHealthzPort={healthz_port}"]
        for obj in load_docs(powerctl("generate", "namespace", "rbac", *common).stdout):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)

        # The scheduler's identity: a token of the generated ServiceAccount, nothing more.
        token = self.cluster.service_account_token(NS, SCHEDULER)
        kubeconfig = self.cluster.write_kubeconfig(os.path.join(self.tmp, "scheduler.kubeconfig"), token=token,
                                                   user=SCHEDULER)

        out = os.path.join(self.tmp, "out")
        tls = os.path.join(out, "tls")
        # The extender's port must be known before rendering the config: bind first, serve later.
        extender = FakeExtender()
        self.addCleanup(extender.stop)
        url = f"https://127.0.0.1:{extender.port}/scheduler"
        powerctl("generate", "scheduler", *common, "--out-of-cluster", "--kubeconfig", kubeconfig,
                 "--extender-url", url, "--output-dir", out)
        extender.start(os.path.join(tls, "server.crt"), os.path.join(tls, "server.key"),
                       client_ca=os.path.join(tls, "ca.crt"))
        secure_port, = cl.free_ports(1)
        bin_dir = cl.default_bin_dir()
        log_path = os.path.join(self.tmp, "kube-scheduler.log")
        argv = [os.path.join(bin_dir, "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
                f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                "--v=2"]
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name="kube-scheduler")

        pod_name = f"power-pod-{uuid.uuid4().hex[:6]}"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": pod_name, "namespace": NS},
               "spec": {"schedulerName": SCHEDULER,
                        "containers": [{"name": "c", "image": "registry.invalid/pause:1",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}
        status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
        self.assertEqual(status, 201, body)
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{pod_name}",
                        {"gracePeriodSeconds": 0})

        def bound():
            if proc.poll() is not None:
                raise cl.FatalWaitError(f"kube-scheduler exited {proc.returncode}:\n{cl.tail(log_path)}")
            s, p = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/pods/{pod_name}")
            return s == 200 and p["spec"].get("nodeName")
        self.cluster.wait_for(bound, timeout=60, what="pod bound by the power-aware scheduler")

        filters = extender.calls_of("filter")
        self.assertTrue(filters, "the extender was never called")
        self.assertTrue(all(cn == SCHEDULER for _, cn, _ in extender.calls), extender.calls)
        self.assertTrue(extender.calls_of("prioritize"), extender.calls)
        self.assertIn(len(filters[0][2]), (2, 3))  # node names (nodeCacheCapable)

        status, lease = self.cluster.api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{SCHEDULER}")
        self.assertEqual(status, 200, lease)
        self.assertTrue(lease["spec"].get("holderIdentity"))

        with open(log_path) as f:
            log_text = f.read()
        self.assertNotIn("forbidden", log_text.lower(), "the generated RBAC misses a permission")


if __name__ == "__main__":
    unittest.main()
