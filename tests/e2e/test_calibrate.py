"""`label nodes --from-prometheus` and `calibrate`: the powerctl binary against the real
kube-apiserver and a real Prometheus holding a backfilled week of synthetic history."""
import json
import os
import shutil
import tempfile
import unittest
import uuid

import prometheus_history as ph
from e2e_support import ClusterTest, powerctl


@unittest.skipUnless(ph.available(), "prometheus and promtool are not installed")
class CalibrateTest(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tag = uuid.uuid4().hex[:6]
        cls.synthetic = [
            ph.SyntheticNode(f"cal-{tag}-a", idle=110, max=380, curve=0.9),
            ph.SyntheticNode(f"cal-{tag}-b", sensors=("Inlet Temp", "CPU1 Temp", "CPU2 Temp"), offset=2,
                             idle=95, max=300, curve=1.4),
        ]
        cls.prom_dir = tempfile.mkdtemp(prefix="powerctl-e2e-prom-")
        cls.prom = ph.BackfilledPrometheus(cls.prom_dir, cls.synthetic).start()

    @classmethod
    def tearDownClass(cls):
        cls.prom.stop()
        shutil.rmtree(cls.prom_dir, True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.names = [n.name for n in self.synthetic]
        for name in self.names:
            self.cluster.create_node(name, managed=False)
            self.addCleanup(self.cluster.delete_node, name)
        # A node that Prometheus has never heard of.
        self.silent = f"{self.names[0]}-silent"
        self.cluster.create_node(self.silent, managed=False)
        self.addCleanup(self.cluster.delete_node, self.silent)
        self.kc = ["--kubeconfig", self.cluster.kubeconfig, "--prometheus-url", self.prom.url]

    def metadata(self, name):
        status, node = self.cluster.api("GET", f"/api/v1/nodes/{name}")
        self.assertEqual(status, 200)
        return node["metadata"]

    def test_label_nodes_from_prometheus(self):
        r = powerctl("label", "nodes", *self.names, *self.kc, "--from-prometheus", "--window", "7d")
        self.assertIn(f"node/{self.names[0]} labeled", r.stdout)
        self.assertIn('ambient 18:35 from sensor "Ambient"', r.stdout)
        self.assertIn('ambient 20:37 from sensor "Inlet Temp"', r.stdout)
        a = self.metadata(self.names[0])["labels"]
        self.assertEqual((a["ambient/min"], a["ambient/max"]), ("18", "35"))
        self.assertEqual((a["cpu1/min"], a["cpu1/max"]), ("30", "81"))
        self.assertEqual((a["cpu2/min"], a["cpu2/max"]), ("30", "71"))
        b = self.metadata(self.names[1])["labels"]
        self.assertEqual((b["ambient/min"], b["ambient/max"]), ("20", "37"))
        self.assertEqual((b["cpu2/min"], b["cpu2/max"]), ("32", "73"))

        # A node without history fails the whole command: nothing is changed.
        r = powerctl("label", "nodes", self.names[0], self.silent, *self.kc, "--from-prometheus", "--overwrite",
                     "--model-host", "tfs.power.svc", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"node/{self.silent}: no ambient history", r.stderr)
        self.assertNotIn("tensorflow/host", self.metadata(self.names[0])["labels"])
        r = powerctl("label", "nodes", self.names[0], self.silent, *self.kc, "--from-prometheus", "--overwrite",
                     "--skip-missing")
        self.assertIn(f"node/{self.silent} skipped: no ambient history", r.stdout)
        self.assertNotIn("ambient/min", self.metadata(self.silent).get("labels", {}))

    def test_calibrate_writes_the_fitted_model(self):
        dry = powerctl("calibrate", *self.names, *self.kc, "--dry-run=server", "-o", "json")
        doc = json.loads(dry.stdout)
        self.assertTrue(doc["written"])
        self.assertEqual([n["result"] for n in doc["nodes"]], ["calibrated (server dry run)"] * 2)
        self.assertNotIn("powerctl.io/idle-watts", self.metadata(self.names[0]).get("annotations", {}))

        r = powerctl("calibrate", *self.names, *self.kc, "--window", "7d", "--step", "5m")
        self.assertIn("NODE", r.stdout.splitlines()[0])
        for want in self.synthetic:
            ann = self.metadata(want.name)["annotations"]
            self.assertAlmostEqual(float(ann["powerctl.io/idle-watts"]), want.idle, delta=6)
            self.assertAlmostEqual(float(ann["powerctl.io/max-watts"]), want.max, delta=10)
            self.assertAlmostEqual(float(ann["powerctl.io/curve"]), want.curve, delta=0.1)
        # The annotations are what the built-in model reads: label nodes sees them as the node's.
        bad = powerctl("label", "nodes", self.names[0], "--kubeconfig", self.cluster.kubeconfig,
                       "--idle-watts", "500", "--overwrite", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("max-watts must be greater than idle-watts", bad.stderr)

        # A node without data is refused, and then nothing is written.
        r = powerctl("calibrate", self.names[0], self.silent, *self.kc, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no node was changed", r.stderr)
        self.assertIn(f"node/{self.silent}: no power or CPU history", r.stderr)
        self.assertNotIn("powerctl.io/idle-watts", self.metadata(self.silent).get("annotations", {}))


if __name__ == "__main__":
    unittest.main()
