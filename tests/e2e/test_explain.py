"""`powerctl explain pod` and `powerctl score` end to end: the real kube-apiserver and
kube-scheduler 1.20 with `powerctl schedule-server` (generated out-of-cluster configuration, mTLS,
each as its generated ServiceAccount), a real Prometheus for CPU and a dontschedule policy metric.

One extender and scheduler serve every case:
  * a pod placed by the power scheduler: exit 0, the decision recorded on the pod is shown and the
    table matches it (scores, chosen node);
  * Pending on a dontschedule policy, on an untolerated taint, on an incomplete pod group, and on
    a scheduler that is not running: exit 3 and the right cause first, with a fix;
  * a pod placed on a node its deschedule policy marks violating: misplaced, exit 3;
  * `score` for a pod with the policy: the violating node is rejected at the gate, the other scored."""
import json
import os
import subprocess
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import ClusterTest, load_docs, powerctl

NS = "explain-e2e"
SCHEDULER = "explain-e2e-scheduler"
METRIC = "e2e_explain_health"


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class ExplainTest(ClusterTest):
    def start(self, name, argv, log_name):
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=name)
        return proc, log_path

    def setUp(self):
        super().setUp()
        self.tag = tag = uuid.uuid4().hex[:5]
        self.dont = f"explain-dont-{tag}"
        self.hot = f"explain-hot-{tag}"
        self.good, self.bad, self.tainted = f"xgood-{tag}", f"xbad-{tag}", f"xtaint-{tag}"
        for name, extra in ((self.good, {}), (self.bad, {}),
                            (self.tainted, {"taints": [{"key": "explain-e2e/dedicated", "value": tag,
                                                        "effect": "NoSchedule"}]})):
            self.cluster.create_node(name, labels={"explain-e2e": tag, "explain-e2e-role": name},
                                     annotations={"powerctl.io/idle-watts": "100", "powerctl.io/max-watts": "300"},
                                     **extra)
            self.addCleanup(self.cluster.delete_node, name)
        self.stack = prometheus_stack.PrometheusStack(self.good, self.bad, self.tainted)
        self.stack.__enter__()
        self.addCleanup(self.stack.stop)
        self.stack.write_ipmi({"Ambient": 22, "CPU1": 45, "CPU2": 47})
        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 90, self.tainted: 10})
        self.stack.wait_for_series(f'{METRIC}{{node="{self.bad}"}} > 50')

        healthz_port, = cl.free_ports(1)
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write(f"""namespace: {NS}
scheduler:
  name: {SCHEDULER}
  legacyHealthzPort: {healthz_port}
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {self.stack.url}
  refreshInterval: 1s
policies:
- name: {self.dont}
  strategies:
    dontschedule:
      rules:
      - {{metricname: {METRIC}, operator: GreaterThan, target: 50}}
- name: {self.hot}
  strategies:
    deschedule:
      rules:
      - {{metricname: {METRIC}, operator: GreaterThan, target: 50}}
""")
        self.common = ["-c", self.config, "--kube-version", "1.20"]
        docs = load_docs(powerctl("generate", "namespace", "rbac", "policies", *self.common).stdout)
        for obj in [d for d in docs if d["kind"] != "TASPolicy"]:
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
        for crd in [d for d in docs if d["kind"] == "CustomResourceDefinition"]:
            def established(crd=crd):
                s, o = self.get(crd)
                return s == 200 and any(c["type"] == "Established" and c["status"] == "True"
                                        for c in o.get("status", {}).get("conditions", []))
            cl.wait_for(established, 30, f"CRD {crd['metadata']['name']} established")
        for obj in [d for d in docs if d["kind"] == "TASPolicy"]:
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
            self.addCleanup(self.cluster.api, "DELETE",
                            f"/apis/telemetry.intel.com/v1alpha1/namespaces/{NS}/taspolicies/{obj['metadata']['name']}")

        # A Lease left by an earlier run would delay the deschedule label (written by its holder).
        self.cluster.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/powerctl-extender")

        def kubeconfig_for(account):
            token = self.cluster.service_account_token(NS, account)
            return self.cluster.write_kubeconfig(os.path.join(self.tmp, f"{account}.kubeconfig"), token=token,
                                                 user=account)
        scheduler_kc = kubeconfig_for(SCHEDULER)
        extender_kc = kubeconfig_for("powerctl-extender")
        port, ops_port, secure_port = cl.free_ports(3)
        out = os.path.join(self.tmp, "out")
        tls = os.path.join(out, "tls")
        powerctl("generate", "scheduler", *self.common, "--out-of-cluster", "--kubeconfig", scheduler_kc,
                 "--extender-url", f"https://127.0.0.1:{port}/scheduler", "--output-dir", out)
        extender, self.extender_log = self.start("powerctl schedule-server", [
            os.environ.get("POWERCTL_BINARY"), "schedule-server", "-c", self.config, "--kubeconfig", extender_kc,
            f"--listen=127.0.0.1:{port}", f"--ops-listen=127.0.0.1:{ops_port}",
            f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key", f"--client-ca={tls}/ca.crt"],
            "extender.log")

        def ready():
            if extender.poll() is not None:
                raise cl.FatalWaitError(f"schedule-server exited {extender.returncode}:\n{cl.tail(self.extender_log)}")
            return get_json(f"http://127.0.0.1:{ops_port}/readyz").get("degraded") == []
        cl.wait_for(ready, 60, "the extender ready", diagnose=lambda: cl.tail(self.extender_log))
        self.ops_port = ops_port
        self.scheduler, self.scheduler_log = self.start("kube-scheduler", [
            os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
            f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={scheduler_kc}", f"--authorization-kubeconfig={scheduler_kc}"],
            "kube-scheduler.log")
        self.kubeconfig = ["--kubeconfig", self.cluster.kubeconfig]

    def diagnose(self):
        return cl.tail(self.extender_log) + "\n" + cl.tail(self.scheduler_log)

    def create_pod(self, name, labels=None, node_selector=None, scheduler=SCHEDULER):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
               "spec": {"schedulerName": scheduler, "automountServiceAccountToken": False,
                        "nodeSelector": node_selector or {"explain-e2e": self.tag},
                        "containers": [{"name": "c", "image": "registry.invalid/pause:1",
                                        "resources": {"requests": {"cpu": "500m"}}}]}}
        status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
        self.assertEqual(status, 201, body)
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{name}", {"gracePeriodSeconds": 0})
        return pod

    def pod(self, name):
        return self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")

    def events(self, name, reason):
        """The pod's Events of this reason; for the extender's decisions ("PowerScored",
        "PowerFiltered"), [(event, decision)] of that verb from its batched decision Events."""
        verb = {"PowerScored": "prioritize", "PowerFiltered": "filter"}.get(reason)
        if verb:
            uid = self.pod(name)["metadata"]["uid"]
            batches = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/events",
                                           query={"labelSelector": cl.decision_label(uid)})["items"]
            return cl.recorded_decisions(batches, uid, verb)
        return self.cluster.request("GET", f"/api/v1/namespaces/{NS}/events",
                                    query={"fieldSelector": f"involvedObject.name={name},reason={reason}"})["items"]

    def wait_event(self, name, reason):
        return cl.wait_for(lambda: self.events(name, reason), 60, f"a {reason} event on {name}",
                           diagnose=self.diagnose)

    def explain(self, name, *extra):
        r = powerctl("explain", "pod", name, "-n", NS, "-c", self.config, *self.kubeconfig, *extra, check=False)
        self.assertIn(r.returncode, (0, 3), r.stderr)
        return r

    def explain_json(self, name):
        r = self.explain(name, "-o", "json")
        return r.returncode, json.loads(r.stdout)

    def test_explain_cases(self):
        tag = self.tag
        with self.subTest("placed by the power scheduler"):
            # The extender predicts both untainted nodes (CPU from Prometheus) before the pod
            # comes, so its decision has a power cost per node.
            def predicted():
                doc = get_json(f"http://127.0.0.1:{self.ops_port}/v1/predictions?cpu=500m"
                               f"&node={self.good}&node={self.bad}")
                return all(n["fillWattsPerCore"] is not None for n in doc["nodes"])
            cl.wait_for(predicted, 60, "the extender's predictions", diagnose=self.diagnose)
            name = f"placed-{tag}"
            self.create_pod(name)
            node = cl.wait_for(lambda: self.pod(name)["spec"].get("nodeName"), 60, f"{name} bound",
                               diagnose=self.diagnose)
            _, recorded = self.wait_event(name, "PowerScored")[-1]
            code, doc = self.explain_json(name)
            self.assertEqual(code, 0, doc)
            self.assertTrue(doc["scheduled"])
            self.assertEqual(doc["pod"]["nodeName"], node)
            self.assertEqual(doc["decision"]["source"], "recorded", doc["decision"])
            self.assertEqual(doc["decision"]["prioritize"], recorded)
            recorded_scores = {n["node"]: n["score"] for n in recorded["nodes"]}
            table_scores = {n["node"]: n["score"] for n in doc["nodes"] if n["score"] is not None}
            self.assertEqual(table_scores, recorded_scores, doc["nodes"])
            chosen = [n["node"] for n in doc["nodes"] if n["chosen"]]
            self.assertEqual(chosen, [node])
            self.assertEqual(doc["causes"], [])
            # Both untainted nodes have the same model and load: equal fill costs, a tie on
            # power that kube-scheduler's own scores broke.
            self.assertEqual(doc["decision"]["objective"], "fill", doc["decision"])
            costs = {n["node"]: n["fillWattsPerCore"] for n in doc["nodes"] if n["score"] is not None}
            self.assertEqual(set(costs), {self.good, self.bad}, doc["nodes"])
            why = doc["decision"]["whyChosen"]
            self.assertTrue(why.startswith(f"{node} won a tie on power: "), why)
            self.assertIn("(within the tie tolerance), so kube-scheduler's other scores decided", why)
            text = self.explain(name)
            self.assertEqual(text.returncode, 0)
            self.assertIn(f"* {node}", text.stdout)
            self.assertIn("recorded by the extender", text.stdout)
            self.assertIn(f"Why: {why}", text.stdout)

        with self.subTest("Pending on a dontschedule policy"):
            name = f"policy-{tag}"
            self.create_pod(name, labels={"telemetry-policy": self.dont},
                            node_selector={"explain-e2e-role": self.bad})
            self.wait_event(name, "PowerFiltered")
            self.wait_event(name, "FailedScheduling")
            code, doc = self.explain_json(name)
            self.assertEqual(code, 3, doc)
            self.assertFalse(doc["scheduled"])
            self.assertEqual(doc["decision"]["source"], "recorded", doc["decision"])
            cause = doc["causes"][0]
            self.assertEqual(cause["id"], "dontschedule-policy", doc["causes"])
            self.assertEqual(cause["nodes"], [self.bad])
            self.assertIn(self.dont, cause["detail"])
            self.assertIn(f"telemetry-policy={self.dont}", cause["fix"])
            # The scheduler's own verdict is shown verbatim.
            self.assertTrue(any(e["reason"] == "FailedScheduling" for e in doc["events"]), doc["events"])
            # Anyone who may create Events in the namespace writes their text: on the terminal it
            # is one printable line, in -o json as it was written.
            pod_uid = self.pod(name)["metadata"]["uid"]
            forged = {"apiVersion": "v1", "kind": "Event",
                      "metadata": {"name": f"{name}.forged", "namespace": NS},
                      "involvedObject": {"kind": "Pod", "name": name, "namespace": NS, "uid": pod_uid},
                      "reason": "FailedScheduling", "type": "Warning",
                      "message": "clear\x1b[2J\x1b]0;pwned\x07 and\nSecond line",
                      "source": {"component": "someone"}, "count": 1,
                      "lastTimestamp": "2026-12-02T12:00:00Z", "firstTimestamp": "2026-12-02T12:00:00Z"}
            status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/events", forged)
            self.assertEqual(status, 201, body)
            text = self.explain(name, "-o", "wide").stdout
            self.assertNotIn("\x1b", text)
            self.assertNotIn("\x07", text)
            self.assertIn("clear [2J ]0;pwned  and Second line", text)
            code, doc = self.explain_json(name)
            self.assertIn("clear\x1b[2J\x1b]0;pwned\x07 and\nSecond line", [e["message"] for e in doc["events"]])

        with self.subTest("Pending on an untolerated taint"):
            name = f"taint-{tag}"
            self.create_pod(name, node_selector={"explain-e2e-role": self.tainted})
            self.wait_event(name, "FailedScheduling")
            code, doc = self.explain_json(name)
            self.assertEqual(code, 3, doc)
            cause = doc["causes"][0]
            self.assertEqual(cause["id"], "untolerated-taint", doc["causes"])
            self.assertEqual(cause["reason"], "node(s) had untolerated taint")
            self.assertEqual(cause["nodes"], [self.tainted])
            self.assertIn(f"key: explain-e2e/dedicated, operator: Equal, value: {tag}", cause["fix"])
            # Every other node is excluded by the pod's own selector: ranked after the taint.
            self.assertIn("node-affinity", [c["id"] for c in doc["causes"][1:]])
            self.assertIn("had taint {explain-e2e/dedicated:", doc["pod"]["podScheduled"]["message"])

        with self.subTest("Pending on an incomplete pod group"):
            name = f"group-{tag}-0"
            self.create_pod(name, labels={"podGroup": f"g-{tag}", "minAvailable": "2"})
            self.wait_event(name, "PowerFiltered")
            code, doc = self.explain_json(name)
            self.assertEqual(code, 3, doc)
            cause = doc["causes"][0]
            self.assertEqual(cause["id"], "pod-group-incomplete", doc["causes"])
            self.assertIn("has 1 of 2 pods", cause["detail"])
            self.assertIn(f"podGroup=g-{tag}", cause["fix"])

        with self.subTest("Pending on a scheduler that is not running"):
            name = f"orphan-{tag}"
            self.create_pod(name, scheduler=f"absent-{tag}")
            code, doc = self.explain_json(name)
            self.assertEqual(code, 3, doc)
            self.assertEqual(doc["causes"][0]["id"], "scheduler-not-running", doc["causes"])
            lease = [c for c in doc["checks"] if c["id"] == "scheduler-lease"][0]
            self.assertEqual(lease["status"], "FAIL", lease)
            self.assertEqual(doc["events"], [])
            text = self.explain(name)
            self.assertIn("Events: <none>", text.stdout)
            self.assertIn(f"start a scheduler named absent-{tag}", text.stdout)

        with self.subTest("placed on a node its deschedule policy marks violating"):
            def labels():
                return self.cluster.request("GET", f"/api/v1/nodes/{self.bad}")["metadata"]["labels"]
            cl.wait_for(lambda: labels().get(self.hot) == "violating", 30, f"{self.bad} labelled {self.hot}",
                        diagnose=self.diagnose)
            name = f"misplaced-{tag}"
            self.create_pod(name, labels={"telemetry-policy": self.hot},
                            node_selector={"explain-e2e-role": self.bad})
            cl.wait_for(lambda: self.pod(name)["spec"].get("nodeName"), 60, f"{name} bound", diagnose=self.diagnose)
            code, doc = self.explain_json(name)
            self.assertEqual(code, 3, doc)
            self.assertTrue(doc["scheduled"])
            self.assertEqual([c["id"] for c in doc["causes"]], ["deschedule-policy"], doc["causes"])
            self.assertEqual(doc["causes"][0]["nodes"], [self.bad])

        with self.subTest("score with the policy: the violating node is gated"):
            pod_file = os.path.join(self.tmp, "pod.json")
            with open(pod_file, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "what-if", "namespace": NS,
                                        "labels": {"telemetry-policy": self.dont}},
                           "spec": {"containers": [{"name": "c", "image": "x",
                                                    "resources": {"requests": {"cpu": "1"}}}]}}, f)
            r = powerctl("score", "--pod", pod_file, self.good, self.bad, self.tainted, "-c", self.config,
                         *self.kubeconfig, "-o", "json")
            doc = json.loads(r.stdout)
            rows = {n["node"]: n for n in doc["nodes"]}
            self.assertEqual([n["node"] for n in doc["nodes"]], [self.good, self.bad, self.tainted])
            self.assertIsNotNone(rows[self.good]["score"], rows)
            self.assertFalse(rows[self.bad]["gate"]["pass"], rows)
            self.assertIn(self.dont, rows[self.bad]["gate"]["reason"])
            self.assertFalse(rows[self.tainted]["fits"], rows)
            self.assertEqual(rows[self.tainted]["fit"][0]["check"], "taints")


if __name__ == "__main__":
    unittest.main()
