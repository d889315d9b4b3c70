"""`powerctl schedule-server` while its dependencies fail, end to end: the real kube-apiserver
(restarted under it), a real Prometheus scraping node_exporter (stopped and started again), and a
TensorFlow Serving REST model server (an in-process fake: killed, hanging, back). In each case the
extender keeps answering prioritize promptly with degraded scores and reasons, and recovers when
the dependency returns. The extender runs at the highest verbosity, and its log is checked for
the API token, TLS key material and request bodies."""
import http.server
import json
import os
import socket
import socketserver
import subprocess
import threading
import time
import unittest
import urllib.request
import uuid

import cluster as cl
import prometheus_stack
from e2e_support import ClusterTest

NS = "faults-e2e"
TEMPERATURES = {"Ambient": 23, "CPU1": 41, "CPU2": 44.5}
RANGES = {"ambient/min": "10", "ambient/max": "40", "cpu1/min": "20", "cpu1/max": "90",
          "cpu2/min": "20", "cpu2/max": "90"}
TLS = os.path.join(os.environ.get("POWERCTL_SOURCE_DIR", "../.."), "tests", "fixtures", "tls")
BODY_MARKER = "body-marker-7f3a9c"  # only ever inside request bodies


class FakeModel:
    """TF Serving's REST :predict on a fixed port: "up" answers 100 + 200 * cpu watts per row,
    "hang" reads the request and never answers, stop() closes the port (a killed server)."""

    def __init__(self, port):
        self.port = port
        self.mode = "up"
        self.requests = 0
        self.server = None
        self.release = threading.Event()  # ends hanging handlers at cleanup
        self.connections = set()

    def start(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                outer.connections.add(self.connection)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests += 1
                if outer.mode == "hang":
                    outer.release.wait(60)
                    return
                answer = json.dumps({"outputs": [[100 + 200 * row[0]] for row in body["inputs"]]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, *args):
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        """Like a killed process: the port closes and so does every open connection."""
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        for connection in list(self.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.connections.clear()


@unittest.skipUnless(prometheus_stack.available(), "Debian's prometheus and prometheus-node-exporter are needed")
class ExtenderFaultsTest(ClusterTest):
    def setUp(self):
        super().setUp()
        tag = uuid.uuid4().hex[:5]
        self.nodes = [f"faults-{tag}-a", f"faults-{tag}-b"]
        for i, name in enumerate(self.nodes):
            self.cluster.create_node(name, cpu=str(4 * (i + 1)), labels=RANGES, managed=False)
            self.addCleanup(self.cluster.delete_node, name)
        self.cluster.ensure_namespace(NS)
        self.stack = prometheus_stack.PrometheusStack(*self.nodes)
        self.stack.__enter__()
        self.addCleanup(self.stack.stop)
        self.stack.write_ipmi(TEMPERATURES)

        model_port, self.port, self.ops_port = cl.free_ports(3)
        self.model = FakeModel(model_port)
        self.model.start()
        self.addCleanup(self.model.stop)
        self.addCleanup(self.model.release.set)
        config = os.path.join(self.tmp, "powerctl.yaml")
        with open(config, "w") as f:
            f.write(f"""namespace: {NS}
predictor:
  backend: tfserving-rest
  timeout: 500ms
  model:
    host: 127.0.0.1
    restPort: {model_port}
    name: power
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: {self.stack.url}
  refreshInterval: 1s
  maxAge: 30s
""")
        self.log_path = os.path.join(self.tmp, "extender.log")
        argv = [os.environ["POWERCTL_BINARY"], "schedule-server", "-c", config, "-v", "10",
                "--kubeconfig", self.cluster.kubeconfig, f"--listen=127.0.0.1:{self.port}",
                f"--ops-listen=127.0.0.1:{self.ops_port}", "--identity=faults",
                f"--tls-cert={TLS}/server.crt", f"--tls-key={TLS}/server.key"]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, self.proc.pid, popen=self.proc, name="schedule-server")
        self.addCleanup(self.assert_no_secrets_in_log)
        cl.wait_for(self.ready, 60, "schedule-server ready", diagnose=lambda: cl.tail(self.log_path))
        self.stack.wait_for_series('rate(node_cpu_seconds_total{mode="idle"}[1m])')
        self.pods = 0
        self.wait_until_predicted("the model's first predictions")

    # -- helpers -------------------------------------------------------------
    def ready(self):
        if self.proc.poll() is not None:
            raise cl.FatalWaitError(f"schedule-server exited {self.proc.returncode}:\n{cl.tail(self.log_path)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}/readyz", timeout=2) as r:
                return json.load(r)["ready"]
        except OSError:
            return False

    def degraded(self):
        """{name: reason} of what /readyz says is degraded (it stays 200: scheduling goes on)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ops_port}/readyz", timeout=2) as r:
            self.assertEqual(r.status, 200)
            return {d["name"]: d["reason"] for d in json.load(r)["degraded"]}

    def prioritize(self, nodes=None):
        """POSTs prioritize for a new pod (NodeNames mode, over TLS); returns (milliseconds,
        answer, {node: recorded decision entry})."""
        import ssl
        self.pods += 1
        name = f"pod-{self.pods}"
        pod = {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{self.pods}",
                            "annotations": {"note": BODY_MARKER}},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": nodes or self.nodes}).encode()
        context = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}/scheduler/prioritize", body,
                                         {"Content-Type": "application/json"})
        start = time.monotonic()
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            self.assertEqual(r.status, 200)
            answer = json.load(r)
        ms = (time.monotonic() - start) * 1000
        with urllib.request.urlopen(
                f"http://127.0.0.1:{self.ops_port}/v1/decisions?pod={NS}/{name}", timeout=5) as r:
            items = [d for d in json.load(r)["items"] if d["verb"] == "prioritize"]
        entries = {n["node"]: n for n in items[-1]["nodes"]} if items else {}
        return ms, answer, entries

    def predicted(self, entries, nodes=None):
        return all(entries.get(n, {}).get("wattsNow") is not None for n in nodes or self.nodes)

    def wait_until_predicted(self, what, nodes=None, timeout=60):
        cl.wait_for(lambda: self.predicted(self.prioritize(nodes)[2], nodes), timeout, what,
                    interval=0.5, diagnose=lambda: cl.tail(self.log_path))

    def assert_degraded(self, words, budget_ms):
        """Prioritize still answers every node, within budget_ms, with no watts and a reason."""
        ms, answer, entries = self.prioritize()
        self.assertLess(ms, budget_ms)
        self.assertEqual(sorted(a["Host"] for a in answer), sorted(self.nodes))
        for node in self.nodes:
            entry = entries[node]
            self.assertIsNone(entry.get("wattsNow"), entry)
            reasons = " ".join([entry.get("reason", "")] + [c.get("reason", "") for c in entry.get("components", [])])
            self.assertTrue(any(w in reasons for w in words), f"{node}: {reasons!r} names none of {words}")
        return ms

    def assert_no_secrets_in_log(self):
        with open(self.log_path, errors="replace") as f:
            log = f.read()
        self.assertGreater(len(log.splitlines()), 20, "-v 10 should log plenty")
        self.assertNotIn(self.cluster.token, log, "the API token is in the log")
        with open(os.path.join(TLS, "server.key")) as f:
            key_lines = [l for l in f.read().splitlines() if l and not l.startswith("-----")]
        for line in key_lines:
            self.assertNotIn(line, log, "TLS key material is in the log")
        self.assertNotIn("PRIVATE KEY", log)
        self.assertNotIn(BODY_MARKER, log, "a request body is in the log")

    # -- faults ----------------------------------------------------------------
    def test_model_server_killed_then_hanging_then_back(self):
        self.model.stop()
        first = self.assert_degraded(["refused", "unreachable", "connect"], 2000)
        # Later requests skip the dead server (back-off) instead of trying it each time.
        asked = self.model.requests
        later = [self.assert_degraded(["refused", "unreachable", "connect"], 1000) for _ in range(5)]
        print(f"\nmodel down: first prioritize {first:.0f} ms, then {max(later):.0f} ms at most")
        self.assertIn(f"127.0.0.1:{self.model.port}", self.degraded().get("model", ""))
        self.model.start()
        self.wait_until_predicted("predictions after the model server came back")
        self.assertNotIn("model", self.degraded())
        self.assertGreater(self.model.requests, asked)

        self.model.mode = "hang"
        self.model.release.clear()
        first = self.assert_degraded(["deadline", "timed out"], 500 + 1000)
        later = [self.assert_degraded(["deadline", "timed out"], 400) for _ in range(5)]
        print(f"model hanging: first prioritize {first:.0f} ms, then {max(later):.0f} ms at most")
        self.model.mode = "up"
        self.model.release.set()
        self.wait_until_predicted("predictions after the model server answered again")

    def test_prometheus_down_then_back(self):
        self.stack.stop_prometheus()
        # Readings stay usable for telemetry.maxAge (30 s), then the nodes say why they have none.
        def stale():
            entries = self.prioritize()[2]
            return not any(self.predicted(entries, [n]) for n in self.nodes)
        cl.wait_for(stale, 60, "telemetry to go stale without Prometheus", interval=0.5)
        self.assert_degraded(["telemetry", "CPU", "cpu", "stale", "Prometheus", "prometheus"], 2000)
        self.assertIn("cannot connect", self.degraded().get("telemetry/cpu", ""))
        self.stack.start_prometheus()
        self.wait_until_predicted("predictions after Prometheus came back")
        cl.wait_for(lambda: "telemetry/cpu" not in self.degraded(), 30, "/readyz without telemetry/cpu")

    def test_kube_apiserver_restart(self):
        before = os.path.getsize(self.log_path)

        def during():  # the node cache keeps answering while the API server is gone
            ms, _, entries = self.prioritize()
            self.assertTrue(self.predicted(entries), entries)
        self.cluster.restart_apiserver(while_down=during)
        # The watches resume (or relist after 410): a node created after the restart is seen.
        late = f"{self.nodes[0]}-late"
        self.cluster.create_node(late, cpu="4", labels=RANGES, managed=False)
        self.addCleanup(self.cluster.delete_node, late)
        cl.wait_for(lambda: self.prioritize(self.nodes + [late])[2].get(late, {}).get("reason", "x")
                    != self.unknown_reason, 60, "the extender to see a node created after the restart",
                    interval=0.5, diagnose=lambda: cl.tail(self.log_path))
        cl.wait_for(self.ready, 60, "readyz after the restart")
        with open(self.log_path, errors="replace") as f:
            f.seek(before)
            after = f.read()
        self.assertRegex(after, r"GET \S*/api/v1/nodes", "no list or watch of nodes after the restart")
        print("\nafter the restart:", "relisted after 410" if "expired; listing again" in after
              else "watches resumed from their resource versions")

    @property
    def unknown_reason(self):
        """What a prioritize entry says of a node the cache does not know."""
        ghost = f"ghost-{uuid.uuid4().hex[:5]}"
        return self.prioritize(self.nodes + [ghost])[2].get(ghost, {}).get("reason")



if __name__ == "__main__":
    unittest.main()
