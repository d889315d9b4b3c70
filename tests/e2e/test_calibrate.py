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

CURVE = [50, 120, 140, 160, 180, 200, 220, 240, 270, 320, 420]
POWER_CURVE = "powerctl.io/power-curve"


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
        # A modern server's shape, which no single exponent follows: a steep step from idle to
        # 10 %, then nearly linear, then a jump near 100 %; run at SPECpower's graduated loads.
        cls.curve_node = ph.SyntheticNode(f"cal-{tag}-c", power_curve=CURVE, load=ph.graduated_utilisation)
        cls.synthetic.append(cls.curve_node)
        cls.prom_dir = tempfile.mkdtemp(prefix="powerctl-e2e-prom-")
        cls.prom = ph.BackfilledPrometheus(cls.prom_dir, cls.synthetic).start()

    @classmethod
    def tearDownClass(cls):
        cls.prom.stop()
        shutil.rmtree(cls.prom_dir, True)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.names = [n.name for n in self.synthetic if n is not self.curve_node]
        for name in self.names + [self.curve_node.name]:
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
        self.assertIn("FORM", r.stdout.splitlines()[0])
        self.assertIn("COVERED", r.stdout.splitlines()[0])
        # The history spans utilisation 0.05-0.95: about 90 % covered, printed as 89 % when the
        # 7-day window's edge cuts a sample off (2015 of 2016 in one CI run).
        self.assertRegex(r.stdout, rf"\n{self.names[0]} +\d+ +0\.\d\d-0\.9\d +(89|9\d)% 9/11 +curve ")
        self.assertIn("Measured power: ipmi (the whole server (ipmi_exporter's DCMI reading))", r.stdout)
        self.assertIn("Power curves (W at each load; * = filled, not measured):", r.stdout)
        for want in self.synthetic[:2]:
            ann = self.metadata(want.name)["annotations"]
            self.assertAlmostEqual(float(ann["powerctl.io/idle-watts"]), want.idle, delta=6)
            self.assertAlmostEqual(float(ann["powerctl.io/max-watts"]), want.max, delta=10)
            self.assertAlmostEqual(float(ann["powerctl.io/curve"]), want.curve, delta=0.1)
            # The default form writes the measured curve too; these nodes swept 5..95 %, so
            # the 0 % end was never measured and comes from the exponent fit.
            points = [float(w) for w in ann[POWER_CURVE].split(",")]
            self.assertEqual(len(points), 11)
            self.assertAlmostEqual(points[0], want.idle, delta=6)
            for k in range(1, 10):
                self.assertAlmostEqual(points[k], want.watts(k / 10), delta=6, msg=f"{want.name} at {k * 10} %")
        doc = json.loads(powerctl("calibrate", *self.names, *self.kc, "--dry-run=client", "-o", "json").stdout)
        for node in doc["nodes"]:
            self.assertEqual(node["form"], "curve")
            self.assertEqual(node["bins"][0], {"load": 0, "samples": 0, "meanWatts": None,
                                               "watts": node["powerCurve"][0], "source": "filled"})
            self.assertEqual([b["source"] for b in node["bins"][1:10]], ["measured"] * 9)
        # The annotations are what the built-in model reads: label nodes sees them as the node's.
        # (A power-curve replaces idle-watts and max-watts, so first the exponent form alone.)
        powerctl("calibrate", self.names[0], *self.kc, "--form", "exponent")
        self.assertNotIn(POWER_CURVE, self.metadata(self.names[0])["annotations"])
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

    def test_calibrate_fits_a_measured_power_curve(self):
        node = self.curve_node.name
        r = powerctl("calibrate", node, *self.kc, "-o", "wide")
        self.assertIn(f"{node}: power curve R2 ", r.stdout)
        self.assertRegex(r.stdout, r"LOAD +SAMPLES +MEAN W +WATTS +SOURCE")
        self.assertRegex(r.stdout, r"\n  100% +\d+ +[\d.]+ +[\d.]+ +measured\n")
        ann = self.metadata(node)["annotations"]
        points = [float(w) for w in ann[POWER_CURVE].split(",")]
        for k, want in enumerate(CURVE):
            self.assertAlmostEqual(points[k], want, delta=8, msg=f"{k * 10} %: {ann[POWER_CURVE]}")
        # The exponent form's annotations go beside it, for tools that read only those.
        for key in ("idle-watts", "max-watts", "curve"):
            self.assertIn(f"powerctl.io/{key}", ann)

        doc = json.loads(powerctl("calibrate", node, *self.kc, "-o", "json").stdout)["nodes"][0]
        self.assertEqual(doc["annotations"][POWER_CURVE], ann[POWER_CURVE])
        self.assertEqual([b["load"] for b in doc["bins"]], list(range(0, 101, 10)))
        self.assertEqual({b["source"] for b in doc["bins"]}, {"measured"})
        self.assertTrue(all(b["samples"] >= 100 for b in doc["bins"]), doc["bins"])
        self.assertGreater(doc["curveR2"], 0.99)
        # One exponent cannot follow this shape: the curve's residual is well under half of its.
        self.assertLess(doc["curveRmseWatts"] * 2, doc["rmseWatts"])

        # --form exponent writes the exponent fit and removes the curve, which would override it.
        dry = json.loads(powerctl("calibrate", node, *self.kc, "--form", "exponent", "--dry-run=client",
                                  "-o", "json").stdout)["nodes"][0]
        self.assertEqual(dry["removedAnnotations"], [POWER_CURVE])
        self.assertIn(POWER_CURVE, self.metadata(node)["annotations"])
        powerctl("calibrate", node, *self.kc, "--form", "exponent", "--min-r2", "0.5")
        ann = self.metadata(node)["annotations"]
        self.assertNotIn(POWER_CURVE, ann)
        self.assertIn("powerctl.io/curve", ann)

        bad = powerctl("calibrate", node, *self.kc, "--form", "spline", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn('--form "spline": must be curve or exponent', bad.stderr)

    def test_calibrate_reads_the_chosen_power_source(self):
        # This history has only the DCMI gauge: the counter sources find nothing and say which.
        r = powerctl("calibrate", self.names[0], *self.kc, "--power-source", "rapl", "-o", "json", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual((doc["powerSource"], doc["wholeServer"]), ("rapl", False))
        self.assertEqual(doc["nodes"][0]["refused"], "no rapl power history in Prometheus for this node")
        # A custom expression, and --power-metric as the gauge it always was.
        doc = json.loads(powerctl("calibrate", self.names[0], *self.kc, "--dry-run=client", "-o", "json",
                                  "--power-source", "promql", "--power-query",
                                  "ipmi_dcmi_power_consumption_watts * 1").stdout)
        self.assertEqual(doc["powerSource"], "promql")
        self.assertAlmostEqual(doc["nodes"][0]["maxWatts"], self.synthetic[0].max, delta=10)
        doc = json.loads(powerctl("calibrate", self.names[0], *self.kc, "--dry-run=client", "-o", "json",
                                  "--power-metric", "ipmi_dcmi_power_consumption_watts").stdout)
        self.assertEqual(doc["powerSource"], "ipmi")
        self.assertAlmostEqual(doc["nodes"][0]["idleWatts"], self.synthetic[0].idle, delta=6)

        bad = powerctl("calibrate", self.names[0], *self.kc, "--power-source", "redfish", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn('--power-source "redfish": must be one of ipmi, kepler, kepler-0.7, rapl, promql',
                      bad.stderr)
        bad = powerctl("calibrate", self.names[0], *self.kc, "--power-source", "kepler", "--power-metric", "x",
                       check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--power-metric names a gauge in watts", bad.stderr)
        bad = powerctl("calibrate", self.names[0], *self.kc, "--power-source", "promql", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--power-query: must be set with --power-source promql", bad.stderr)


if __name__ == "__main__":
    unittest.main()
