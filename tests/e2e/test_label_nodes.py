"""powerctl label nodes against the real kube-apiserver."""
import os
import unittest
import uuid

from e2e_support import ClusterTest, powerctl


class LabelNodesTest(ClusterTest):
    def setUp(self):
        super().setUp()
        tag = uuid.uuid4().hex[:6]
        self.nodes = [f"label-{tag}-{i}" for i in range(3)]
        for i, name in enumerate(self.nodes):
            self.cluster.create_node(name, labels={"powerctl.test/group": tag, "rack": "r1" if i < 2 else "r2"},
                                     managed=False)
            self.addCleanup(self.cluster.delete_node, name)
        self.tag = tag
        self.kc = ["--kubeconfig", self.cluster.kubeconfig]

    def labels(self, name):
        status, node = self.cluster.api("GET", f"/api/v1/nodes/{name}")
        self.assertEqual(status, 200)
        return node["metadata"].get("labels", {})

    def test_several_nodes_by_name(self):
        r = powerctl("label", "nodes", *self.nodes[:2], *self.kc, "--ambient", "18:35", "--cpu1", "30:90",
                     "--cpu2", "30.5:90", "--model-host", "tfs.power.svc", "--model-port", "8500",
                     "--model-name", "power")
        self.assertEqual(r.stdout.splitlines(), [f"node/{n} labeled" for n in self.nodes[:2]])
        for n in self.nodes[:2]:
            l = self.labels(n)
            self.assertEqual((l["ambient/min"], l["ambient/max"]), ("18", "35"))
            self.assertEqual((l["cpu2/min"], l["cpu2/max"]), ("30.5", "90"))
            self.assertEqual(l["tensorflow/port"], "8500")
        self.assertNotIn("ambient/min", self.labels(self.nodes[2]))
        again = powerctl("label", "nodes", *self.nodes[:2], *self.kc, "--ambient", "18:35")
        self.assertEqual(again.stdout.splitlines(), [f"node/{n} unchanged" for n in self.nodes[:2]])

    def test_power_curve_annotation(self):
        curve = "100,144,159,172,184,196,207,217,227,236,246"
        r = powerctl("label", "nodes", *self.nodes[:2], *self.kc, "--power-curve", curve)
        self.assertEqual(r.returncode, 0, r.stderr)
        for n in self.nodes[:2]:
            status, node = self.cluster.api("GET", f"/api/v1/nodes/{n}")
            self.assertEqual(node["metadata"]["annotations"]["powerctl.io/power-curve"], curve)
        bad = powerctl("label", "nodes", self.nodes[2], *self.kc, "--power-curve",
                       "100,144,159,172,120,196,207,217,227,236,246", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("falls from 172 W at 30 % to 120 W at 40 %", bad.stderr)
        status, node = self.cluster.api("GET", f"/api/v1/nodes/{self.nodes[2]}")
        self.assertNotIn("powerctl.io/power-curve", node["metadata"].get("annotations", {}))

    def test_selector(self):
        r = powerctl("label", "nodes", "-l", f"powerctl.test/group={self.tag},rack=r2", *self.kc, "--ambient", "10:30")
        self.assertEqual(r.stdout.splitlines(), [f"node/{self.nodes[2]} labeled"])
        self.assertEqual(self.labels(self.nodes[2])["ambient/max"], "30")
        none = powerctl("label", "nodes", "-l", "rack=nowhere", *self.kc, "--ambient", "10:30", check=False)
        self.assertEqual(none.returncode, 1)

    def test_bad_ranges_touch_no_node(self):
        for bad in ("35:18", "20:20", "a:30", "20", "-5:30"):
            r = powerctl("label", "nodes", *self.nodes, *self.kc, "--cpu1", "30:90", "--ambient", bad, check=False)
            self.assertEqual(r.returncode, 2, f"{bad}: {r.stderr}")
            self.assertIn("--ambient", r.stderr)
        r = powerctl("label", "nodes", *self.nodes, *self.kc, "--model-port", "70000", check=False)
        self.assertEqual(r.returncode, 2)
        for n in self.nodes:
            self.assertNotIn("cpu1/min", self.labels(n))

    def test_existing_value_needs_overwrite(self):
        powerctl("label", "nodes", self.nodes[0], *self.kc, "--ambient", "18:35")
        r = powerctl("label", "nodes", *self.nodes[:2], *self.kc, "--ambient", "20:40", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--overwrite", r.stderr)
        self.assertIn(f"node/{self.nodes[0]}: ambient/max is 35", r.stderr)
        self.assertNotIn("ambient/max", self.labels(self.nodes[1]))  # nothing half-applied
        ok = powerctl("label", "nodes", *self.nodes[:2], *self.kc, "--ambient", "20:40", "--overwrite")
        self.assertEqual(ok.returncode, 0)
        self.assertEqual(self.labels(self.nodes[0])["ambient/max"], "40")
        self.assertEqual(self.labels(self.nodes[1])["ambient/max"], "40")

    def test_unknown_node_and_dry_run(self):
        r = powerctl("label", "nodes", self.nodes[0], "no-such-node", *self.kc, "--ambient", "18:35", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no-such-node", r.stderr)
        self.assertNotIn("ambient/min", self.labels(self.nodes[0]))
        dry = powerctl("label", "nodes", self.nodes[0], *self.kc, "--ambient", "18:35", "--dry-run=server")
        self.assertIn("(server dry run)", dry.stdout)
        self.assertNotIn("ambient/min", self.labels(self.nodes[0]))


if __name__ == "__main__":
    unittest.main()
