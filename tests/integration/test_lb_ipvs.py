"""core/lb's ipvs Balancer on a real kernel: a client host and three endpoint hosts in network
namespaces, HTTP servers on the endpoints, a kube-proxy-like wrr virtual server (masquerading,
every real server at weight 1) made with ipvsadm in the client namespace, and the split of new
connections after tests/lb_ipvs_tool (standing in for the lb-agent loop) set the weights.

Needs a kernel with IPVS (/proc/net/ip_vs; the ip_vs module), root and ipvsadm; skipped with
the reason otherwise. Every namespace and process it starts is removed by name or PID."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

TOOL = os.environ.get("LB_IPVS_TOOL") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tests", "lb_ipvs_tool")
VIP, VIP_PORT, RR_PORT, EP_PORT = "10.96.0.10", 80, 81, 8080
ENDPOINTS = ["ep1", "ep2", "ep3"]
REQUESTS = 3000
TOLERANCE = 5.0  # percentage points

SERVER = r"""
import http.server, sys
name = sys.argv[1].encode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(name)))
        self.end_headers()
        self.wfile.write(name)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[2])), H).serve_forever()
"""

# One new TCP connection per request; prints {"ep1": n, ..., "failed": n} as JSON.
CLIENT = r"""
import collections, json, socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
counts = collections.Counter()
for _ in range(n):
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        counts[data.split(b"\r\n\r\n", 1)[1].decode()] += 1
    except OSError:
        counts["failed"] += 1
print(json.dumps(counts))
"""


def skip_reason():
    if not os.path.exists("/proc/net/ip_vs") and os.geteuid() == 0 and shutil.which("modprobe"):
        subprocess.run(["modprobe", "-q", "ip_vs"], capture_output=True)  # as kube-proxy does
    if not os.path.exists("/proc/net/ip_vs"):
        return "kernel has no IPVS (/proc/net/ip_vs missing)"
    if os.geteuid() != 0:
        return "needs root (network namespaces and IPVS); run ctest as root to include it"
    for tool in ("ip", "ipvsadm"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (packaging/install-deps.sh installs iproute2 and ipvsadm)"
    if not os.path.exists(TOOL):
        return f"{TOOL} not built"
    probe = f"pcipvsprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create network namespaces here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


SKIP = skip_reason()


@unittest.skipIf(SKIP, SKIP)
class LbIpvsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="powerctl-ipvs-")
        cls.prefix = f"pcipvs{os.getpid()}"
        cls.client = f"{cls.prefix}-client"
        cls.namespaces = []
        cls.servers = []
        try:
            cls._build_topology()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for proc in cls.servers:
            proc.kill()
            proc.wait()
        for ns in cls.namespaces:  # the namespace's IPVS table goes with it
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def _run(cls, *args):
        return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout

    @classmethod
    def _ip(cls, *args):
        cls._run("ip", *args)

    @classmethod
    def ipvsadm(cls, *args):
        return cls._run("ip", "netns", "exec", cls.client, "ipvsadm", *args)

    @classmethod
    def _build_topology(cls):
        # client: one veth per endpoint host (10.0.i.1/24 <-> 10.0.i.2/24); the endpoints route
        # back through it, as pods' replies pass the node that masqueraded them.
        cls._ip("netns", "add", cls.client)
        cls.namespaces.append(cls.client)
        cls._ip("-n", cls.client, "link", "set", "lo", "up")
        for i, name in enumerate(ENDPOINTS, start=1):
            ns = f"{cls.prefix}-{name}"
            cls._ip("netns", "add", ns)
            cls.namespaces.append(ns)
            cls._ip("link", "add", f"c{i}", "netns", cls.client, "type", "veth", "peer", "name",
                    "eth0", "netns", ns)
            cls._ip("-n", cls.client, "addr", "add", f"10.0.{i}.1/24", "dev", f"c{i}")
            cls._ip("-n", cls.client, "link", "set", f"c{i}", "up")
            cls._ip("-n", ns, "addr", "add", f"10.0.{i}.2/24", "dev", "eth0")
            cls._ip("-n", ns, "link", "set", "eth0", "up")
            cls._ip("-n", ns, "link", "set", "lo", "up")
            cls._ip("-n", ns, "route", "add", "default", "via", f"10.0.{i}.1")
            cls.servers.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-c", SERVER, name, str(EP_PORT)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        # kube-proxy's layout: the cluster IP on a dummy device (kube-ipvs0), one virtual server
        # per Service port, masquerading real servers at weight 1.
        cls._ip("-n", cls.client, "link", "add", "kube-ipvs0", "type", "dummy")
        cls._ip("-n", cls.client, "addr", "add", f"{VIP}/32", "dev", "kube-ipvs0")
        cls._run("ip", "netns", "exec", cls.client, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for port, scheduler in ((VIP_PORT, "wrr"), (RR_PORT, "rr")):
            cls.ipvsadm("-A", "-t", f"{VIP}:{port}", "-s", scheduler)
            for i in range(1, len(ENDPOINTS) + 1):
                cls.ipvsadm("-a", "-t", f"{VIP}:{port}", "-r", f"10.0.{i}.2:{EP_PORT}", "-m",
                            "-w", "1")
        deadline = time.monotonic() + 20
        for i, name in enumerate(ENDPOINTS, start=1):
            while cls.requests(f"10.0.{i}.2", EP_PORT, 1).get(name) != 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"HTTP server in {name} did not answer")
                time.sleep(0.1)

    @classmethod
    def requests(cls, host, port, n):
        out = subprocess.run(["ip", "netns", "exec", cls.client, sys.executable, "-c", CLIENT,
                              host, str(port), str(n)],
                             check=True, capture_output=True, text=True, timeout=300).stdout
        return json.loads(out)

    def tool(self, command, weights, port=VIP_PORT):
        services = [{
            "namespace": "default", "name": "web", "cluster_ip": VIP, "port": port,
            "protocol": "TCP",
            "endpoints": [{"ip": f"10.0.{i}.2", "port": EP_PORT, "weight": w}
                          for i, w in enumerate(weights, start=1)],
        }]
        path = os.path.join(self.tmp, "services.json")
        with open(path, "w") as f:
            json.dump(services, f)
        return subprocess.run(["ip", "netns", "exec", self.client, TOOL, command, path],
                              capture_output=True, text=True, timeout=60)

    def weights(self, port=VIP_PORT):
        out = {}
        for line in self.ipvsadm("-S", "-n").splitlines():
            parts = line.split()
            if parts[:3] == ["-a", "-t", f"{VIP}:{port}"]:
                out[parts[4]] = int(parts[parts.index("-w") + 1])
        return [out[f"10.0.{i}.2:{EP_PORT}"] for i in range(1, len(ENDPOINTS) + 1)]

    def assertSplit(self, weights, port=VIP_PORT):
        start = time.monotonic()
        counts = self.requests(VIP, port, REQUESTS)
        elapsed = time.monotonic() - start
        self.assertEqual(counts.get("failed", 0), 0, counts)
        total = sum(weights)
        shares = {name: 100.0 * counts.get(name, 0) / REQUESTS for name in ENDPOINTS}
        print(f"\n  ipvs weights {weights}: split "
              + ", ".join(f"{n} {shares[n]:.1f}%" for n in ENDPOINTS)
              + f" ({REQUESTS} connections in {elapsed:.1f} s)", file=sys.stderr)
        for name, weight in zip(ENDPOINTS, weights):
            self.assertAlmostEqual(shares[name], 100.0 * weight / total, delta=TOLERANCE,
                                   msg=f"{name}: {counts}")

    def test_split_follows_weights_and_remove_gives_them_back(self):
        self.assertSplit([1, 1, 1])  # kube-proxy's even split before the agent

        r = self.tool("program", [60, 30, 10])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.weights(), [60, 30, 10])
        self.assertEqual(self.ipvsadm("-S", "-n").count(" -m "), 6)  # still masquerading
        self.assertSplit([60, 30, 10])

        r = self.tool("program", [10, 30, 60])  # predictions changed
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSplit([10, 30, 60])

        r = self.tool("remove", [10, 30, 60])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.weights(), [1, 1, 1])
        self.assertSplit([1, 1, 1])

    def test_rr_and_missing_virtual_servers_are_skipped_untouched(self):
        r = self.tool("program", [60, 30, 10], port=RR_PORT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("skipped default/web:81/TCP: scheduler is rr, not wrr", r.stdout)
        self.assertEqual(self.weights(RR_PORT), [1, 1, 1])

        r = self.tool("program", [60, 30, 10], port=82)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no IPVS virtual server for 10.96.0.10:82/TCP", r.stdout)

    def test_invalid_input_changes_nothing(self):
        r = self.tool("program", [60, 0, 10])
        self.assertEqual(r.returncode, 1)
        self.assertIn("weight 0 is not in 1..100", r.stderr)
        self.assertEqual(self.weights(), [1, 1, 1])
        self.assertSplit([1, 1, 1])


if __name__ == "__main__":
    unittest.main()
