"""powerctl simulate --export-snapshot against the real kube-apiserver, and the exported
snapshot loaded back into simulate."""
import json
import os
import tempfile
import unittest
import uuid

import yaml

from e2e_support import ClusterTest, powerctl


class SimulateExportTest(ClusterTest):
    def setUp(self):
        super().setUp()
        tag = uuid.uuid4().hex[:6]
        self.node = f"sim-{tag}"
        self.cluster.create_node(self.node, cpu="6", memory="24Gi", pods="40",
                                 labels={"ambient/min": "10", "ambient/max": "40"},
                                 annotations={"powerctl.io/idle-watts": "90",
                                              "powerctl.io/max-watts": "310"})
        self.addCleanup(self.cluster.delete_node, self.node)
        self.pod = f"sim-pod-{tag}"
        # Bound directly (spec.nodeName), as a pod the scheduler already placed.
        status, body = self.cluster.api("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": self.pod, "namespace": "default"},
            "spec": {"nodeName": self.node, "containers": [
                {"name": "app", "image": "registry.k8s.io/pause:3.2",
                 "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}}]}})
        self.assertIn(status, (200, 201), body)
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/default/pods/{self.pod}")
        self.tmp = tempfile.mkdtemp(prefix="powerctl-sim-")
        self.kc = ["--kubeconfig", self.cluster.kubeconfig]

    def test_export_then_simulate(self):
        path = os.path.join(self.tmp, "snapshot.yaml")
        r = powerctl("simulate", "--export-snapshot", path, *self.kc)
        self.assertIn("wrote", r.stderr)
        with open(path) as f:
            doc = yaml.safe_load(f)
        self.assertEqual(doc["kind"], "ClusterSnapshot")
        nodes = {n["name"]: n for n in doc["nodes"]}
        self.assertIn(self.node, nodes)
        mine = nodes[self.node]
        self.assertEqual(mine["cpu"], "6000m")
        self.assertEqual(mine["pods"], 40)
        self.assertEqual(mine["annotations"]["powerctl.io/idle-watts"], "90")
        self.assertEqual(mine["labels"]["ambient/max"], "40")
        # Each pod keeps its namespace (consolidate reads it, with owners, labels and volumes).
        pods = {(p.get("namespace"), p["name"]): p for p in mine.get("existingPods", [])}
        self.assertIn(("default", self.pod), pods)
        self.assertEqual(pods[("default", self.pod)]["containers"][0]["cpu"], "1500m")

        sim = powerctl("simulate", "--cluster", path, "--pods", "20", "--seeds", "2",
                       "--load", "100", "-o", "json")
        result = json.loads(sim.stdout)
        self.assertEqual(result["nodes"], len(doc["nodes"]))
        self.assertEqual({s["scorer"] for s in result["summary"]},
                         {"powerctl", "default", "minimizepower", "peaks"})
        self.assertEqual(result["runs"][0]["pods"], 20)

    def test_export_needs_a_cluster(self):
        r = powerctl("simulate", "--export-snapshot", "-", "--kubeconfig",
                     os.path.join(self.tmp, "missing.kubeconfig"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
