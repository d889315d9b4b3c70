"""The fill objective with the real kube-scheduler 1.20 and `powerctl schedule-server`: two
nodes with measured power curves (set with `powerctl label nodes --power-curve`) on which the
fill objective and the old marginal one disagree, pods placed by the scheduler through the
extender on the node fill prefers, and `predict`, `score` and `explain pod` showing why.

The nodes (100 cores each; a pod requests 10, a tenth of either):
  steep:  efficient, but rises steeply from idle: 100 W idle, 250 W at 10 %, then +10 W per
          10 % up to 340 W. The pod alone adds ~150 W; filling the node costs (340 - 100) W
          over 100 cores = 2.4 W/core.
  linear: inefficient and linear: 100 W idle to 700 W. The pod adds 60 W; filling costs 6 W/core.
So marginal (the pod's own watts) picks linear and fill picks steep. The nodes' measured CPU is
this machine's (at most a few cores of 100): steep's delta stays above linear's while it is
below 6 cores, and its fill cost below linear's at any load."""
import json
import os
import subprocess
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import ClusterTest, load_docs, powerctl

NS = "fill-e2e"
SCHEDULER = "fill-e2e-scheduler"
STEEP = "100,250,260,270,280,290,300,310,320,330,340"
LINEAR = "100,160,220,280,340,400,460,520,580,640,700"


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class FillObjectiveTest(ClusterTest):
    def start(self, name, argv, log_name):
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=name)
        return proc, log_path

    def write_config(self, name, stack, healthz_port, scoring=""):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(f"""namespace: {NS}
scheduler:
  name: {SCHEDULER}
  legacyHealthzPort: {healthz_port}
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {stack.url}
  refreshInterval: 1s
{scoring}""")
        return path

    def test_pods_land_where_filling_is_cheapest_and_explain_says_why(self):
        tag = uuid.uuid4().hex[:5]
        steep, linear = f"fsteep-{tag}", f"flinear-{tag}"
        kc = ["--kubeconfig", self.cluster.kubeconfig]
        for name, curve in ((steep, STEEP), (linear, LINEAR)):
            self.cluster.create_node(name, cpu="100", labels={"fill-e2e": tag})
            self.addCleanup(self.cluster.delete_node, name)
            r = powerctl("label", "nodes", name, *kc, "--power-curve", curve)
            self.assertEqual(r.stdout.strip(), f"node/{name} labeled", r.stderr)
        stack = prometheus_stack.PrometheusStack(steep, linear)
        stack.__enter__()
        self.addCleanup(stack.stop)
        stack.write_ipmi({"Ambient": 22, "CPU1": 45, "CPU2": 47})
        stack.wait_for_cpu()

        healthz_port, = cl.free_ports(1)
        config = self.write_config("powerctl.yaml", stack, healthz_port)  # scoring.objective: fill
        marginal = self.write_config("marginal.yaml", stack, healthz_port, "scoring:\n  objective: marginal\n")
        common = ["-c", config, "--kube-version", "1.20"]

        # predict: each node's model (its curve) and fill cost next to the pod's own watts.
        r = powerctl("predict", steep, linear, "--cpu", "10", "--source", "local", "-o", "json", *kc, "-c", config)
        local = {n["node"]: n for n in json.loads(r.stdout)["nodes"]}
        for name, curve in ((steep, STEEP), (linear, LINEAR)):
            self.assertEqual(local[name]["model"]["form"], "curve", local[name])
            self.assertEqual(local[name]["model"]["curve"], [float(w) for w in curve.split(",")])
        self.assertGreater(local[steep]["deltaWatts"], local[linear]["deltaWatts"], local)
        self.assertAlmostEqual(local[linear]["fillWattsPerCore"], 6.0, delta=0.05)
        self.assertLess(local[steep]["fillWattsPerCore"], 2.5, local[steep])
        table = powerctl("predict", steep, linear, "--cpu", "10", "--source", "local", *kc, "-c", config).stdout
        header, *rows = table.splitlines()[1:]
        self.assertIn("FILL W/CORE", header)
        self.assertIn("MODEL", header)
        self.assertTrue(all("curve" in row.split() for row in rows), table)
        wide = powerctl("predict", steep, "--cpu", "10", "--source", "local", "-o", "wide", *kc, "-c", config).stdout
        self.assertIn(f"curve {STEEP} W", wide)

        # score: the two objectives disagree on these nodes.
        def score(path):
            r = powerctl("score", "--cpu", "10", steep, linear, "--source", "local", "-o", "json", *kc, "-c", path)
            return json.loads(r.stdout)
        by_fill, by_marginal = score(config), score(marginal)
        self.assertEqual(by_fill["objective"], "fill")
        self.assertEqual(by_marginal["objective"], "marginal")
        self.assertEqual([n["node"] for n in by_fill["nodes"]], [steep, linear], by_fill["nodes"])
        self.assertEqual([n["node"] for n in by_marginal["nodes"]], [linear, steep], by_marginal["nodes"])
        fill_costs = {n["node"]: n["fillWattsPerCore"] for n in by_fill["nodes"]}
        self.assertLess(fill_costs[steep], fill_costs[linear], by_fill["nodes"])
        self.assertTrue(all(n["fillWattsPerCore"] is None for n in by_marginal["nodes"]), by_marginal)
        table = powerctl("score", "--cpu", "10", steep, linear, "--source", "local", *kc, "-c", config).stdout
        self.assertIn("Power ranked by: fill", table)
        self.assertRegex(table, r"DELTA\s+FILL")
        self.assertRegex(table, rf"{steep}\s+yes\s+\+\d+\.\d W\s+\d+\.\d\d W/core")

        # The extender and kube-scheduler, each as its generated ServiceAccount.
        for obj in load_docs(powerctl("generate", "namespace", "rbac", *common).stdout):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)

        def kubeconfig_for(account):
            token = self.cluster.service_account_token(NS, account)
            return self.cluster.write_kubeconfig(os.path.join(self.tmp, f"{account}.kubeconfig"), token=token,
                                                 user=account)
        scheduler_kc = kubeconfig_for(SCHEDULER)
        extender_kc = kubeconfig_for("powerctl-extender")
        port, ops_port, secure_port = cl.free_ports(3)
        out = os.path.join(self.tmp, "out")
        tls = os.path.join(out, "tls")
        powerctl("generate", "scheduler", *common, "--out-of-cluster", "--kubeconfig", scheduler_kc,
                 "--extender-url", f"https://127.0.0.1:{port}/scheduler", "--output-dir", out)
        extender, extender_log = self.start("powerctl schedule-server", [
            os.environ.get("POWERCTL_BINARY"), "schedule-server", "-c", config, "--kubeconfig", extender_kc,
            f"--listen=127.0.0.1:{port}", f"--ops-listen=127.0.0.1:{ops_port}",
            f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key", f"--client-ca={tls}/ca.crt"],
            "extender.log")

        def ready():
            if extender.poll() is not None:
                raise cl.FatalWaitError(f"schedule-server exited {extender.returncode}:\n{cl.tail(extender_log)}")
            state = get_json(f"http://127.0.0.1:{ops_port}/readyz")
            # Only the TASPolicy CRD may be missing (the policies component is not applied here).
            return [d for d in state.get("degraded", []) if d["name"] != "policies"] == []
        cl.wait_for(ready, 60, "the extender ready", diagnose=lambda: cl.tail(extender_log))

        # The extender's predictions (what `predict --source extender` reads) show the same models.
        def predictions():
            doc = get_json(f"http://127.0.0.1:{ops_port}/v1/predictions?cpu=10&node={steep}&node={linear}")
            return doc if all(n["fillWattsPerCore"] is not None for n in doc["nodes"]) else None
        served = {n["node"]: n for n in cl.wait_for(predictions, 60, "the extender's predictions",
                                                    diagnose=lambda: cl.tail(extender_log))["nodes"]}
        for name in (steep, linear):
            self.assertEqual(served[name]["model"], local[name]["model"])
            # The same model and inputs; this machine's CPU use may have moved in between.
            self.assertAlmostEqual(served[name]["fillWattsPerCore"], local[name]["fillWattsPerCore"], delta=0.3)

        scheduler, scheduler_log = self.start("kube-scheduler", [
            os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
            f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={scheduler_kc}", f"--authorization-kubeconfig={scheduler_kc}"],
            "kube-scheduler.log")

        def diagnose():
            return cl.tail(extender_log) + "\n" + cl.tail(scheduler_log)

        def node_of(pod_name):
            if scheduler.poll() is not None:
                raise cl.FatalWaitError(f"kube-scheduler exited:\n{cl.tail(scheduler_log)}")
            s, p = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/pods/{pod_name}")
            return p["spec"].get("nodeName") if s == 200 else None

        pods = [f"fill-{tag}-{i}" for i in range(2)]
        placed = []
        for name in pods:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                   "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                            "nodeSelector": {"fill-e2e": tag},
                            "containers": [{"name": "c", "image": "registry.invalid/pause:1",
                                            "resources": {"requests": {"cpu": "10"}}}]}}
            status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            self.assertEqual(status, 201, body)
            self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{name}",
                            {"gracePeriodSeconds": 0})
            placed.append(cl.wait_for(lambda: node_of(name), 60, f"{name} bound", diagnose=diagnose))
        self.assertEqual(placed, [steep, steep], diagnose())

        # explain: the decision recorded on the first pod, each node's cost, why steep won.
        uid = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/{pods[0]}")["metadata"]["uid"]

        def recorded():
            items = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/events",
                                         query={"labelSelector": cl.decision_label(uid)})["items"]
            found = cl.recorded_decisions(items, uid, "prioritize")
            return found[-1][1] if found else None
        decision = cl.wait_for(recorded, 60, f"a recorded prioritize of {pods[0]}", diagnose=diagnose)
        power = [c["reason"] for n in decision["nodes"] for c in n.get("components", []) if c["name"] == "power"]
        self.assertTrue(any("W/core to fill" in r for r in power), decision)
        r = powerctl("explain", "pod", pods[0], "-n", NS, "-c", config, *kc, "-o", "json")
        doc = json.loads(r.stdout)
        self.assertEqual(doc["decision"]["source"], "recorded", doc["decision"])
        self.assertEqual(doc["decision"]["objective"], "fill", doc["decision"])
        rows = {n["node"]: n for n in doc["nodes"] if n["score"] is not None}
        self.assertEqual(set(rows), {steep, linear}, doc["nodes"])
        self.assertTrue(rows[steep]["chosen"])
        self.assertGreater(rows[steep]["deltaWatts"], rows[linear]["deltaWatts"], rows)
        self.assertLess(rows[steep]["fillWattsPerCore"], rows[linear]["fillWattsPerCore"], rows)
        why = (f"{steep} won: cheapest to fill, {rows[steep]['fillWattsPerCore']:.2f} W/core vs "
               f"{rows[linear]['fillWattsPerCore']:.2f} W/core on {linear} (next best)")
        self.assertEqual(doc["decision"]["whyChosen"], why)
        text = powerctl("explain", "pod", pods[0], "-n", NS, "-c", config, *kc).stdout
        self.assertIn(f"Why: {why}", text)
        self.assertRegex(text, rf"\* {steep}\s+yes\s+\+\d+\.\d W\s+{rows[steep]['fillWattsPerCore']:.2f} W/core")


if __name__ == "__main__":
    unittest.main()
