"""powerctl lb weights against the real kube-apiserver 1.20: a Service without a selector and an
EndpointSlice (discovery.k8s.io/v1beta1, the only version 1.20 serves) made here, with endpoints
on nodes whose built-in model annotations differ; CPU from a real Prometheus scraping a real
node_exporter (prometheus_stack.py). Without a selector neither the EndpointSlice controller nor
the mirroring controller (which follows Endpoints objects; there are none) touches the slice."""
import json
import os
import unittest
import uuid

import yaml

import prometheus_stack
from e2e_support import ClusterTest, powerctl

SLICES = "/apis/discovery.k8s.io/v1beta1/namespaces/{ns}/endpointslices"


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class LbWeightsTest(ClusterTest):
    def setUp(self):
        super().setUp()
        tag = self.tag = uuid.uuid4().hex[:6]
        self.ns = f"lbw-{tag}"
        self.cluster.request("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{self.ns}")
        # The built-in model without temperatures: delta = (max - idle) * 0.1 core / 8 cores.
        self.nodes = {}
        for suffix, max_watts, labels in (("a", 300, {}), ("b", 900, {}),
                                          ("c", 500, {"kubernetes.io/hostname": f"host-{tag}-c"}),
                                          ("d", 300, {})):
            name = f"lbw-{tag}-{suffix}"
            self.nodes[suffix] = name
            self.cluster.create_node(name, cpu="8", labels=labels, managed=False,
                                     annotations={"powerctl.io/idle-watts": "100",
                                                  "powerctl.io/max-watts": str(max_watts)})
            self.addCleanup(self.cluster.delete_node, name)
        # Node d is not scraped: no CPU telemetry, so no prediction.
        self.stack = prometheus_stack.PrometheusStack(self.nodes["a"], self.nodes["b"], self.nodes["c"])
        self.stack.__enter__()
        self.addCleanup(self.stack.stop)
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write(f"""apiVersion: powerctl.io/v1alpha1
kind: PowerctlConfig
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {self.stack.url}
  maxAge: 1m
""")
        self.args = ["--kubeconfig", self.cluster.kubeconfig, "-n", self.ns, "-c", self.config]

    def make_service(self, name, annotations=None, endpoints=()):
        self.cluster.request("POST", f"/api/v1/namespaces/{self.ns}/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}]}})
        eps = []
        for address, host, ready in endpoints:
            eps.append({"addresses": [address], "conditions": {"ready": ready},
                        "topology": {"kubernetes.io/hostname": host}})
        self.cluster.request("POST", SLICES.format(ns=self.ns), {
            "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
            "metadata": {"name": f"{name}-1",
                         "labels": {"kubernetes.io/service-name": name,
                                    "endpointslice.kubernetes.io/managed-by": "powerctl-e2e"}},
            "addressType": "IPv4",
            "ports": [{"name": "", "port": 8080, "protocol": "TCP"}],
            "endpoints": eps})

    def standard_endpoints(self):
        n = self.nodes
        # Endpoint 3 names node c by its kubernetes.io/hostname label, which is not its name.
        return [("10.1.0.1", n["a"], True), ("10.1.0.2", n["b"], True), ("10.1.0.3", f"host-{self.tag}-c", True),
                ("10.1.0.4", n["d"], True), ("10.1.0.5", n["a"], False)]

    def wait_for_telemetry(self):
        self.stack.wait_for_cpu()

    def test_weights_follow_the_watts_a_request_adds(self):
        self.make_service("web", endpoints=self.standard_endpoints())
        self.wait_for_telemetry()
        r = powerctl("lb", "weights", "web", "-o", "json", *self.args, check=False)
        self.assertEqual(r.returncode, 3, r.stderr)  # node d has no prediction
        self.assertIn("1 endpoint(s) not ready", r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["kind"], "ServiceWeights")
        self.assertEqual(doc["endpointSliceApi"], "discovery.k8s.io/v1beta1")
        self.assertEqual(doc["cpuPerRequest"], {"value": "100m", "cores": 0.1, "source": "lb.cpuPerRequest"})
        self.assertEqual(doc["notReadyEndpoints"], 1)
        self.assertIn("computed locally: CPU from Prometheus", doc["answeredBy"])
        by_address = {e["address"]: e for e in doc["endpoints"]}
        self.assertEqual(sorted(by_address), ["10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"])
        a, b, c, d = (by_address[f"10.1.0.{i}"] for i in range(1, 5))
        self.assertEqual(c["node"], self.nodes["c"])  # through the kubernetes.io/hostname label
        for item, delta in ((a, 2.5), (b, 10.0), (c, 5.0)):
            self.assertEqual(item["basis"], "predicted")
            self.assertAlmostEqual(item["deltaWatts"], delta, delta=0.01)
            self.assertAlmostEqual(item["prediction"]["deltaWatts"], delta, delta=0.01)
        # 100 * (2.5 + 0.1) / (delta + 0.1)
        self.assertEqual([a["weight"], c["weight"], b["weight"]], [100, 51, 26])
        self.assertEqual(d["weight"], 50)
        self.assertEqual(d["basis"], "unknown")
        self.assertIn("no CPU usage", d["reason"])
        self.assertIsNone(d["prediction"]["wattsNow"])

        table = powerctl("lb", "weights", "web", *self.args, check=False)
        self.assertEqual(table.returncode, 3, table.stderr)
        lines = table.stdout.splitlines()
        self.assertTrue(lines[0].startswith(f"Service {self.ns}/web: 100m CPU per request"), lines[0])
        self.assertEqual(lines[2].split()[:3], ["ENDPOINT", "NODE", "WATTS"])
        rows = {line.split()[0]: line.split() for line in lines[3:]}
        self.assertEqual(rows["10.1.0.1"][5], "100")
        self.assertEqual(rows["10.1.0.2"][5], "26")

        # The slice stays as made: no controller manages a selectorless Service's slices.
        slice_ = self.cluster.request("GET", SLICES.format(ns=self.ns) + "/web-1")
        self.assertEqual(len(slice_["endpoints"]), 5)

    def test_cpu_per_request_annotation_and_every_node_predicted(self):
        n = self.nodes
        self.make_service("api", annotations={"powerctl.io/cpu-per-request": "400m"},
                          endpoints=[("10.2.0.1", n["a"], True), ("10.2.0.2", n["b"], True)])
        self.wait_for_telemetry()
        r = powerctl("lb", "weights", "api", "-o", "yaml", *self.args)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(r.stdout)
        self.assertEqual(doc["cpuPerRequest"]["source"], "annotation powerctl.io/cpu-per-request")
        weights = {e["address"]: (e["weight"], e["deltaWatts"]) for e in doc["endpoints"]}
        self.assertAlmostEqual(weights["10.2.0.1"][1], 10.0, delta=0.05)
        self.assertAlmostEqual(weights["10.2.0.2"][1], 40.0, delta=0.05)
        self.assertEqual(weights["10.2.0.1"][0], 100)
        self.assertEqual(weights["10.2.0.2"][0], 25)  # 10.1 / 40.1

    def test_missing_service_and_no_endpoints(self):
        r = powerctl("lb", "weights", "nope", *self.args, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'service "{self.ns}/nope" not found', r.stderr)
        self.make_service("empty")
        r = powerctl("lb", "weights", "empty", *self.args, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("has no ready endpoints", r.stderr)
        bad = powerctl("lb", "weights", "empty", "-o", "name", *self.args, check=False)
        self.assertEqual(bad.returncode, 2)


if __name__ == "__main__":
    unittest.main()
