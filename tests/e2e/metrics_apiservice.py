"""metrics.k8s.io for end-to-end tests, served the way metrics-server serves it: through the
kube-apiserver's aggregation layer.

    from metrics_apiservice import MetricsApiService

    with MetricsApiService(cluster, nodes={"node-a": {"cpu": "1500m", "memory": "2Gi"}}) as m:
        # GET /apis/metrics.k8s.io/v1beta1/nodes on the apiserver now answers node-a
        m.set_node_usage("node-b", cpu="250m", memory="1Gi")
        m.requests()          # what the fake server saw (user, groups, client CN, status)

What it sets up (and removes again on exit, so that other tests of the shared cluster see
no metrics.k8s.io):

- fake_metrics_server.py, started through Cluster.start_process (so `cluster.py down` stops
  it too if a test dies) and stopped by PID. It listens on a non-loopback address of this
  machine (Endpoints may not hold 127.0.0.0/8) on a port it picks itself, with a serving
  certificate signed by the cluster CA for SERVICE.NAMESPACE.svc, and it only answers
  requests that carry the aggregator's front-proxy-client certificate and X-Remote-User.
- Namespace NAMESPACE (kept afterwards: a Terminating namespace would refuse the next
  instance's Service), a Service without selector, Endpoints with ADDRESS:PORT, and the
  APIService v1beta1.metrics.k8s.io with the cluster CA as caBundle. The apiserver runs with
  --enable-aggregator-routing=true (cluster.py), so it dials the Endpoints address: without
  kube-proxy a ClusterIP leads nowhere.

There is no routable address on a machine with only loopback; then the constructor's
start-up raises NoRoutableAddress, a unittest.SkipTest, so the test is reported as skipped
with the reason. POWERCTL_E2E_METRICS_ADDRESS overrides the address.
"""

import base64
import contextlib
import http.client
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import ssl
import tempfile
import unittest

import cluster as cl

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_SCRIPT = os.path.join(HERE, "fake_metrics_server.py")
APISERVICE = "v1beta1.metrics.k8s.io"
APISERVICE_PATH = f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE}"
NODES_PATH = "/apis/metrics.k8s.io/v1beta1/nodes"
DEFAULT_NAMESPACE = "powerctl-e2e-metrics"
DEFAULT_SERVICE = "fake-metrics-server"


class NoRoutableAddress(unittest.SkipTest):
    """This machine has no non-loopback IPv4 address an Endpoints object may hold."""


def _usable(text):
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    # what Endpoints validation refuses (ValidateNonSpecialIP), plus IPv6 (the fake server
    # and this helper only do IPv4)
    return (ip.version == 4 and not (ip.is_loopback or ip.is_link_local or ip.is_multicast
                                      or ip.is_unspecified))


def _bindable(text):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((text, 0))
        return True
    except OSError:
        return False


def routable_address():
    """A non-loopback IPv4 address of this machine that a socket can bind, or None.

    $POWERCTL_E2E_METRICS_ADDRESS if set; else the source address the kernel picks for an
    outside destination (a UDP connect sends nothing); else the first of `hostname -I`.
    """
    env = os.environ.get("POWERCTL_E2E_METRICS_ADDRESS")
    if env:
        return env if _usable(env) and _bindable(env) else None
    candidates = []
    for dest in ("198.51.100.1", "192.0.2.1", "10.255.255.255"):  # documentation/private nets
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((dest, 9))
            candidates.append(s.getsockname()[0])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        candidates += out.split()
    for c in candidates:
        if _usable(c) and _bindable(c):
            return c
    return None


def _apiserver_argv(cluster):
    return next((p.get("argv") or [] for p in cluster.processes if p["role"] == "kube-apiserver"),
                [])


class MetricsApiService:
    """Serves metrics.k8s.io/v1beta1 through the cluster's aggregation layer (see module doc).

    nodes: {"NODE": {"cpu": "1500m", "memory": "2Gi"}} (quantities as text; optional
           "window" ("30s") and "timestamp" (RFC 3339, default now) per entry).
    pods:  {"NS/NAME": {"cpu": ..., "memory": ...}} (one container "main") or
           {"NS/NAME": {"containers": {"CNAME": {"cpu": ..., "memory": ...}}}}.
    """

    def __init__(self, cluster, nodes=None, pods=None, namespace=DEFAULT_NAMESPACE,
                 service=DEFAULT_SERVICE, address=None, timeout=60.0):
        self.cluster = cluster
        self.initial = {"nodes": dict(nodes or {}), "pods": dict(pods or {})}
        self.namespace, self.service = namespace, service
        self.address = address
        self.timeout = timeout
        self.port = self.control_port = None
        self.process = None  # cluster.start_process record
        self._tmp = None
        self.registered = False

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.stop()
        except Exception as e:  # noqa: BLE001
            if exc_type is None:
                raise
            # keep the test's own failure; the clean-up problem goes to stderr
            cl.log(f"metrics APIService clean-up failed: {type(e).__name__}: {e}")

    def start(self):
        """Starts the fake server, registers the APIService and waits until the apiserver
        serves metrics.k8s.io (APIService Available=True and a NodeMetricsList through it)."""
        if self.address is None:
            self.address = routable_address()
        if not self.address:
            raise NoRoutableAddress(
                "metrics.k8s.io e2e needs a non-loopback IPv4 address on this machine: the "
                "aggregator dials the APIService's Endpoints, which may not hold 127.0.0.0/8 "
                "(set POWERCTL_E2E_METRICS_ADDRESS to choose one)")
        argv = _apiserver_argv(self.cluster)
        if argv and "--enable-aggregator-routing=true" not in argv:
            raise cl.ClusterError("the cluster's kube-apiserver runs without "
                                  "--enable-aggregator-routing=true (started by an older "
                                  "cluster.py?); restart it with cluster.py down/up")
        try:
            self.unregister(wait=False)  # leftovers of a run that died
            self._start_server()
            self.register()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Unregisters (waiting until the apiserver no longer serves the group) and stops the
        server. Idempotent."""
        try:
            self.unregister()
        finally:
            self.stop_server()
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None

    def _start_server(self):
        self._tmp = tempfile.mkdtemp(prefix="powerctl-e2e-metrics-")
        pki = os.path.join(self.cluster.dir, "pki")
        dns = f"{self.service}.{self.namespace}.svc"
        crt, key = cl._sign(pki, "fake-metrics-server", dns, (), "v3_server",
                            [("DNS", dns), ("DNS", dns + ".cluster.local"), ("IP", self.address)])
        data = os.path.join(self._tmp, "data.json")
        with open(data, "w") as f:
            json.dump(self.initial, f)
        ready = os.path.join(self._tmp, "ready.json")
        self.process = self.cluster.start_process(
            "fake-metrics-server",
            [cl.PYTHON, SERVER_SCRIPT, "--address", self.address, "--port", "0",
             "--control-port", "0", "--cert", crt, "--key", key, "--client-ca", self.cluster.ca,
             "--allowed-names", "front-proxy-client", "--data", data, "--ready-file", ready])
        rec = self.process

        def started():
            if not cl.pid_alive(rec["pid"], rec.get("start_time")):
                raise cl.FatalWaitError(f"fake-metrics-server exited; last lines of {rec['log']}:"
                                        f"\n{cl.tail(rec['log'])}")
            if not os.path.exists(ready):
                return None
            with open(ready) as f:
                return json.load(f)
        info = cl.wait_for(started, 20, "fake-metrics-server to listen",
                           diagnose=lambda: cl.tail(rec["log"]))
        self.port, self.control_port = info["port"], info["control_port"]

    def stop_server(self):
        """Stops the fake server by PID (the APIService stays: it becomes unavailable)."""
        if self.process is not None:
            self.cluster.stop_process(self.process, timeout=5)
            self.process = None

    @property
    def log_path(self):
        return self.process["log"] if self.process else None

    # -- Kubernetes objects -------------------------------------------------
    def register(self, wait=True):
        """Creates the Service, Endpoints and APIService; with wait, returns once the
        apiserver answers GET /apis/metrics.k8s.io/v1beta1/nodes with 200."""
        c, ns = self.cluster, self.namespace
        c.ensure_namespace(ns)
        labels = {"app.kubernetes.io/name": "fake-metrics-server", "powerctl.test/e2e": "metrics"}
        self._create(f"/api/v1/namespaces/{ns}/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": self.service, "namespace": ns, "labels": labels},
            # no selector: the Endpoints below are ours, the endpoints controller leaves them
            "spec": {"type": "ClusterIP", "ports": [
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": self.port}]}})
        self._create(f"/api/v1/namespaces/{ns}/endpoints", {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": self.service, "namespace": ns, "labels": labels},
            "subsets": [{"addresses": [{"ip": self.address}],
                         "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}]}]})
        with open(c.ca, "rb") as f:
            ca_bundle = base64.b64encode(f.read()).decode()
        self._create("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE, "labels": labels},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                     "service": {"namespace": ns, "name": self.service, "port": 443},
                     "caBundle": ca_bundle, "groupPriorityMinimum": 100,
                     "versionPriority": 100}})
        self.registered = True
        if wait:
            self.wait_available()

    def _create(self, collection, obj):
        name = obj["metadata"]["name"]
        code, body = self.cluster.api("POST", collection, obj)
        if code == 409:  # replace what a previous instance left
            code, body = self.cluster.api("DELETE", f"{collection}/{name}")
            cl.wait_for(lambda: self.cluster.api("GET", f"{collection}/{name}")[0] == 404, 30,
                        f"{collection}/{name} to be deleted")
            code, body = self.cluster.api("POST", collection, obj)
        if code != 201:
            raise cl.ApiError("POST", collection, code, body)

    def apiservice_conditions(self):
        """{type: condition} of the APIService, {} when it does not exist."""
        code, body = self.cluster.api("GET", APISERVICE_PATH)
        if code != 200:
            return {}
        return {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}

    def wait_available(self, timeout=None):
        def served():
            cond = self.apiservice_conditions().get("Available", {})
            if cond.get("status") != "True":
                return None
            code, _ = self.cluster.api("GET", NODES_PATH)
            return code == 200
        cl.wait_for(served, timeout or self.timeout,
                    "APIService v1beta1.metrics.k8s.io Available=True and "
                    f"{NODES_PATH} served through the apiserver", diagnose=self.diagnose)

    def unregister(self, wait=True):
        """Deletes the APIService, Endpoints and Service (missing ones are fine); with wait,
        returns once the apiserver answers 404 for metrics.k8s.io."""
        c, ns = self.cluster, self.namespace
        for path in (APISERVICE_PATH, f"/api/v1/namespaces/{ns}/endpoints/{self.service}",
                     f"/api/v1/namespaces/{ns}/services/{self.service}"):
            code, body = c.api("DELETE", path)
            if code not in (200, 202, 404):
                raise cl.ApiError("DELETE", path, code, body)
        self.registered = False
        if wait:
            cl.wait_for(lambda: c.api("GET", NODES_PATH)[0] == 404, self.timeout,
                        f"{NODES_PATH} to be 404 after deleting the APIService",
                        diagnose=self.diagnose)

    def diagnose(self):
        parts = [f"APIService conditions: {json.dumps(self.apiservice_conditions())}"]
        if self.log_path:
            parts.append(f"fake-metrics-server log ({self.log_path}):\n{cl.tail(self.log_path, 15)}")
        parts.append("kube-apiserver log:\n" + self.cluster.log_tail("kube-apiserver", 15))
        return "\n".join(parts)

    # -- the values served -------------------------------------------------
    def _control(self, method, path, body=None):
        if self.control_port is None:
            raise cl.ClusterError("the fake metrics server is not running")
        conn = http.client.HTTPConnection("127.0.0.1", self.control_port, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data,
                         headers={"Content-Type": "application/json"} if data else {})
            resp = conn.getresponse()
            text = resp.read().decode()
            if resp.status != 200:
                raise cl.ClusterError(f"fake metrics server {method} {path}: HTTP {resp.status}: "
                                      f"{text}")
            return json.loads(text)
        finally:
            conn.close()

    @staticmethod
    def _entry(cpu, memory, window, timestamp):
        entry = {"cpu": str(cpu)}
        if memory is not None:
            entry["memory"] = str(memory)
        if window is not None:
            entry["window"] = window
        if timestamp is not None:
            entry["timestamp"] = timestamp
        return entry

    def set_node_usage(self, node, cpu, memory=None, window=None, timestamp=None):
        """Serves this usage for one node (others unchanged). cpu/memory: quantities
        ("1500m", 1.5, "2Gi"); window: "30s"; timestamp: RFC 3339 (default: now)."""
        self._control("PATCH", "/nodes", {node: self._entry(cpu, memory, window, timestamp)})

    def set_nodes(self, nodes):
        """Replaces every node entry: {"NODE": {"cpu": ..., "memory": ...}}."""
        self._control("PUT", "/nodes", nodes)

    def remove_node(self, node):
        self._control("PATCH", "/nodes", {node: None})

    def set_pod_usage(self, namespace, name, cpu=None, memory=None, containers=None,
                      window=None, timestamp=None):
        """One pod: a single container "main" with cpu/memory, or containers
        {"CNAME": {"cpu": ..., "memory": ...}}."""
        entry = ({"containers": containers} if containers is not None
                 else self._entry(cpu, memory, None, None))
        if window is not None:
            entry["window"] = window
        if timestamp is not None:
            entry["timestamp"] = timestamp
        self._control("PATCH", "/pods", {f"{namespace}/{name}": entry})

    def set_pods(self, pods):
        """Replaces every pod entry: {"NS/NAME": {...}}."""
        self._control("PUT", "/pods", pods)

    def remove_pod(self, namespace, name):
        self._control("PATCH", "/pods", {f"{namespace}/{name}": None})

    def fail(self, status, message="injected failure", reason="InternalError"):
        """Resource paths (not discovery or health) answer HTTP status; None serves again.
        Discovery keeps working, so the APIService stays Available."""
        body = {"status": status, "message": message, "reason": reason} if status else {}
        self._control("PUT", "/failure", body)

    def state(self):
        return self._control("GET", "/state")

    def mark(self):
        """An index into the request log; pass it to requests(since=...)."""
        return self._control("GET", "/requests?since=1000000000")["next"]

    def requests(self, since=0, path_prefix=None):
        """Requests the fake server got on its HTTPS port: dicts with method, path, query,
        user (X-Remote-User), groups, client_cn, status. TLS failures have "error"."""
        got = self._control("GET", f"/requests?since={int(since)}")["requests"]
        if path_prefix:
            got = [r for r in got if (r.get("path") or "").startswith(path_prefix)]
        return got

    # -- direct access, bypassing the aggregator (to check the server itself) ---------
    def direct_get(self, path, cert=None, key=None, headers=None):
        """GET on the fake server itself, optionally with a client certificate.
        Returns (status, parsed JSON or text)."""
        ctx = ssl.create_default_context(cafile=self.cluster.ca)
        ctx.check_hostname = False  # the certificate names the Service, we dial the IP
        if cert:
            ctx.load_cert_chain(cert, key)
        conn = http.client.HTTPSConnection(self.address, self.port, context=ctx, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            text = resp.read().decode()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text


def front_proxy_client_cert(cluster):
    """(cert, key) of the cluster's front-proxy-client, which the aggregator presents."""
    pki = os.path.join(cluster.dir, "pki")
    return os.path.join(pki, "front-proxy-client.crt"), os.path.join(pki, "front-proxy-client.key")


__all__ = ["MetricsApiService", "NoRoutableAddress", "routable_address", "front_proxy_client_cert",
           "APISERVICE", "NODES_PATH"]
