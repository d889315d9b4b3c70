"""powerctl generate/apply/delete lb and doctor's lb-agent check on the real kube-apiserver 1.20.

The manifests pass a server-side dry run for 1.20 and the newest version; the DaemonSet really
rolls out (kube-controller-manager creates a pod per node, kube-scheduler binds them, the fake
kubelet reports every pod bound to its nodes Running and Ready, DaemonSet pods included) and
`apply --wait` waits for it; the agent's ServiceAccount gets exactly its read-only rights; doctor
reads an agent's /status through the real pod proxy (a node whose address is this machine's,
where the test serves the agent's /status); delete removes everything, cluster-scoped RBAC too.
"""
import json
import os
import unittest

import cluster as cl
from e2e_support import ClusterTest, JsonDocumentServer, powerctl
from metrics_apiservice import routable_address

NS = "lb-e2e"
NEWEST = "1.37"
AGENT = "powerctl-lb-agent"
ROLE = f"powerctl:lb-agent:{NS}"
DS_PATH = f"/apis/apps/v1/namespaces/{NS}/daemonsets/{AGENT}"
PATHS = [f"/api/v1/namespaces/{NS}/serviceaccounts/{AGENT}",
         f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{ROLE}",
         f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{ROLE}",
         f"/api/v1/namespaces/{NS}/configmaps/{AGENT}-config",
         DS_PATH]
OBJECTS = [f"serviceaccount/{AGENT}", f"clusterrole/{ROLE}", f"clusterrolebinding/{ROLE}",
           f"configmap/{AGENT}-config", f"daemonset/{AGENT}"]


def config_text(ops_port=9448):
    return f"""
namespace: {NS}
extender:
  image: registry.example.com/powerctl:0.1.0
lb:
  opsPort: {ops_port}
"""


def agent_status(node, last_error="", services=()):
    return {"apiVersion": "powerctl.io/v1alpha1", "kind": "LbAgentStatus", "node": node,
            "mode": "nftables", "synced": True, "lastSync": "2026-11-25T15:00:00Z",
            "lastError": last_error, "services": list(services)}


class LbDeployTest(ClusterTest):
    def setUp(self):
        super().setUp()
        self.addCleanup(self._delete)

    def _write_config(self, ops_port=9448):
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write(config_text(ops_port))
        self.admin = ["--kubeconfig", self.cluster.kubeconfig, "-c", self.config]

    def _delete(self):
        if hasattr(self, "admin"):
            powerctl("delete", "namespace", "lb", *self.admin, "--wait", "--timeout", "2m", check=False)

    def _agent_pods(self):
        status, pods = self.cluster.api(
            "GET", f"/api/v1/namespaces/{NS}/pods",
            query={"labelSelector": "app.kubernetes.io/component=lb-agent"})
        self.assertEqual(status, 200, pods)
        return pods["items"]

    def _node_names(self):
        status, nodes = self.cluster.api("GET", "/api/v1/nodes")
        self.assertEqual(status, 200, nodes)
        return sorted(n["metadata"]["name"] for n in nodes["items"])

    def test_1_server_dry_run_accepts_the_manifests_for_1_20_and_the_newest_version(self):
        self._write_config()
        powerctl("apply", "namespace", *self.admin)
        for version in ("1.20", NEWEST):
            r = powerctl("apply", "lb", *self.admin, "--kube-version", version, "--dry-run=server")
            self.assertEqual(r.stdout.splitlines(), [f"{o} created (server dry run)" for o in OBJECTS],
                             f"{version}: {r.stderr}")
        for path in PATHS:
            status, _ = self.cluster.api("GET", path)
            self.assertEqual(status, 404, f"a server dry run persisted {path}")

    def test_2_apply_waits_for_the_daemonset_and_delete_removes_everything(self):
        self._write_config()
        r = powerctl("apply", "namespace", "lb", *self.admin, "--wait", "--timeout", "2m")
        self.assertEqual(r.stdout.splitlines(), [f"namespace/{NS} created"] + [f"{o} created" for o in OBJECTS])
        self.assertIn("waiting for rollout: daemonset/powerctl-lb-agent", r.stderr)

        # Rolled out: one Ready agent on every node, in the node's network namespace.
        status, ds = self.cluster.api("GET", DS_PATH)
        self.assertEqual(status, 200, ds)
        nodes = self._node_names()
        self.assertEqual(ds["status"]["desiredNumberScheduled"], len(nodes))
        self.assertEqual(ds["status"]["numberAvailable"], len(nodes))
        pods = self._agent_pods()
        self.assertEqual(sorted(p["spec"]["nodeName"] for p in pods), nodes)
        for p in pods:
            self.assertTrue(p["spec"]["hostNetwork"])
            self.assertEqual(p["status"]["podIP"], p["status"]["hostIP"])
            self.assertEqual(p["spec"]["priorityClassName"], "system-node-critical")
            c = p["spec"]["containers"][0]
            self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"], "add": ["NET_ADMIN"]})
            self.assertEqual(c["securityContext"]["runAsUser"], 0)
            self.assertEqual(c["ports"][0]["hostPort"], 9448)  # hostNetwork: the server sets it

        # Idempotent.
        again = powerctl("apply", "lb", *self.admin, "--wait")
        self.assertEqual(again.stdout.splitlines(), [f"{o} unchanged" for o in OBJECTS])
        self.assertIn("nothing changed", again.stderr)

        # The ServiceAccount reads Services, EndpointSlices and Nodes, and nothing else.
        token = self.cluster.service_account_token(NS, AGENT, create=False)
        for path in ("/api/v1/services", "/apis/discovery.k8s.io/v1beta1/endpointslices", "/api/v1/nodes"):
            status, body = self.cluster.api("GET", path, token=token)
            self.assertEqual(status, 200, f"{path}: {body}")
        for path in ("/api/v1/pods", "/api/v1/secrets", f"/api/v1/namespaces/{NS}/configmaps"):
            status, _ = self.cluster.api("GET", path, token=token)
            self.assertEqual(status, 403, path)
        status, _ = self.cluster.api("POST", "/api/v1/namespaces/default/services", token=token, body={
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb-e2e-denied"},
            "spec": {"ports": [{"port": 80}]}})
        self.assertEqual(status, 403)

        # A node without a kubelet gets an agent too (every taint is tolerated), which never
        # starts: --wait says which DaemonSet waits and why.
        self.cluster.create_node("lb-e2e-no-kubelet", managed=False)
        self.addCleanup(self.cluster.delete_node, "lb-e2e-no-kubelet")
        self.cluster.wait_for(lambda: any(p["spec"].get("nodeName") == "lb-e2e-no-kubelet"
                                          for p in self._agent_pods()),
                              timeout=60, what="an agent pod bound to lb-e2e-no-kubelet")
        self.cluster.wait_for(
            lambda: self.cluster.api("GET", DS_PATH)[1]["status"].get("desiredNumberScheduled") == len(nodes) + 1,
            timeout=60, what="the DaemonSet's status counting lb-e2e-no-kubelet")
        late = powerctl("apply", "lb", *self.admin, "--wait", "--timeout", "5s", check=False)
        self.assertEqual(late.returncode, 1, late.stderr)
        self.assertIn("timed out after 5s waiting for rollout; daemonset/powerctl-lb-agent "
                      f"{len(nodes)}/{len(nodes) + 1} available", late.stderr)
        self.cluster.delete_node("lb-e2e-no-kubelet")

        # delete lb removes the agent's objects, the cluster-scoped ones too, and only those.
        deleted = powerctl("delete", "lb", *self.admin, "--wait", "--timeout", "2m")
        self.assertEqual(deleted.stdout.splitlines(), [
            f"daemonset/{AGENT} deleted", f"configmap/{AGENT}-config deleted",
            f"clusterrolebinding/{ROLE} deleted", f"clusterrole/{ROLE} deleted",
            f"serviceaccount/{AGENT} deleted"])
        for path in PATHS:
            status, _ = self.cluster.api("GET", path)
            self.assertEqual(status, 404, path)
        status, _ = self.cluster.api("GET", f"/api/v1/namespaces/{NS}")
        self.assertEqual(status, 200, "delete lb removed the namespace")

    def test_3_doctor_reads_each_agents_status_through_the_pod_proxy(self):
        addr = routable_address()
        if addr is None:
            self.skipTest("no non-loopback IPv4 address: the API server refuses to proxy to loopback")
        fake = JsonDocumentServer(addr, "/status")
        self.addCleanup(fake.close)
        self._write_config(fake.port)
        # A node whose InternalIP is this machine: its agent pod (hostNetwork) gets that address,
        # so the API server's proxy to POD:PORT reaches the fake agent.
        node = cl.node_manifest("lb-e2e-local")
        node["status"]["addresses"] = [{"type": "InternalIP", "address": addr},
                                       {"type": "Hostname", "address": "lb-e2e-local"}]
        self.cluster.request("POST", "/api/v1/nodes", node)
        self.addCleanup(self.cluster.delete_node, "lb-e2e-local")
        self.cluster.wait_node_ready("lb-e2e-local")
        powerctl("apply", "namespace", "lb", *self.admin, "--wait", "--timeout", "2m")
        local_pod = next(p for p in self._agent_pods() if p["spec"]["nodeName"] == "lb-e2e-local")
        self.assertEqual(local_pod["status"]["podIP"], addr)

        fake.document = agent_status("lb-e2e-local", last_error="Error: Could not process rule: No such file")
        r = powerctl("doctor", *self.admin, "-o", "json", check=False, timeout=300)
        check = {c["id"]: c for c in json.loads(r.stdout)["checks"]}["lb-agent"]
        self.assertEqual(check["status"], "FAIL", check)
        self.assertIn("node lb-e2e-local: programming failed: kube-proxy carries the traffic: "
                      "Error: Could not process rule: No such file", check["message"])
        self.assertEqual(check["fix"], f"kubectl -n {NS} logs {local_pod['metadata']['name']}")
        self.assertEqual(r.returncode, 3)
        self.assertIn("/status", fake.paths)

        fake.document = agent_status("lb-e2e-local", services=[
            {"namespace": "shop", "name": "web", "state": "balanced", "reason": "", "ports": [
                {"port": 80, "protocol": "TCP", "endpoints": [
                    {"address": "10.1.0.1", "port": 8080, "node": "lb-e2e-local", "weight": 100,
                     "basis": "predicted"}]}]},
            {"namespace": "shop", "name": "legacy", "state": "skipped", "reason": "IPv6 ClusterIP",
             "ports": []}])
        r = powerctl("doctor", *self.admin, "-o", "json", check=False, timeout=300)
        check = {c["id"]: c for c in json.loads(r.stdout)["checks"]}["lb-agent"]
        self.assertEqual(check["status"], "WARN", check)
        self.assertTrue(check["message"].startswith("1 node balancing 1 Service"), check["message"])
        self.assertIn("Services skipped, kube-proxy balances them: shop/legacy (IPv6 ClusterIP)",
                      check["message"])
        # The other nodes' agents are fake kubelet pods at addresses nobody serves.
        self.assertIn("/status not readable through the API server", check["message"])


if __name__ == "__main__":
    unittest.main()
