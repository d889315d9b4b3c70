"""powerctl lb-agent end to end: the agent runs on a client host (a network namespace) with three
endpoint hosts serving HTTP, reads the annotated Service and its EndpointSlice from the real
kube-apiserver 1.20 and CPU from a real Prometheus scraping a real node_exporter, predicts with
the built-in model (per-node annotations make the endpoints' nodes cost 2.5, 5 and 10 W per
request), and programs its nftables table. The tests count where 3,000 new connections to the
cluster IP go, change the predictions and the Service, make the kernel refuse the table, and
stop the agent, with a stand-in for kube-proxy's rules in place so that traffic always has a
way. The client reaches the API server and Prometheus (both on 127.0.0.1 of the root namespace)
through a veth and small TCP forwarders run by this test.

Root only; skipped with the reason otherwise. Namespaces, veths and processes are removed by
name or PID in cleanup."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import uuid

import yaml

import prometheus_stack
from e2e_support import BINARY, ClusterTest, powerctl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import netns_topology  # noqa: E402
from netns_topology import ENDPOINTS, EP_PORT, endpoint_ip  # noqa: E402

ROOT_IP, CLIENT_IP = "10.203.0.1", "10.203.0.2"
REQUESTS = 3000
TOLERANCE = 5.0  # percentage points
SLICES = "/apis/discovery.k8s.io/v1beta1/namespaces/{ns}/endpointslices"


def skip_reason():
    if not prometheus_stack.available():
        return "Debian's prometheus and prometheus-node-exporter are needed"
    return netns_topology.skip_reason()


SKIP = skip_reason()


class Forwarder:
    """Accepts on ROOT_IP (root namespace) and relays each connection to target_host:port."""

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.listener = socket.create_server((ROOT_IP, 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            self.connections += 1
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            src.close()  # each socket is the source of exactly one pump

    def close(self):
        self.closed = True
        self.listener.close()


class Agent:
    """powerctl lb-agent in the client namespace; its ops port is on CLIENT_IP."""

    def __init__(self, netns, kubeconfig, config, node):
        env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCTL_")}
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", netns, BINARY, "lb-agent", "--kubeconfig", kubeconfig,
             "-c", config, "--node", node, "--ops-listen", f"{CLIENT_IP}:0", "--resync", "2s"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        self.url = None
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"ops on (http://\S+?),", line)
                if m:
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(30) or self.url is None:
            self.stop()
            raise AssertionError("lb-agent did not start:\n" + self.log())

    def log(self):
        return "\n".join(self.lines)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.read().decode()

    def status(self):
        return json.loads(self.get("/status"))

    def metric(self, name):
        """The sample of `name` (with its labels, as written) in /metrics, as a float."""
        for line in self.get("/metrics").splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.proc.stderr.close()
        return self.proc.returncode


def wait_for(what, predicate, timeout=60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@unittest.skipIf(SKIP, SKIP)
class LbAgentTest(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tag = uuid.uuid4().hex[:6]
        cls.net = netns_topology.NetnsTopology(f"pcla{os.getpid() % 100000}")
        try:
            cls.net.link_to_root(ROOT_IP, CLIENT_IP)
            cls.nodes = [f"lba-{cls.tag}-{i}" for i in (1, 2, 3)]
            cls.stack = prometheus_stack.PrometheusStack(*cls.nodes)
            cls.stack.__enter__()
            port = int(cls.cluster.server.rsplit(":", 1)[1])
            cls.api_forward = Forwarder("127.0.0.1", port)
            cls.prom_forward = Forwarder("127.0.0.1", cls.stack.prometheus_port)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for name in ("api_forward", "prom_forward"):
            if hasattr(cls, name):
                getattr(cls, name).close()
        if hasattr(cls, "stack"):
            cls.stack.stop()
        cls.net.close()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.ns = f"lba-{uuid.uuid4().hex[:6]}"
        self.cluster.request("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}})
        self.addCleanup(self.cluster.api, "DELETE", f"/api/v1/namespaces/{self.ns}")
        # The built-in model without temperatures: (max - 100) * 0.1 core / 8 cores per request.
        for name, max_watts in zip(self.nodes, (300, 500, 900)):
            self.cluster.api("DELETE", f"/api/v1/nodes/{name}")
            self.cluster.create_node(name, cpu="8", managed=False,
                                     annotations={"powerctl.io/idle-watts": "100",
                                                  "powerctl.io/max-watts": str(max_watts)})
            self.addCleanup(self.cluster.delete_node, name)
        self.stack.wait_for_cpu()
        self.kubeconfig = self.write_kubeconfig()
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        self.write_config(f"http://{ROOT_IP}:{self.prom_forward.port}")
        remove = self.net.install_kube_proxy_standin(
            self.make_service(), os.path.join(self.tmp, "kube-proxy.nft"))
        self.addCleanup(remove)
        self.addCleanup(self.remove_leftover_table)

    def write_config(self, prometheus_url):
        with open(self.config, "w") as f:
            f.write(f"""apiVersion: powerctl.io/v1alpha1
kind: PowerctlConfig
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {prometheus_url}
  maxAge: 1m
""")

    def write_kubeconfig(self):
        """The admin kubeconfig, pointed at the forwarder; the certificate names localhost."""
        with open(self.cluster.kubeconfig) as f:
            doc = yaml.safe_load(f)
        for entry in doc["clusters"]:
            entry["cluster"]["server"] = f"https://{ROOT_IP}:{self.api_forward.port}"
            entry["cluster"]["tls-server-name"] = "localhost"
        path = os.path.join(self.tmp, "agent.kubeconfig")
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        os.chmod(path, 0o600)
        return path

    def make_service(self):
        service = self.cluster.request("POST", f"/api/v1/namespaces/{self.ns}/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web",
                         "annotations": {"powerctl.io/load-balancing": "power-aware"}},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": EP_PORT}]}})
        self.vip = service["spec"]["clusterIP"]
        self.put_slice(3)
        return self.vip

    def put_slice(self, count):
        body = {
            "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1",
                         "labels": {"kubernetes.io/service-name": "web",
                                    "endpointslice.kubernetes.io/managed-by": "powerctl-e2e"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": EP_PORT, "protocol": "TCP"}],
            "endpoints": [{"addresses": [endpoint_ip(i)], "conditions": {"ready": True},
                           "topology": {"kubernetes.io/hostname": self.nodes[i - 1]}}
                          for i in range(1, count + 1)]}
        path = SLICES.format(ns=self.ns)
        status, current = self.cluster.api("GET", path + "/web-1")
        if status == 200:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.cluster.request("PUT", path + "/web-1", body)
        else:
            self.cluster.request("POST", path, body)

    def remove_leftover_table(self):
        subprocess.run(["ip", "netns", "exec", self.net.client, "nft", "delete", "table", "ip",
                        "powerctl-lb"], capture_output=True)

    def start_agent(self):
        agent = Agent(self.net.client, self.kubeconfig, self.config, self.nodes[0])
        self.addCleanup(agent.stop)
        return agent

    def weights(self, agent):
        status = agent.status()
        for service in status["services"]:
            if service["namespace"] == self.ns and service["state"] == "balanced":
                return [e["weight"] for e in service["ports"][0]["endpoints"]]
        return None

    def assertSplit(self, weights, who):
        shares, failed, elapsed = self.net.split(self.vip, REQUESTS)
        print(f"\n  {who} weights {weights}: split "
              + ", ".join(f"{n} {shares[n]:.1f}%" for n in ENDPOINTS)
              + f" ({REQUESTS} connections in {elapsed:.1f} s)", file=sys.stderr)
        self.assertEqual(failed, 0)
        total = sum(weights)
        for name, weight in zip(ENDPOINTS, weights):
            self.assertAlmostEqual(shares[name], 100.0 * weight / total, delta=TOLERANCE, msg=name)

    def tables(self):
        return self.net.nft("list", "tables")

    def test_split_follows_predictions_and_services_and_exit_removes_the_rules(self):
        agent = self.start_agent()
        weights = wait_for("the agent's weights", lambda: self.weights(agent))
        # The same core as `powerctl lb weights`: 100 * 2.6 / (delta + 0.1) for 2.5, 5, 10 W.
        self.assertEqual(weights, [100, 51, 26])
        doc = json.loads(powerctl("lb", "weights", "web", "-n", self.ns, "-o", "json",
                                  "--kubeconfig", self.cluster.kubeconfig, "-c", self.config).stdout)
        self.assertEqual([e["weight"] for e in doc["endpoints"]], weights)
        self.assertSplit(weights, "lb-agent")
        table = self.net.nft("list", "table", "ip", "powerctl-lb")
        self.assertIn(f'comment "{self.ns}/web:80/TCP"', table)
        self.assertEqual(agent.metric("powerctl_lb_rules_in_effect"), 1)
        self.assertEqual(agent.metric(
            f'powerctl_lb_endpoint_weight{{namespace="{self.ns}",service="web",port="80/TCP",'
            f'endpoint="{endpoint_ip(3)}:{EP_PORT}"}}'), 26)
        self.assertEqual(json.loads(agent.get("/readyz"))["ready"], True)

        # Resyncs every 2 s find the same weights: nothing is written. (On a loaded machine a
        # Prometheus query can time out, which legitimately changes the weights for one sync and
        # back: such a window is retried, a clean one must come.)
        def quiet_window():
            programmed = agent.metric('powerctl_lb_syncs_total{result="programmed"}')
            unchanged = agent.metric('powerctl_lb_syncs_total{result="unchanged"}') or 0
            wait_for("two unchanged resyncs", lambda: (agent.metric(
                'powerctl_lb_syncs_total{result="unchanged"}') or 0) >= unchanged + 2, timeout=20)
            return agent.metric('powerctl_lb_syncs_total{result="programmed"}') == programmed
        self.assertTrue(any(quiet_window() for _ in range(3)), agent.log())

        # The third node's model now says a request costs what it costs on the first.
        self.cluster.request("PATCH", f"/api/v1/nodes/{self.nodes[2]}",
                             {"metadata": {"annotations": {"powerctl.io/max-watts": "300"}}},
                             content_type="application/merge-patch+json")
        wait_for("new weights", lambda: self.weights(agent) == [100, 51, 100])
        self.assertSplit([100, 51, 100], "lb-agent")

        # An endpoint leaves the slice: the watch brings it in before the next resync matters.
        self.put_slice(2)
        wait_for("two endpoints", lambda: self.weights(agent) == [100, 51])
        self.assertSplit([100, 51, 0], "lb-agent")

        # The annotation goes: the table goes, kube-proxy (the stand-in) spreads evenly.
        self.put_slice(3)
        self.cluster.request("PATCH", f"/api/v1/namespaces/{self.ns}/services/web",
                             {"metadata": {"annotations": {"powerctl.io/load-balancing": None}}},
                             content_type="application/merge-patch+json")
        wait_for("the table to go", lambda: "powerctl-lb" not in self.tables())
        self.assertSplit([1, 1, 1], "kube-proxy stand-in")

        self.cluster.request("PATCH", f"/api/v1/namespaces/{self.ns}/services/web",
                             {"metadata": {"annotations": {"powerctl.io/load-balancing": "power-aware"}}},
                             content_type="application/merge-patch+json")
        wait_for("the table to return", lambda: "powerctl-lb" in self.tables())

        # The DaemonSet limits the agent to 128Mi: its peak after all of the above stays well below.
        with open(f"/proc/{agent.proc.pid}/status") as f:
            peak_kib = int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
        print(f"\n  lb-agent peak RSS {peak_kib / 1024:.1f} MiB", file=sys.stderr)
        self.assertLess(peak_kib, 96 * 1024)

        self.assertEqual(agent.stop(), 0, agent.log())
        self.assertNotIn("powerctl-lb", self.tables())
        self.assertIn("kube-proxy-standin", self.tables())
        self.assertIn("removing the rules", agent.log())
        self.assertSplit([1, 1, 1], "kube-proxy stand-in")

    def test_no_predictions_give_equal_weights(self):
        # Prometheus unreachable (nothing listens on port 1 of the root side of the veth):
        # every endpoint gets lb.unknownWeight, the Service is still balanced, and says why.
        self.write_config(f"http://{ROOT_IP}:1")
        agent = self.start_agent()
        weights = wait_for("the agent's weights", lambda: self.weights(agent))
        self.assertEqual(weights, [50, 50, 50])
        service = [s for s in agent.status()["services"] if s["namespace"] == self.ns][0]
        self.assertIn("equal weights", service["reason"])
        self.assertEqual({e["basis"] for e in service["ports"][0]["endpoints"]}, {"unknown"})
        self.assertSplit(weights, "lb-agent")

        # The agent's ops port is the extender's HTTP server: the same hostile clients fail
        # here too. A 64 KiB trailer field once aborted the process; 600 silent connections
        # once kept /healthz from answering; SIGHUP once ended the agent without removing its
        # rules.
        host, port = agent.url.rsplit("/", 1)[-1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            try:
                s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"0\r\nX: " + b"a" * 65534 + b"\r\n\r\n")
                s.recv(9)
            except OSError:
                pass
        silent = [socket.create_connection((host, int(port))) for _ in range(600)]
        self.addCleanup(lambda: [c.close() for c in silent])
        agent.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        for _ in range(30):
            self.assertEqual(agent.get("/healthz"), "ok\n")
        self.assertIsNone(agent.proc.poll(), agent.log())
        self.assertIn("SIGHUP ignored", agent.log())
        self.assertEqual(agent.stop(), 0, agent.log())

    def test_a_table_the_kernel_refuses_leaves_the_traffic_to_kube_proxy(self):
        # Another program holds a table of the agent's name (nft's "owner" flag): the kernel
        # refuses the agent's transaction with EPERM, as it would any rule it cannot take.
        holder = subprocess.Popen(["ip", "netns", "exec", self.net.client, "nft", "-i"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, text=True)
        def release():
            if holder.poll() is None:
                holder.kill()
                holder.wait()
            if not holder.stdin.closed:
                holder.stdin.close()
        self.addCleanup(release)
        holder.stdin.write("add table ip powerctl-lb { flags owner ; }\n")
        holder.stdin.flush()
        wait_for("the held table", lambda: "powerctl-lb" in self.tables(), timeout=10)

        agent = self.start_agent()
        status = wait_for("the failure", lambda: (lambda s: s if s["lastError"] else None)(
            agent.status()))
        self.assertIn("Operation not permitted", status["lastError"])
        self.assertFalse(status["rulesInEffect"])
        self.assertGreaterEqual(agent.metric('powerctl_lb_syncs_total{result="failed"}'), 1)
        self.assertEqual(agent.metric("powerctl_lb_rules_in_effect"), 0)
        ready = json.loads(agent.get("/readyz"))
        self.assertIn("rules", [d["name"] for d in ready["degraded"]])
        self.assertIn("kube-proxy carries the traffic", agent.log())
        self.assertSplit([1, 1, 1], "kube-proxy stand-in")

        # The holder goes away: the next resync programs the weights.
        holder.stdin.close()
        holder.wait(timeout=10)
        wait_for("the agent's rules", lambda: agent.status()["rulesInEffect"], timeout=30)
        self.assertEqual(agent.status()["lastError"], "")
        self.assertSplit([100, 51, 26], "lb-agent")
        self.assertEqual(agent.stop(), 0, agent.log())
        self.assertNotIn("powerctl-lb", self.tables())


if __name__ == "__main__":
    unittest.main()
