"""TASPolicy strategies and leader election of `powerctl schedule-server`, end to end: the real
kube-apiserver and kube-scheduler 1.20, a real Prometheus scraping node_exporter's textfile
collector for a per-node policy metric, and the schedule-server running as its generated
ServiceAccount.

  * dontschedule: a pod labelled `telemetry-policy: NAME` lands only on the node that does not
    violate the policy;
  * deschedule: the violating node gets `<policy>=violating`, removed when the metric recovers;
  * two replicas: one holds the Lease and alone writes; SIGTERM releases it and the other takes
    over and writes."""
import json
import os
import subprocess
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import ClusterTest, load_docs, powerctl

NS = "policies-e2e"
SCHEDULER = "policies-e2e-scheduler"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/powerctl-extender"
METRIC = "e2e_health"


def get_text(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def metric_value(text, series):
    """The value of one exposition line `series value`, or None."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class ExtenderPoliciesTest(ClusterTest):
    def setUp(self):
        super().setUp()
        self.tag = uuid.uuid4().hex[:5]
        # Policy names are node label keys (deschedule) and shared by all namespaces: unique per run.
        self.dont = f"dont-{self.tag}"
        self.hot = f"hot-{self.tag}"
        self.good, self.bad = f"good-{self.tag}", f"bad-{self.tag}"
        for name in (self.good, self.bad):
            self.cluster.create_node(name, labels={"policies-e2e": self.tag})
            self.addCleanup(self.cluster.delete_node, name)
        self.stack = prometheus_stack.PrometheusStack(self.good, self.bad)
        self.stack.__enter__()
        self.addCleanup(self.stack.stop)
        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 10})
        self.stack.wait_for_series(f'{METRIC}{{node="{self.bad}"}}')

        self.config = os.path.join(self.tmp, "powerctl.yaml")
        healthz_port, = cl.free_ports(1)
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
        crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
        for obj in [d for d in docs if d["kind"] != "TASPolicy"]:
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
        for crd in crds:
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
        self.cluster.api("DELETE", LEASE)  # a Lease left by an earlier test must not delay this one
        token = self.cluster.service_account_token(NS, "powerctl-extender")
        self.extender_kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, "extender.kubeconfig"),
                                                         token=token, user="powerctl-extender")

    def start(self, name, argv, log_name):
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=name)
        return proc, log_path

    def start_extender(self, identity, tls=None):
        """A schedule-server replica as the extender's ServiceAccount; waits until /readyz is fully
        ready (the policies included). Returns (process, log path, ops URL, main port)."""
        port, ops_port = cl.free_ports(2)
        argv = [os.environ.get("POWERCTL_BINARY"), "schedule-server", "-c", self.config,
                "--kubeconfig", self.extender_kc, f"--listen=127.0.0.1:{port}",
                f"--ops-listen=127.0.0.1:{ops_port}", f"--identity={identity}"]
        argv += [f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key",
                 f"--client-ca={tls}/ca.crt"] if tls else ["--insecure-http"]
        proc, log = self.start(f"schedule-server {identity}", argv, f"extender-{identity}.log")
        ops = f"http://127.0.0.1:{ops_port}"

        def ready():
            if proc.poll() is not None:
                raise cl.FatalWaitError(f"schedule-server exited {proc.returncode}:\n{cl.tail(log)}")
            return json.loads(get_text(ops + "/readyz")).get("degraded") == []
        cl.wait_for(ready, 60, f"schedule-server {identity} ready", diagnose=lambda: cl.tail(log))
        return proc, log, ops, port

    def labels_of(self, node):
        return self.cluster.request("GET", f"/api/v1/nodes/{node}")["metadata"].get("labels", {})

    def holder(self):
        s, lease = self.cluster.api("GET", LEASE)
        return lease["spec"].get("holderIdentity") if s == 200 else None

    def test_dontschedule_and_deschedule(self):
        out = os.path.join(self.tmp, "out")
        port, = cl.free_ports(1)
        scheduler_kc = self.cluster.write_kubeconfig(
            os.path.join(self.tmp, "scheduler.kubeconfig"), user=SCHEDULER,
            token=self.cluster.service_account_token(NS, SCHEDULER))
        powerctl("generate", "scheduler", *self.common, "--out-of-cluster", "--kubeconfig", scheduler_kc,
                 "--extender-url", f"https://127.0.0.1:{port}/scheduler", "--output-dir", out)
        tls = os.path.join(out, "tls")
        # The main port is fixed by the generated scheduler configuration.
        argv = [os.environ.get("POWERCTL_BINARY"), "schedule-server", "-c", self.config,
                "--kubeconfig", self.extender_kc, f"--listen=127.0.0.1:{port}",
                f"--tls-cert={tls}/server.crt", f"--tls-key={tls}/server.key", f"--client-ca={tls}/ca.crt"]
        ops_port, = cl.free_ports(1)
        extender, log = self.start("schedule-server", argv + [f"--ops-listen=127.0.0.1:{ops_port}"],
                                   "extender.log")
        ops = f"http://127.0.0.1:{ops_port}"
        cl.wait_for(lambda: extender.poll() is None and json.loads(get_text(ops + "/readyz"))["degraded"] == [],
                    60, "schedule-server ready", diagnose=lambda: cl.tail(log))
        secure_port, = cl.free_ports(1)
        scheduler, scheduler_log = self.start("kube-scheduler", [
            os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={out}/scheduler-config.yaml",
            f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={scheduler_kc}", f"--authorization-kubeconfig={scheduler_kc}"],
            "kube-scheduler.log")

        # (b) deschedule: the bad node is labelled (by the leader: the only replica).
        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 90})
        cl.wait_for(lambda: self.labels_of(self.bad).get(self.hot) == "violating", 30,
                    f"{self.bad} labelled {self.hot}=violating", diagnose=lambda: cl.tail(log))
        self.assertNotIn(self.hot, self.labels_of(self.good))
        self.assertEqual(self.labels_of(self.bad)["policies-e2e"], self.tag)  # others' labels stay

        # (a) dontschedule: the bad node violates (the label proves the server sees it so); the
        # pod may only go to the good one.
        pod = f"policy-{self.tag}"
        status, body = self.cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": NS, "labels": {"telemetry-policy": self.dont}},
            "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                     "nodeSelector": {"policies-e2e": self.tag},
                     "containers": [{"name": "c", "image": "registry.invalid/pause:1"}]}})
        self.assertEqual(status, 201, body)
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{NS}/pods/{pod}", {"gracePeriodSeconds": 0})

        def node_of():
            if scheduler.poll() is not None:
                raise cl.FatalWaitError(f"kube-scheduler exited:\n{cl.tail(scheduler_log)}")
            return self.cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/{pod}")["spec"].get("nodeName")
        self.assertEqual(cl.wait_for(node_of, 60, f"{pod} bound", diagnose=lambda: cl.tail(log)), self.good)
        decisions = json.loads(get_text(f"{ops}/v1/decisions?pod={NS}/{pod}"))["items"]
        reasons = [n.get("reason", "") for d in decisions if d["verb"] == "filter" for n in d["nodes"]
                   if n["node"] == self.bad]
        self.assertTrue(any(self.dont in r for r in reasons), decisions)

        # The metric recovers: the label goes.
        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 20})
        cl.wait_for(lambda: self.hot not in self.labels_of(self.bad), 30, f"{self.hot} removed from {self.bad}",
                    diagnose=lambda: cl.tail(log))
        # The writer counts a patch after the API server's answer, so the label can be seen a moment
        # before the counter moves: wait for it rather than read it once.
        ok = 'powerctl_extender_node_label_patches_total{result="ok"}'
        cl.wait_for(lambda: (metric_value(get_text(ops + "/metrics"), ok) or 0) >= 2, 10, "two label patches counted",
                    diagnose=lambda: get_text(ops + "/metrics"))
        self.assertEqual(metric_value(get_text(ops + "/metrics"), "powerctl_extender_leader"), 1)
        with open(log) as f:
            self.assertNotIn("forbidden", f.read().lower())

    def test_two_replicas_one_leader_and_takeover(self):
        a, a_log, a_ops, _ = self.start_extender("replica-a")
        first = cl.wait_for(self.holder, 30, "a Lease holder")
        self.assertEqual(first, "replica-a")
        cl.wait_for(lambda: metric_value(get_text(a_ops + "/metrics"), "powerctl_extender_leader") == 1, 10,
                    "replica-a's leader gauge")
        b, b_log, b_ops, _ = self.start_extender("replica-b")
        self.assertEqual(metric_value(get_text(b_ops + "/metrics"), "powerctl_extender_leader"), 0)

        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 90})
        cl.wait_for(lambda: self.labels_of(self.bad).get(self.hot) == "violating", 30,
                    f"{self.bad} labelled by the leader", diagnose=lambda: cl.tail(a_log))
        ok = 'powerctl_extender_node_label_patches_total{result="ok"}'
        # Counted after the API server answers: the label may be visible a moment earlier.
        cl.wait_for(lambda: (metric_value(get_text(a_ops + "/metrics"), ok) or 0) >= 1, 10,
                    "replica-a's label patch counted")
        self.assertIsNone(metric_value(get_text(b_ops + "/metrics"), ok))  # the follower never wrote
        self.assertEqual(self.holder(), "replica-a")

        # The leader stops: it releases the Lease and the other replica takes over within a few
        # seconds (its retry period), not after the 15 s lease duration.
        cl.terminate_pid(a.pid, popen=a, name="schedule-server replica-a")
        self.assertEqual(a.returncode, 0, cl.tail(a_log))
        with open(a_log) as f:
            self.assertIn("released lease", f.read())
        cl.wait_for(lambda: self.holder() == "replica-b", 10, "replica-b holding the Lease",
                    diagnose=lambda: cl.tail(b_log))
        cl.wait_for(lambda: metric_value(get_text(b_ops + "/metrics"), "powerctl_extender_leader") == 1, 10,
                    "replica-b's leader gauge")
        self.stack.write_node_metric(METRIC, {self.good: 10, self.bad: 20})
        cl.wait_for(lambda: self.hot not in self.labels_of(self.bad), 30, "the label removed by the new leader",
                    diagnose=lambda: cl.tail(b_log))
        cl.wait_for(lambda: (metric_value(get_text(b_ops + "/metrics"), ok) or 0) >= 1, 10,
                    "replica-b's label patch counted")
        with open(b_log) as f:
            self.assertIn("leading: holding lease", f.read())


if __name__ == "__main__":
    unittest.main()
