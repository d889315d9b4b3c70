"""powerctl predict against real components: the kube-apiserver, Prometheus scraping
node_exporter (real CPU counters, ipmi series through its textfile collector), metrics.k8s.io
through the API server's aggregation layer, and an extender ops port behind the API server's
service proxy."""
import json
import os
import socket
import unittest
import uuid

import cluster
import prometheus_stack
from e2e_support import ClusterTest, JsonDocumentServer, powerctl
from metrics_apiservice import MetricsApiService, routable_address

TEMPERATURES = {"Ambient": 23, "CPU1": 41, "CPU2": 44.5}
RANGES = {"ambient/min": "10", "ambient/max": "40", "cpu1/min": "20", "cpu1/max": "90",
          "cpu2/min": "20", "cpu2/max": "90"}


def builtin_watts(idle, peak, u, temps, curve=1.0, factor=0.1):
    t = sum(min(max(x, 0.0), 1.0) for x in temps) / 3
    return idle + (peak - idle) * min(max(u, 0.0), 1.0) ** curve * (1 + factor * t)


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class PredictTest(ClusterTest):
    def setUp(self):
        super().setUp()
        tag = uuid.uuid4().hex[:6]
        self.node = f"predict-{tag}-a"
        self.other = f"predict-{tag}-b"
        self.cluster.create_node(self.node, cpu="4", labels=RANGES, managed=False,
                                 annotations={"powerctl.io/idle-watts": "100", "powerctl.io/max-watts": "300"})
        self.addCleanup(self.cluster.delete_node, self.node)
        self.cluster.create_node(self.other, cpu="8", managed=False)
        self.addCleanup(self.cluster.delete_node, self.other)
        self.stack = prometheus_stack.PrometheusStack(self.node)
        self.stack.__enter__()
        self.addCleanup(self.stack.stop)
        self.stack.write_ipmi(TEMPERATURES, watts=180)
        self.namespace = f"predict-{tag}"
        self.kc = ["--kubeconfig", self.cluster.kubeconfig, "-n", self.namespace]

    def config(self, cpu_source="prometheus", predictor=""):
        path = os.path.join(self.tmp, "powerctl.yaml")
        with open(path, "w") as f:
            f.write(f"""apiVersion: powerctl.io/v1alpha1
kind: PowerctlConfig
{predictor}
telemetry:
  cpuSource: {cpu_source}
  temperatureSource: prometheus
  prometheusUrl: {self.stack.url}
  maxAge: 1m
""")
        return ["-c", path]

    def wait_for_telemetry(self):
        self.stack.wait_for_series(f'ipmi_temperature_celsius{{instance="{self.node}:9100"}}')
        self.stack.wait_for_series('rate(node_cpu_seconds_total{mode="idle"}[1m])')

    def check_node(self, item, cores_expected=None):
        self.assertEqual(item["node"], self.node)
        temps = item["temperatures"]
        self.assertEqual(temps["ambient"]["value"], 23)
        self.assertEqual(temps["cpu2"]["value"], 44.5)
        self.assertAlmostEqual(temps["ambient"]["normalized"], (23 - 10) / 30, places=6)
        self.assertAlmostEqual(temps["cpu1"]["normalized"], (41 - 20) / 70, places=6)
        cpu = item["cpu"]
        self.assertEqual(cpu["capacityCores"], 4)
        if cores_expected is not None:
            self.assertAlmostEqual(cpu["value"], cores_expected, places=6)
        self.assertGreaterEqual(cpu["value"], 0)
        # What the model gets: the measurement plus the requests of pods not yet measured.
        self.assertAlmostEqual(cpu["usedCores"], cpu["value"] + cpu["unmeasuredRequestCores"], places=6)
        self.assertAlmostEqual(cpu["fractionAfter"], min((cpu["usedCores"] + 0.5) / 4, 1), places=6)
        norm = [temps[k]["normalized"] for k in ("ambient", "cpu1", "cpu2")]
        # The model's inputs are float32, hence the tolerance.
        self.assertAlmostEqual(item["wattsNow"], builtin_watts(100, 300, cpu["fractionNow"], norm), delta=0.01)
        self.assertAlmostEqual(item["wattsAfter"], builtin_watts(100, 300, cpu["fractionAfter"], norm), delta=0.01)
        self.assertAlmostEqual(item["deltaWatts"], item["wattsAfter"] - item["wattsNow"], places=6)
        self.assertGreater(item["deltaWatts"], 0)
        self.assertLess(item["telemetryAgeSeconds"], 60)
        self.assertEqual(item["model"]["backend"], "builtin")
        # The node's model as its annotations give it, and the fill cost: for a power law with
        # exponent 1 the cheapest chord runs to full load, (max - idle) per unit of load.
        self.assertEqual(item["model"]["form"], "exponent", item["model"])
        self.assertEqual((item["model"]["idleWatts"], item["model"]["maxWatts"], item["model"]["exponent"]),
                         (100, 300, 1))
        self.assertAlmostEqual(item["fillWattsPerCore"], 200 * (1 + 0.1 * sum(norm) / 3) / 4, delta=0.01)

    def test_local_from_real_prometheus_and_node_exporter(self):
        self.wait_for_telemetry()
        r = powerctl("predict", self.node, self.other, "--cpu", "500m", "--source", "local", "-o", "json",
                     *self.kc, *self.config(), check=False)
        self.assertEqual(r.returncode, 3, r.stderr)  # the other node has no series
        doc = json.loads(r.stdout)
        self.assertFalse(doc["answeredBy"]["extender"])
        self.assertIn("computed locally", doc["answeredBy"]["description"])
        self.assertEqual(doc["cpuAdded"], 0.5)
        self.check_node(doc["nodes"][0])
        other = doc["nodes"][1]
        self.assertEqual(other["node"], self.other)
        self.assertIsNone(other["wattsNow"])
        self.assertIn("no CPU usage", other["error"])

        table = powerctl("predict", self.node, "--source", "local", *self.kc, *self.config())
        lines = table.stdout.splitlines()
        self.assertTrue(lines[0].startswith("Answered by: computed locally: CPU from Prometheus"), lines[0])
        self.assertEqual(lines[1].split()[:3], ["NODE", "CPU", "AMBIENT°C"])
        self.assertIn("+1 CPU", lines[1])
        row = lines[2].split()
        self.assertEqual(row[0], self.node)
        self.assertIn("23.0", row)
        self.assertIn("FILL W/CORE", lines[1])
        self.assertIn("exponent", row)

    def test_auto_falls_back_to_local_and_says_why(self):
        self.wait_for_telemetry()
        r = powerctl("predict", self.node, *self.kc, *self.config())
        self.assertIn("the extender did not answer", r.stderr)
        self.assertTrue(r.stdout.startswith("Answered by: computed locally"))
        only = powerctl("predict", self.node, "--source", "extender", *self.kc, *self.config(), check=False)
        self.assertEqual(only.returncode, 1)
        self.assertIn(f"extender {self.namespace}/powerctl-extender", only.stderr)

    def test_cpu_from_metrics_api_through_the_aggregator(self):
        self.wait_for_telemetry()
        # A pod bound to the node but not started: metrics.k8s.io cannot show it, and its
        # request is counted as the scores count it.
        name = f"{self.node}-bound"
        self.cluster.request("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": self.node, "automountServiceAccountToken": False,
                     "containers": [{"name": "c", "image": "powerctl",
                                     "resources": {"requests": {"cpu": "1"}}}]}})
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/default/pods/{name}")
        with MetricsApiService(self.cluster, nodes={self.node: {"cpu": "1500m", "memory": "2Gi"}}) as metrics:
            r = powerctl("predict", self.node, "--cpu", "500m", "--source", "local", "-o", "json", *self.kc,
                         *self.config("metrics-api"))
            doc = json.loads(r.stdout)
            self.assertIn("metrics.k8s.io", doc["answeredBy"]["description"])
            self.check_node(doc["nodes"][0], cores_expected=1.5)
            cpu = doc["nodes"][0]["cpu"]
            self.assertEqual((cpu["unmeasuredRequestCores"], cpu["unmeasuredPods"]), (1, 1), cpu)
            self.assertAlmostEqual(cpu["usedCores"], 2.5, places=6)
            self.assertAlmostEqual(cpu["fractionNow"], 2.5 / 4, places=6)
            self.assertTrue(metrics.requests(path_prefix="/apis/metrics.k8s.io/v1beta1/nodes"))
            wide = powerctl("predict", self.node, "--cpu", "500m", "--source", "local", "-o", "wide", *self.kc,
                            *self.config("metrics-api"))
            header, row = wide.stdout.splitlines()[1:3]
            self.assertEqual(header.split()[:6], ["NODE", "CPU", "MEASURED", "NOT", "YET", "MEASURED"])
            self.assertEqual(row.split()[1:6], ["2.50/4", "(62%)", "1.50", "1.00", "(1"], wide.stdout)
            # The node's measured power beside the prediction: the DCMI gauge node_exporter
            # serves for it (180 W), averaged over telemetry.powerRateWindow.
            self.assertRegex(header, r" WATTS +MEASURED W +\+0\.5 CPU ")
            watts_at = header.index("MEASURED W")
            self.assertEqual(row[watts_at:].split()[0], "180.0", wide.stdout)
            self.assertIn("MEASURED W: ipmi power from Prometheus", wide.stdout)

    def predict_json(self, *args, **kw):
        r = powerctl("predict", self.node, "--source", "local", "-o", "json", *self.kc, *self.config(**kw),
                     *args, check=False)
        self.assertIn(r.returncode, (0, 3), r.stderr)
        return r.returncode, json.loads(r.stdout)["nodes"][0]

    def test_failures_give_per_node_reasons(self):
        self.wait_for_telemetry()
        # A NaN sensor: the built-in model predicts with CPU1 taken as nominal and says so.
        self.stack.write_ipmi({"Ambient": 23, "CPU1": "NaN", "CPU2": 44.5})
        cl_wait = lambda: any(r["value"][1] == "NaN" for r in self.stack.query(
            f'ipmi_temperature_celsius{{instance="{self.node}:9100",name="CPU1"}}'))
        cluster.wait_for(cl_wait, 30, "the NaN sample in Prometheus")
        code, item = self.predict_json()
        self.assertEqual(code, 0)
        self.assertIsNone(item["temperatures"]["cpu1"]["value"])
        self.assertTrue(any("cpu1" in n and "nominal" in n for n in item["notes"]), item["notes"])
        self.assertIsNotNone(item["wattsNow"])
        # A model server needs every input: no number, a reason.
        grpc = "predictor:\n  backend: tfserving-grpc\n  timeout: 500ms\n  model:\n    host: 127.0.0.1\n"
        down_port = cluster.free_ports(1)[0]
        code, item = self.predict_json(predictor=grpc + f"    grpcPort: {down_port}")
        self.assertEqual(code, 3)
        self.assertIsNone(item["wattsNow"])
        self.assertIn("model input missing: no cpu1 temperature", item["error"])
        self.stack.write_ipmi(TEMPERATURES)
        cluster.wait_for(lambda: not cl_wait(), 30, "CPU1 to read a number again")
        # Model server down.
        code, item = self.predict_json(predictor=grpc + f"    grpcPort: {down_port}")
        self.assertEqual(code, 3)
        self.assertIsNone(item["wattsNow"])
        self.assertIn("unreachable", item["error"])
        # A server that accepts connections and never answers: the deadline ends the wait.
        hang = socket.socket()
        hang.bind(("127.0.0.1", 0))
        hang.listen(8)
        self.addCleanup(hang.close)
        code, item = self.predict_json(predictor=grpc + f"    grpcPort: {hang.getsockname()[1]}")
        self.assertEqual(code, 3)
        self.assertIsNone(item["wattsNow"])
        self.assertEqual(item["error"], "model server timed out")
        # Prometheus down: the whole CPU source fails, each node says so.
        self.stack.stop()
        r = powerctl("predict", self.node, "--source", "local", *self.kc, *self.config(), check=False)
        self.assertEqual(r.returncode, 3)
        self.assertIn("no CPU usage", r.stdout)

    def test_extender_answers_through_the_service_proxy(self):
        address = routable_address()  # skips when the machine has only loopback
        self.wait_for_telemetry()
        local = powerctl("predict", self.node, "--cpu", "500m", "--source", "local", "-o", "json", *self.kc,
                         *self.config())
        document = json.loads(local.stdout)
        del document["answeredBy"]
        ops = JsonDocumentServer(address, "/v1/predictions", document)
        self.addCleanup(ops.close)
        self.cluster.request("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{self.namespace}")
        self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "powerctl-extender"},
            "spec": {"ports": [{"name": "ops", "port": 8080, "protocol": "TCP", "targetPort": ops.port}]}})
        # The service proxy only dials endpoint addresses that are the IP of the Pod they name.
        pods = f"/api/v1/namespaces/{self.namespace}/pods"
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "powerctl-extender-0"},
                    "spec": {"nodeName": self.other, "automountServiceAccountToken": False,
                             "containers": [{"name": "extender", "image": "powerctl"}]}}

        def create_pod():  # a new namespace's default ServiceAccount appears a moment later
            status, body = self.cluster.api("POST", pods, manifest)
            return body if status == 201 else None
        pod = cluster.wait_for(create_pod, 30, "the pod (the namespace's default ServiceAccount)")
        pod["status"] = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}
        self.cluster.request("PUT", f"{pods}/powerctl-extender-0/status", pod)
        self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/endpoints", {
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "powerctl-extender"},
            "subsets": [{"addresses": [{"ip": address, "targetRef": {
                "kind": "Pod", "namespace": self.namespace, "name": "powerctl-extender-0"}}],
                         "ports": [{"name": "ops", "port": ops.port, "protocol": "TCP"}]}]})
        r = powerctl("predict", self.node, "--cpu", "500m", "-o", "json", *self.kc, *self.config())
        doc = json.loads(r.stdout)
        self.assertTrue(doc["answeredBy"]["extender"], r.stderr)
        self.assertIn("service proxy", doc["answeredBy"]["description"])
        self.check_node(doc["nodes"][0])
        self.assertEqual(ops.paths, [f"/v1/predictions?cpu=500m&node={self.node}"])
        table = powerctl("predict", self.node, "--cpu", "500m", "-o", "wide", *self.kc, *self.config())
        self.assertTrue(table.stdout.startswith(f"Answered by: extender {self.namespace}/powerctl-extender"))
        # The model read back from the extender's document, as the local table shows it.
        self.assertIn("exponent: idle 100 W, max 300 W, exponent 1", table.stdout)


if __name__ == "__main__":
    unittest.main()
