"""core/lb's nftables table on real kernels: a client host and three endpoint hosts in network
namespaces, HTTP servers on the endpoints, and the split of new connections to a virtual
address following the programmed weights (tests/lb_nft_tool stands in for the lb-agent loop).

Root only (network namespaces, nftables); skipped with the reason otherwise. Every namespace
and process it starts is removed by name or PID in cleanup."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

TOOL = os.environ.get("LB_NFT_TOOL") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tests", "lb_nft_tool")
VIP, VIP_PORT, EP_PORT = "10.96.0.10", 80, 8080
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
    if os.geteuid() != 0:
        return "needs root (network namespaces and nftables); run ctest as root to include it"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (packaging/install-deps.sh installs iproute2 and nftables)"
    if not os.path.exists(TOOL):
        return f"{TOOL} not built"
    probe = f"pclbprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create network namespaces here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


SKIP = skip_reason()


@unittest.skipIf(SKIP, SKIP)
class LbNetnsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="powerctl-lb-")
        cls.prefix = f"pclb{os.getpid()}"
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
        for ns in cls.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def _ip(cls, *args):
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    @classmethod
    def _build_topology(cls):
        # client: one veth per endpoint host, 10.0.i.1/24 <-> 10.0.i.2/24. Its default route
        # points at ep1 so that a connect() to the virtual address gets past the routing
        # lookup; after DNAT the packet is routed again to the chosen endpoint.
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
        cls._ip("-n", cls.client, "route", "add", "default", "via", "10.0.1.2")
        # The client host also routes between the endpoint hosts, as a node routes pod traffic.
        subprocess.run(["ip", "netns", "exec", cls.client, "sysctl", "-qw",
                        "net.ipv4.ip_forward=1"], check=True)
        deadline = time.monotonic() + 20
        for i, name in enumerate(ENDPOINTS, start=1):
            while cls.requests(f"10.0.{i}.2", EP_PORT, 1).get(name) != 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"HTTP server in {name} did not answer")
                time.sleep(0.1)

    @classmethod
    def requests(cls, host, port, n, ns=None):
        out = subprocess.run(["ip", "netns", "exec", ns or cls.client, sys.executable, "-c", CLIENT,
                              host, str(port), str(n)],
                             check=True, capture_output=True, text=True, timeout=300).stdout
        return json.loads(out)

    def tool(self, *args):
        return subprocess.run(["ip", "netns", "exec", self.client, TOOL, *args],
                              capture_output=True, text=True, timeout=60)

    def nft(self, *args):
        return subprocess.run(["ip", "netns", "exec", self.client, "nft", *args],
                              check=True, capture_output=True, text=True).stdout

    def program(self, weights, *extra, ip_of=lambda i: f"10.0.{i}.2"):
        services = [{
            "namespace": "default", "name": "web", "cluster_ip": VIP, "port": VIP_PORT,
            "protocol": "TCP",
            "endpoints": [{"ip": ip_of(i), "port": EP_PORT, "weight": w}
                          for i, w in enumerate(weights, start=1)],
        }]
        path = os.path.join(self.tmp, "services.json")
        with open(path, "w") as f:
            json.dump(services, f)
        return self.tool("program", path, *extra)

    def assertSplit(self, weights, who="powerctl-lb"):
        start = time.monotonic()
        counts = self.requests(VIP, VIP_PORT, REQUESTS)
        elapsed = time.monotonic() - start
        self.assertEqual(counts.get("failed", 0), 0, counts)
        total = sum(weights)
        shares = {name: 100.0 * counts.get(name, 0) / REQUESTS for name in ENDPOINTS}
        print(f"\n  {who} weights {weights}: split "
              + ", ".join(f"{n} {shares[n]:.1f}%" for n in ENDPOINTS)
              + f" ({REQUESTS} connections in {elapsed:.1f} s)", file=sys.stderr)
        for name, weight in zip(ENDPOINTS, weights):
            self.assertAlmostEqual(shares[name], 100.0 * weight / total, delta=TOLERANCE,
                                   msg=f"{name}: {counts}")

    def assertNoTable(self):
        self.assertNotIn("powerctl-lb", self.nft("list", "tables"))

    def assertEndpointsAnswerDirectly(self):
        for i, name in enumerate(ENDPOINTS, start=1):
            self.assertEqual(self.requests(f"10.0.{i}.2", EP_PORT, 20), {name: 20})

    def setUp(self):
        self.addCleanup(self.tool, "remove")

    def test_split_follows_weights_and_removal_leaves_nothing(self):
        r = self.program([60, 30, 10])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("powerctl-lb", self.nft("list", "tables"))
        self.assertSplit([60, 30, 10])

        r = self.program([10, 30, 60])  # predictions changed: the table is replaced at once
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSplit([10, 30, 60])
        self.assertEqual(self.nft("list", "tables").count("powerctl-lb"), 1)

        r = self.tool("remove")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.nft("list", "ruleset").strip(), "")  # every rule we made is gone
        self.assertEqual(self.tool("remove").returncode, 0)  # removing twice is fine

    def test_rules_run_before_kube_proxy_and_failures_hand_traffic_back(self):
        # A stand-in for kube-proxy: its nat chains at dstnat (-100) spread the VIP evenly, and
        # it masquerades what it DNATs, so an endpoint that reaches itself gets its replies.
        kube_proxy = f"""
table ip kube-proxy-standin {{
  chain services {{ ip daddr {VIP} tcp dport {VIP_PORT} dnat ip to numgen random mod 3 map {{
    0 : 10.0.1.2 . {EP_PORT}, 1 : 10.0.2.2 . {EP_PORT}, 2 : 10.0.3.2 . {EP_PORT} }}; }}
  chain prerouting {{ type nat hook prerouting priority dstnat; jump services; }}
  chain output {{ type nat hook output priority -100; jump services; }}
  chain postrouting {{ type nat hook postrouting priority srcnat; ct status dnat masquerade; }}
}}
"""
        path = os.path.join(self.tmp, "kube-proxy.nft")
        with open(path, "w") as f:
            f.write(kube_proxy)
        self.nft("-f", path)
        self.addCleanup(self.nft, "delete", "table", "ip", "kube-proxy-standin")

        r = self.program([80, 10, 10])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSplit([80, 10, 10])  # ours decide; kube-proxy's chain does not NAT again

        # Hairpin: connections from an endpoint (ep2) to its own Service are kube-proxy's
        # (even split, ep2 reaching itself included), not ours (80 % to ep1).
        counts = self.requests(VIP, VIP_PORT, 600, ns=f"{self.prefix}-ep2")
        self.assertEqual(counts.get("failed", 0), 0, counts)
        self.assertLess(counts.get("ep1", 0), 300, counts)
        self.assertGreater(counts.get("ep2", 0), 100, counts)

        # Invalid input: reported, our table removed, kube-proxy's split takes over.
        r = self.program([60, 30, 10], ip_of=lambda i: "10.0.2" if i == 2 else f"10.0.{i}.2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("endpoint 1: \"10.0.2\" is not an IPv4 address", r.stderr)
        self.assertIn("table removed", r.stderr)
        self.assertNoTable()
        self.assertIn("kube-proxy-standin", self.nft("list", "tables"))
        self.assertSplit([1, 1, 1], who="kube-proxy stand-in")
        self.assertEndpointsAnswerDirectly()

        # nft itself refuses the transaction half-way (after a clean check): the previous
        # table is not left behind either.
        r = self.program([60, 30, 10])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.program([10, 30, 60], "--break-apply")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nftables: Error: Could not process rule", r.stderr)
        self.assertIn("table removed", r.stderr)
        self.assertNoTable()
        self.assertSplit([1, 1, 1], who="kube-proxy stand-in")
        self.assertEndpointsAnswerDirectly()

    def test_without_kube_proxy_a_failure_leaves_direct_traffic_flowing(self):
        r = self.program([50, 0, 50])  # weight 0 is outside 1..100
        self.assertEqual(r.returncode, 1)
        self.assertIn("weight 0 is not in 1..100", r.stderr)
        self.assertNoTable()
        self.assertEndpointsAnswerDirectly()


if __name__ == "__main__":
    unittest.main()
