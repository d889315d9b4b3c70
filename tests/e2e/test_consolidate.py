"""`powerctl consolidate` against the real kube-apiserver, controller-manager and kube-scheduler
1.20 with powerctl's extender: Deployments placed on costly nodes, `plan` names them and keeps
the node whose PodDisruptionBudget forbids a move, `apply` drains them (cordon + mark in one
PATCH, the Eviction API, the ReplicaSets' replacements scheduled by power onto the efficient
nodes), is killed by PID mid-drain and resumed (the rerun with only the opt-in consolidate
ClusterRole), `status` and `doctor` count the drained nodes, `wake` switches one back on for a
pod that needs it (an Event on the pod, the --on-wake hook, the node uncordoned and the pod
scheduled there), and `undo` gives a node back.

Nodes (built-in model, watts = idle + (max - idle) * utilisation):
  eff-1, eff-2:          8 cores,  50 W idle, 150 W at full load (12.5 W per core)
  old-1, old-2, old-3:   4 cores, 200 W idle, 400 W at full load (50 W per core)
  guard:                 4 cores, 200 W idle, 400 W: its pods are covered by a PDB that allows
                         no disruption
The fake kubelet makes pods Running and finalizes deleted pods; a finalizer on one pod holds
its eviction open so the run can be killed while that node is draining."""
import json
import os
import re
import signal
import subprocess
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import BINARY, ClusterTest, load_docs, powerctl

NS = "consolidate-e2e"
SCHEDULER = "consolidate-e2e-scheduler"
LABEL = "powerctl.io/power-state"
ANNOTATION = "powerctl.io/consolidation"
HOLD = "e2e.powerctl.io/hold"


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class ConsolidateTest(ClusterTest):
    def start(self, name, argv, log_name):
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=name)
        return proc, log_path

    def node(self, name):
        return self.cluster.request("GET", f"/api/v1/nodes/{name}")

    def cordon(self, name, on):
        self.cluster.request("PATCH", f"/api/v1/nodes/{name}", {"spec": {"unschedulable": on}})

    def pods(self, app=None):
        query = {"labelSelector": f"app={app}"} if app else {"labelSelector": "consolidate-e2e"}
        return self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods", query=query)["items"]

    def deployment(self, name, replicas, tag):
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name, "consolidate-e2e": tag}},
                                      "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                                               "terminationGracePeriodSeconds": 1,
                                               "nodeSelector": {"consolidate-e2e": tag},
                                               "containers": [{"name": "c", "image": "registry.invalid/pause:1",
                                                               "resources": {"requests": {"cpu": "500m",
                                                                                          "memory": "64Mi"}}}]}}}}

    def ready_replicas(self, name):
        d = self.cluster.request("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
        return d.get("status", {}).get("readyReplicas", 0), d["spec"]["replicas"]

    def test_plan_apply_interrupt_resume_undo(self):
        tag = uuid.uuid4().hex[:5]
        n = {role: f"c{tag}-{role}" for role in ("eff-1", "eff-2", "old-1", "old-2", "old-3", "guard")}
        for role, name in n.items():
            cpu, idle, peak = ("8", "50", "150") if role.startswith("eff") else ("4", "200", "400")
            self.cluster.create_node(name, cpu=cpu, labels={"consolidate-e2e": tag},
                                     annotations={"powerctl.io/idle-watts": idle, "powerctl.io/max-watts": peak})
            self.addCleanup(self.cluster.delete_node, name)
        stack = prometheus_stack.PrometheusStack(*n.values())
        stack.__enter__()
        self.addCleanup(stack.stop)
        stack.write_ipmi({"Ambient": 22, "CPU1": 45, "CPU2": 47})
        for name in n.values():
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

        def kubeconfig_for(account):
            token = self.cluster.service_account_token(NS, account)
            return self.cluster.write_kubeconfig(os.path.join(self.tmp, f"{account}.kubeconfig"), token=token,
                                                 user=account)
        scheduler_kc = kubeconfig_for(SCHEDULER)
        extender_kc = kubeconfig_for("powerctl-extender")
        # consolidate runs below with only its opt-in ClusterRole.
        for obj in load_docs(powerctl("generate", "consolidate", *common).stdout):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
        consolidate_kc = kubeconfig_for("powerctl-consolidate")
        port, ops_port, secure_port = cl.free_ports(3)
        out = os.path.join(self.tmp, "out")
        tls = os.path.join(out, "tls")
        powerctl("generate", "scheduler", *common, "--out-of-cluster", "--kubeconfig", scheduler_kc,
                 "--extender-url", f"https://127.0.0.1:{port}/scheduler", "--output-dir", out)
        extender, extender_log = self.start("powerctl schedule-server", [
            BINARY, "schedule-server", "-c", config, "--kubeconfig", extender_kc,
            f"--listen=127.0.0.1:{port}", f"--ops-listen=127.0.0.1:{ops_port}",
            f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key", f"--client-ca={tls}/ca.crt"],
            "extender.log")

        def predictions():
            if extender.poll() is not None:
                raise cl.FatalWaitError(f"schedule-server exited:\n{cl.tail(extender_log)}")
            url = f"http://127.0.0.1:{ops_port}/v1/predictions?cpu=1&node={n['eff-1']}&node={n['old-1']}"
            with urllib.request.urlopen(url, timeout=5) as r:
                doc = json.load(r)
            return doc if all(x["deltaWatts"] is not None for x in doc["nodes"]) else None
        cl.wait_for(predictions, 90, "the extender's predictions", diagnose=lambda: cl.tail(extender_log))
        scheduler, scheduler_log = self.start("kube-scheduler", [
            os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
            f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={scheduler_kc}", f"--authorization-kubeconfig={scheduler_kc}"],
            "kube-scheduler.log")

        def diagnose():
            return cl.tail(extender_log) + "\n" + cl.tail(scheduler_log)

        # Each Deployment placed on one costly node: only that node is schedulable meanwhile.
        placement = {"web-1": "old-1", "web-2": "old-2", "web-3": "old-3", "db": "guard"}
        for app, role in placement.items():
            for other in n.values():
                self.cordon(other, other != n[role])
            status, body = self.apply(self.deployment(app, 2, tag))
            self.assertIn(status, (200, 201), body)

            def placed(app=app):
                running = [p for p in self.pods(app) if p.get("status", {}).get("phase") == "Running"]
                return len(running) == 2 and all(p["spec"]["nodeName"] == n[role] for p in running)
            cl.wait_for(placed, 90, f"{app} running on {n[role]}", diagnose=diagnose)
        for name in n.values():
            self.cordon(name, False)
        pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "db", "namespace": NS},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}
        self.cluster.request("POST", f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets", pdb)

        def budget_observed():
            b = self.cluster.request("GET", f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets/db")
            return b.get("status", {}).get("observedGeneration") is not None
        cl.wait_for(budget_observed, 60, "the disruption controller to count the db budget")

        kc = ["--kubeconfig", self.cluster.kubeconfig, "-c", config]
        select = ["-l", f"consolidate-e2e={tag}", "--max-nodes", "3"]
        # plan: the three costly nodes with movable pods; guard stays for its budget.
        plan = json.loads(powerctl("consolidate", "plan", *select, "-o", "json", *kc).stdout)
        drained = [x["node"] for x in sorted((x for x in plan["nodes"] if x["drain"]), key=lambda x: x["order"])]
        self.assertEqual(set(drained), {n["old-1"], n["old-2"], n["old-3"]}, plan)
        guard = next(x for x in plan["nodes"] if x["node"] == n["guard"])
        self.assertIn("PodDisruptionBudget consolidate-e2e/db", guard["reason"])

        # apply, killed while the first node drains: a finalizer holds one of its pods.
        first = drained[0]
        held = next(p for p in self.pods() if p["spec"]["nodeName"] == first)
        held_path = f"/api/v1/namespaces/{NS}/pods/{held['metadata']['name']}"
        self.cluster.request("PATCH", held_path, {"metadata": {"finalizers": [HOLD]}})
        self.addCleanup(self.cluster.api, "PATCH", held_path, {"metadata": {"finalizers": None}})
        run, run_log = self.start("consolidate apply", [BINARY, "consolidate", "apply", *select, "--timeout", "2m",
                                                        *kc], "apply-1.log")

        def held_open():
            if run.poll() is not None:
                raise cl.FatalWaitError(f"apply exited {run.returncode}:\n{cl.tail(run_log)}")
            pod = self.cluster.request("GET", held_path)
            return pod["metadata"].get("deletionTimestamp") is not None
        cl.wait_for(held_open, 60, "the held pod evicted", diagnose=lambda: cl.tail(run_log))
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
        node = self.node(first)
        self.assertTrue(node["spec"].get("unschedulable"), node)
        self.assertEqual(node["metadata"]["labels"].get(LABEL), "draining")
        mark = json.loads(node["metadata"]["annotations"][ANNOTATION])
        self.assertEqual(mark["state"], "draining")
        self.assertFalse(mark["wasUnschedulable"])
        self.assertGreater(mark["expectedWattsSaved"], 0)
        self.assert_cordoned_nodes_marked(n)

        # The rerun finishes the draining node first, then the rest of the plan; it runs as the
        # ServiceAccount of the consolidate component, so its ClusterRole is all apply needs.
        self.cluster.request("PATCH", held_path, {"metadata": {"finalizers": None}})
        as_consolidate = ["--kubeconfig", consolidate_kc, "-c", config]
        r = powerctl("consolidate", "apply", *select, "--timeout", "2m", "-o", "json", *as_consolidate,
                     timeout=400)
        result = json.loads(r.stdout)
        outcomes = {x["node"]: x for x in result["nodes"]}
        self.assertEqual(result["nodes"][0]["node"], first, result)
        self.assertTrue(result["nodes"][0]["resumed"], result)
        for role in ("old-1", "old-2", "old-3"):
            self.assertEqual(outcomes[n[role]]["action"], "drained", result)
            node = self.node(n[role])
            self.assertTrue(node["spec"].get("unschedulable"))
            self.assertEqual(node["metadata"]["labels"].get(LABEL), "drained")
        self.assertNotIn(LABEL, self.node(n["guard"])["metadata"].get("labels", {}))
        self.assert_cordoned_nodes_marked(n)
        # No pod lost: every Deployment ready again, the moved ones on the efficient nodes, where
        # powerctl's scheduler put them.
        for app in placement:
            self.assertEqual(*self.ready_replicas(app), app)
            running = [p for p in self.pods(app) if p.get("status", {}).get("phase") == "Running"]
            self.assertEqual(len(running), 2, app)
            where = {p["spec"]["nodeName"] for p in running}
            if app == "db":
                self.assertEqual(where, {n["guard"]})
            else:
                self.assertLessEqual(where, {n["eff-1"], n["eff-2"]}, (app, where, diagnose()))

        # status and doctor count the drained nodes; none drifted yet.
        status = json.loads(powerctl("status", "-o", "json", *kc, check=False).stdout)
        self.assertEqual(status["consolidation"]["drained"], 3, status["consolidation"])
        self.assertEqual(status["consolidation"]["drifted"], [], status["consolidation"])
        checks = json.loads(powerctl("doctor", "-o", "json", *kc, check=False).stdout)["checks"]
        drained_check = next(c for c in checks if c["id"] == "drained-nodes")
        self.assertEqual(drained_check["status"], "PASS", drained_check)
        self.assertIn("3 drained", drained_check["message"])

        # wake: a pod that only old-1 may take goes Pending; wake runs the hook for old-1 and
        # brings it back, and the scheduler places the pod there.
        self.cluster.request("PATCH", f"/api/v1/nodes/{n['old-1']}",
                             {"metadata": {"labels": {"consolidate-e2e-wake": tag}}})
        needs_old_1 = self.deployment("needs-old-1", 1, tag)
        needs_old_1["spec"]["template"]["spec"]["nodeSelector"]["consolidate-e2e-wake"] = tag
        status, body = self.apply(needs_old_1)
        self.assertIn(status, (200, 201), body)

        def unschedulable():
            for p in self.pods("needs-old-1"):
                for c in p.get("status", {}).get("conditions", []):
                    if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                        return p
            return None
        pending = cl.wait_for(unschedulable, 60, "the pod Pending for lack of room", diagnose=diagnose)
        explained = json.loads(powerctl("explain", "pod", pending["metadata"]["name"], "-n", NS, "-o", "json",
                                        *kc, check=False).stdout)
        drained_cause = next(c for c in explained["causes"] if c["id"] == "drained-node-would-fit")
        self.assertEqual(drained_cause["nodes"], [n["old-1"]], explained["causes"])
        # A watcher (dry run: no Events, no hook) publishes the same finding on /metrics and
        # ends on SIGTERM with exit 0.
        watcher, watcher_log = self.start("consolidate wake --watch", [
            BINARY, "consolidate", "wake", "--watch", "--dry-run=client", "--ops-listen", "127.0.0.1:0",
            *as_consolidate], "wake-watch.log")

        def watcher_metrics():
            if watcher.poll() is not None:
                raise cl.FatalWaitError(f"wake --watch exited {watcher.returncode}:\n{cl.tail(watcher_log)}")
            with open(watcher_log) as f:
                m = re.search(r"/metrics on (http://\S+)", f.read())
            if not m:
                return None
            with urllib.request.urlopen(m.group(1) + "/metrics", timeout=5) as resp:
                text = resp.read().decode()
            return text if "powerctl_consolidate_last_pass_timestamp_seconds" in text else None
        metrics = cl.wait_for(watcher_metrics, 60, "wake --watch's /metrics after a pass",
                              diagnose=lambda: cl.tail(watcher_log))
        self.assertIn(f'powerctl_consolidate_wake_candidate_pods{{node="{n["old-1"]}"}} 1\n', metrics)
        self.assertIn("\npowerctl_consolidate_drained_nodes 3\n", metrics)
        pending_pods = re.search(r"\npowerctl_consolidate_pending_pods (\S+)\n", metrics)
        self.assertGreaterEqual(float(pending_pods.group(1)), 1, metrics)
        os.kill(watcher.pid, signal.SIGTERM)
        self.assertEqual(watcher.wait(10), 0, cl.tail(watcher_log))

        woke = os.path.join(self.tmp, "woken")
        r = powerctl("consolidate", "wake", "-o", "json", "--on-wake", f'echo "$POWERCTL_EVENT $1" >> {woke}',
                     *as_consolidate)
        report = json.loads(r.stdout)
        self.assertEqual([x["node"] for x in report["nodes"]], [n["old-1"]], report)
        self.assertTrue(report["nodes"][0]["broughtBack"], report)
        with open(woke) as f:
            self.assertEqual(f.read(), f"wake {n['old-1']}\n")
        node = self.node(n["old-1"])
        self.assertFalse(node["spec"].get("unschedulable", False))
        self.assertNotIn(LABEL, node["metadata"].get("labels", {}))
        events = self.cluster.request("GET", f"/api/v1/namespaces/{NS}/events")["items"]
        self.assertTrue(any(e["reason"] == "DrainedNodeWouldFit" and
                            e["involvedObject"]["name"] == pending["metadata"]["name"] and
                            n["old-1"] in e["message"] for e in events), events)

        def placed_on_old_1():
            running = [p for p in self.pods("needs-old-1") if p.get("status", {}).get("phase") == "Running"]
            return running and running[0]["spec"]["nodeName"] == n["old-1"]
        cl.wait_for(placed_on_old_1, 90, "the pod scheduled on the woken node", diagnose=diagnose)

        # undo: a node powerctl did not drain is refused; the others are given back.
        r = powerctl("consolidate", "undo", n["guard"], *kc, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("did not drain it", r.stderr)
        r = powerctl("consolidate", "undo", n["old-2"], n["old-3"], *as_consolidate)
        self.assertIn(f"node/{n['old-2']} uncordoned", r.stdout)
        for role in ("old-2", "old-3"):
            node = self.node(n[role])
            self.assertFalse(node["spec"].get("unschedulable", False))
            self.assertNotIn(LABEL, node["metadata"].get("labels", {}))
            self.assertNotIn(ANNOTATION, node["metadata"].get("annotations", {}))

    def assert_cordoned_nodes_marked(self, nodes):
        for name in nodes.values():
            node = self.node(name)
            if node["spec"].get("unschedulable"):
                self.assertIn(node["metadata"].get("labels", {}).get(LABEL), ("draining", "drained"), name)
                self.assertIn(ANNOTATION, node["metadata"].get("annotations", {}), name)


if __name__ == "__main__":
    unittest.main()
