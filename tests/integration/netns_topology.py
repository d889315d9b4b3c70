"""Network namespaces for the load-balancing tests: a client host and three endpoint hosts, each
endpoint host on its own veth to the client and serving HTTP (the body names the host), plus
helpers to send requests, run nft in the client, and count the split. Used by
tests/integration/test_lb_netns.py and tests/e2e/test_lb_agent.py.

Root only. Every namespace and process it starts is removed by name or PID in close()."""
import json
import os
import shutil
import subprocess
import sys
import time

VIP_PORT, EP_PORT = 80, 8080
ENDPOINTS = ["ep1", "ep2", "ep3"]

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


def skip_reason(*tools):
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and nftables); run ctest as root to include it"
    for tool in ("ip", "nft", *tools):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (packaging/install-deps.sh installs iproute2 and nftables)"
    probe = f"pclbprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create network namespaces here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def endpoint_ip(i):
    """The address of endpoint host i (1-based)."""
    return f"10.0.{i}.2"


class NetnsTopology:
    def __init__(self, prefix):
        self.prefix = prefix
        self.client = f"{prefix}-client"
        self.namespaces = []
        self.servers = []
        self.links = []  # veths in the root namespace
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def close(self):
        for proc in self.servers:
            proc.kill()
            proc.wait()
        self.servers = []
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        self.links = []
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces = []

    def _build(self):
        # client: one veth per endpoint host, 10.0.i.1/24 <-> 10.0.i.2/24. Its default route
        # points at ep1 so that a connect() to a virtual address gets past the routing lookup;
        # after DNAT the packet is routed again to the chosen endpoint.
        ip("netns", "add", self.client)
        self.namespaces.append(self.client)
        ip("-n", self.client, "link", "set", "lo", "up")
        for i, name in enumerate(ENDPOINTS, start=1):
            ns = f"{self.prefix}-{name}"
            ip("netns", "add", ns)
            self.namespaces.append(ns)
            ip("link", "add", f"c{i}", "netns", self.client, "type", "veth", "peer", "name",
               "eth0", "netns", ns)
            ip("-n", self.client, "addr", "add", f"10.0.{i}.1/24", "dev", f"c{i}")
            ip("-n", self.client, "link", "set", f"c{i}", "up")
            ip("-n", ns, "addr", "add", f"{endpoint_ip(i)}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "route", "add", "default", "via", f"10.0.{i}.1")
            self.servers.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-c", SERVER, name, str(EP_PORT)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ip("-n", self.client, "route", "add", "default", "via", endpoint_ip(1))
        # The client host also routes between the endpoint hosts, as a node routes pod traffic.
        subprocess.run(["ip", "netns", "exec", self.client, "sysctl", "-qw",
                        "net.ipv4.ip_forward=1"], check=True)
        deadline = time.monotonic() + 20
        for i, name in enumerate(ENDPOINTS, start=1):
            while self.requests(endpoint_ip(i), EP_PORT, 1).get(name) != 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"HTTP server in {name} did not answer")
                time.sleep(0.1)

    def link_to_root(self, root_ip, client_ip):
        """A veth between the root namespace (root_ip/30) and the client (client_ip/30), so that
        programs in the client reach servers the tests run in the root namespace."""
        link = f"{self.prefix[:8]}r"
        ip("link", "add", link, "type", "veth", "peer", "name", "up0", "netns", self.client)
        self.links.append(link)
        ip("addr", "add", f"{root_ip}/30", "dev", link)
        ip("link", "set", link, "up")
        ip("-n", self.client, "addr", "add", f"{client_ip}/30", "dev", "up0")
        ip("-n", self.client, "link", "set", "up0", "up")

    def requests(self, host, port, n, ns=None):
        out = subprocess.run(["ip", "netns", "exec", ns or self.client, sys.executable, "-c",
                              CLIENT, host, str(port), str(n)],
                             check=True, capture_output=True, text=True, timeout=300).stdout
        return json.loads(out)

    def nft(self, *args):
        return subprocess.run(["ip", "netns", "exec", self.client, "nft", *args],
                              check=True, capture_output=True, text=True).stdout

    def install_kube_proxy_standin(self, vip, path):
        """A stand-in for kube-proxy: nat chains at dstnat (-100) spreading the VIP evenly over
        the three endpoints, masquerading what they DNAT (so an endpoint reaching itself gets
        its replies). Returns the cleanup callable."""
        with open(path, "w") as f:
            f.write(f"""
table ip kube-proxy-standin {{
  chain services {{ ip daddr {vip} tcp dport {VIP_PORT} dnat ip to numgen random mod 3 map {{
    0 : {endpoint_ip(1)} . {EP_PORT}, 1 : {endpoint_ip(2)} . {EP_PORT}, 2 : {endpoint_ip(3)} . {EP_PORT} }}; }}
  chain prerouting {{ type nat hook prerouting priority dstnat; jump services; }}
  chain output {{ type nat hook output priority -100; jump services; }}
  chain postrouting {{ type nat hook postrouting priority srcnat; ct status dnat masquerade; }}
}}
""")
        self.nft("-f", path)
        return lambda: self.nft("delete", "table", "ip", "kube-proxy-standin")

    def split(self, vip, n):
        """Percent of n new connections to vip:80 per endpoint host, and the failures."""
        start = time.monotonic()
        counts = self.requests(vip, VIP_PORT, n)
        shares = {name: 100.0 * counts.get(name, 0) / n for name in ENDPOINTS}
        return shares, counts.get("failed", 0), time.monotonic() - start
