"""powerctl schedule-server with the real kube-scheduler 1.20: the scheduler (generated
out-of-cluster configuration, its ServiceAccount's token) calls the extender over mutual TLS
with the generated certificates; the extender runs as its own generated ServiceAccount, follows
nodes and pods by watch, reads CPU from a real Prometheus scraping node_exporter, and the pods
land on the node with the lowest predicted power increase; a pod group waits until complete, and
its waiting member is touched so it binds at once; with the extender stopped, ignorable keeps
scheduling going."""
import json
import os
import subprocess
import time
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import ClusterTest, load_docs, powerctl

NS = "extender-e2e"
SCHEDULER = "extender-e2e-scheduler"

# name -> (cpu, idle watts, max watts): +1 CPU costs (max - idle) / cpu watts.
NODES = {"efficient": ("8", "50", "150"),   # 12.5 W per core
         "middle": ("4", "100", "300"),     # 50 W per core
         "hungry": ("4", "200", "600")}     # 100 W per core


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class ExtenderSchedulingTest(ClusterTest):
    def start(self, name, argv, log_name):
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=name)
        return proc, log_path

    def test_pods_land_on_the_lowest_power_delta(self):
        tag = uuid.uuid4().hex[:5]
        names = {role: f"{role}-{tag}" for role in NODES}
        for role, (cpu, idle, peak) in NODES.items():
            self.cluster.create_node(names[role], cpu=cpu, annotations={"powerctl.io/idle-watts": idle,
                                                                         "powerctl.io/max-watts": peak})
            self.addCleanup(self.cluster.delete_node, names[role])
        stack = prometheus_stack.PrometheusStack(*names.values())
        stack.__enter__()
        self.addCleanup(stack.stop)
        stack.write_ipmi({"Ambient": 22, "CPU1": 45, "CPU2": 47})
        for name in names.values():
            stack.wait_for_series(f'rate(node_cpu_seconds_total{{instance="{name}:9100",mode="idle"}}[1m])')

        healthz_port, = cl.free_ports(1)
        config = os.path.join(self.tmp, "powerctl.yaml")
        with open(config, "w") as f:
            f.write(f"""namespace: {NS}
scheduler:
  name: {SCHEDULER}
  legacyHealthzPort: {healthz_port}
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {stack.url}
  refreshInterval: 1s
""")
        common = ["-c", config, "--kube-version", "1.20"]
        for obj in load_docs(powerctl("generate", "namespace", "rbac", *common).stdout):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)

        # Each component runs with its own generated ServiceAccount's token.
        def kubeconfig_for(account):
            token = self.cluster.service_account_token(NS, account)
            return self.cluster.write_kubeconfig(os.path.join(self.tmp, f"{account}.kubeconfig"), token=token,
                                                 user=account)
        scheduler_kc = kubeconfig_for(SCHEDULER)
        extender_kc = kubeconfig_for("powerctl-extender")

        port, = cl.free_ports(1)
        out = os.path.join(self.tmp, "out")
        tls = os.path.join(out, "tls")
        powerctl("generate", "scheduler", *common, "--out-of-cluster", "--kubeconfig", scheduler_kc,
                 "--extender-url", f"https://127.0.0.1:{port}/scheduler", "--output-dir", out)
        ops_port, = cl.free_ports(1)
        extender, extender_log = self.start("powerctl schedule-server", [
            os.environ.get("POWERCTL_BINARY"), "schedule-server", "-c", config, "--kubeconfig", extender_kc,
            f"--listen=127.0.0.1:{port}", f"--ops-listen=127.0.0.1:{ops_port}",
            f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key", f"--client-ca={tls}/ca.crt"],
            "extender.log")

        def ready():
            if extender.poll() is not None:
                raise cl.FatalWaitError(f"schedule-server exited {extender.returncode}:\n{cl.tail(extender_log)}")
            with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/readyz", timeout=2) as r:
                state = json.load(r)
            # Only the TASPolicy CRD may be missing (the policies component is not applied here).
            return [d for d in state.get("degraded", []) if d["name"] != "policies"] == []
        def readyz():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/readyz", timeout=2) as r:
                    return r.read().decode() + "\n" + cl.tail(extender_log)
            except OSError as e:
                return f"{e}\n{cl.tail(extender_log)}"
        cl.wait_for(ready, 60, "the extender ready with the cluster cache synced", diagnose=readyz)

        # The extender's own view, as `powerctl predict --source extender` would read it.
        def predictions():
            url = (f"http://127.0.0.1:{ops_port}/v1/predictions?cpu=1&node={names['efficient']}"
                   f"&node={names['hungry']}")
            with urllib.request.urlopen(url, timeout=5) as r:
                doc = json.load(r)
            return doc if all(n["deltaWatts"] is not None for n in doc["nodes"]) else None
        # Telemetry is refreshed in the background once the cache knows the nodes.
        doc = cl.wait_for(predictions, 60, "the extender's predictions for the new nodes", diagnose=readyz)
        deltas = {n["node"]: n["deltaWatts"] for n in doc["nodes"]}
        self.assertLess(deltas[names["efficient"]], deltas[names["hungry"]], doc)

        secure_port, = cl.free_ports(1)
        scheduler, scheduler_log = self.start("kube-scheduler", [
            os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
            f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={scheduler_kc}", f"--authorization-kubeconfig={scheduler_kc}", "--v=2"],
            "kube-scheduler.log")

        def create(pod_name, labels=None):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": pod_name, "namespace": NS, "labels": labels or {}},
                   "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                            "containers": [{"name": "c", "image": "registry.invalid/pause:1",
                                            "resources": {"requests": {"cpu": "500m"}}}]}}
            status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            self.assertEqual(status, 201, body)
            self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{pod_name}",
                            {"gracePeriodSeconds": 0})

        def node_of(pod_name):
            if scheduler.poll() is not None:
                raise cl.FatalWaitError(f"kube-scheduler exited:\n{cl.tail(scheduler_log)}")
            s, p = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/pods/{pod_name}")
            return p["spec"].get("nodeName") if s == 200 else None

        placed = []
        for i in range(3):
            create(f"power-{tag}-{i}")
            placed.append(cl.wait_for(lambda: node_of(f"power-{tag}-{i}"), 60, f"power-{tag}-{i} bound",
                                      diagnose=lambda: cl.tail(extender_log)))
        self.assertEqual(placed, [names["efficient"]] * 3, cl.tail(extender_log))

        # The decision is recorded in an Event labelled with the pod's uid, readable with
        # nothing but permission to read events in its namespace (what `powerctl explain`
        # relies on).
        reader = f"event-reader-{tag}"
        for obj in ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": reader, "namespace": NS}},
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                     "metadata": {"name": reader, "namespace": NS},
                     "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list"]}]},
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                     "metadata": {"name": reader, "namespace": NS},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": reader},
                     "subjects": [{"kind": "ServiceAccount", "name": reader, "namespace": NS}]}):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
        reader_token = self.cluster.service_account_token(NS, reader)
        pod0 = f"power-{tag}-0"

        s, pod = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/pods/{pod0}")
        self.assertEqual(s, 200, pod)
        uid = pod["metadata"]["uid"]

        def scored_event():
            status, body = self.cluster.api(
                "GET", f"/api/v1/namespaces/{NS}/events", token=reader_token,
                query={"labelSelector": cl.decision_label(uid)})
            self.assertNotIn(status, (401, 403), body)
            found = cl.recorded_decisions(body.get("items", []) if status == 200 else [], uid, "prioritize")
            return found[-1] if found else None
        event, recorded = cl.wait_for(scored_event, 30, f"a recorded prioritize of {pod0}",
                                      diagnose=lambda: cl.tail(extender_log))
        self.assertEqual(event["source"]["component"], "powerctl-extender", event)
        self.assertEqual(event["reason"], "PowerDecisions", event)
        # The Event is on the first pod of its batch; a batch of one reads as that decision.
        batch = json.loads(event["metadata"]["annotations"]["powerctl.io/decisions"])
        if len(batch) == 1:
            self.assertEqual(event["involvedObject"]["name"], pod0, event)
            self.assertIn(names["efficient"], event["message"], event)
        else:
            self.assertIn(pod0, event["message"], event)
        self.assertEqual(recorded["verb"], "prioritize", recorded)
        self.assertEqual(recorded["pod"]["name"], pod0, recorded)
        best = max(recorded["nodes"], key=lambda n: n.get("score", -1))
        self.assertEqual(best["node"], placed[0], recorded)
        self.assertIn("power", {c["name"] for c in best["components"]}, recorded)

        # A pod group waits, with the reason, until it has minAvailable pods.
        group = {"podGroup": f"g-{tag}", "minAvailable": "2"}
        create(f"group-{tag}-0", group)

        def rejected_for_group():
            with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/v1/decisions?pod={NS}/group-{tag}-0",
                                        timeout=5) as r:
                items = json.load(r)["items"]
            return any("has 1 of 2 pods" in n.get("reason", "") for d in items for n in d.get("nodes", []))
        cl.wait_for(rejected_for_group, 60, "the filter to hold back the incomplete group",
                    diagnose=lambda: cl.tail(extender_log))
        self.assertIsNone(node_of(f"group-{tag}-0"))
        create(f"group-{tag}-1", group)
        # The server (the Lease holder) touches the waiting member once the group is complete, so
        # kube-scheduler 1.20 retries it at once rather than at its unschedulable-queue flush (60 s).
        for i in range(2):
            cl.wait_for(lambda: node_of(f"group-{tag}-{i}"), 20, f"group-{tag}-{i} bound once the group is complete",
                        diagnose=lambda: cl.tail(extender_log) + "\n" + cl.tail(scheduler_log))
        s, first = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/pods/group-{tag}-0")
        self.assertIn("powerctl.io/group-complete", first["metadata"].get("annotations", {}), first)

        # The extender recorded why: prioritize decisions with the power component.
        with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/v1/decisions?pod={NS}/power-{tag}-0",
                                    timeout=5) as r:
            decisions = json.load(r)["items"]
        verbs = {d["verb"] for d in decisions}
        self.assertIn("prioritize", verbs, decisions)
        def metrics():
            with urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/metrics", timeout=5) as r:
                return r.read().decode()
        self.assertIn('powerctl_extender_requests_total{verb="prioritize",code="200"}', metrics())

        # Decisions are recorded in the background and counted once the API server has answered.
        def events_written():
            written = [line for line in metrics().splitlines()
                       if line.startswith('powerctl_extender_decision_events_total{result="written"}')]
            return written and float(written[0].split()[-1]) >= 3
        cl.wait_for(events_written, 10, "three decisions recorded", diagnose=metrics)
        with open(scheduler_log) as f:
            self.assertNotIn("forbidden", f.read().lower())
        with open(extender_log) as f:
            self.assertNotIn("forbidden", f.read().lower())

        # With the extender gone, ignorable (the generated default) keeps scheduling going.
        # Its idle watches are cancelled at once: no waiting for their 5-10 minute timeouts.
        started = time.monotonic()
        cl.terminate_pid(extender.pid, popen=extender, name="powerctl schedule-server")
        self.assertEqual(extender.returncode, 0, cl.tail(extender_log))
        self.assertLess(time.monotonic() - started, 5, cl.tail(extender_log))
        create(f"after-{tag}")
        cl.wait_for(lambda: node_of(f"after-{tag}"), 60, "a pod bound without the extender",
                    diagnose=lambda: cl.tail(scheduler_log))


if __name__ == "__main__":
    unittest.main()
