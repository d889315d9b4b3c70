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

import netns_topology
from netns_topology import ENDPOINTS, EP_PORT, VIP_PORT, endpoint_ip

TOOL = os.environ.get("LB_IPVS_TOOL") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tests", "lb_ipvs_tool")
VIP, RR_PORT = "10.96.0.10", 81
REQUESTS = 3000
TOLERANCE = 5.0  # percentage points


def skip_reason():
    if not os.path.exists("/proc/net/ip_vs") and os.geteuid() == 0 and shutil.which("modprobe"):
        subprocess.run(["modprobe", "-q", "ip_vs"], capture_output=True)  # as kube-proxy does
    if not os.path.exists("/proc/net/ip_vs"):
        return "kernel has no IPVS (/proc/net/ip_vs missing)"
    why = netns_topology.skip_reason("ipvsadm")
    if why is None and not os.path.exists(TOOL):
        why = f"{TOOL} not built"
    return why


SKIP = skip_reason()


@unittest.skipIf(SKIP, SKIP)
class LbIpvsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="powerctl-ipvs-")
        cls.net = netns_topology.NetnsTopology(f"pcipvs{os.getpid()}")
        cls.client = cls.net.client
        try:
            # kube-proxy's layout: the cluster IP on a dummy device (kube-ipvs0), one virtual
            # server per Service port, masquerading real servers at weight 1. The namespace's
            # IPVS table goes with the namespace.
            cls._run("ip", "-n", cls.client, "link", "add", "kube-ipvs0", "type", "dummy")
            cls._run("ip", "-n", cls.client, "addr", "add", f"{VIP}/32", "dev", "kube-ipvs0")
            for port, scheduler in ((VIP_PORT, "wrr"), (RR_PORT, "rr")):
                cls.ipvsadm("-A", "-t", f"{VIP}:{port}", "-s", scheduler)
                for i in range(1, len(ENDPOINTS) + 1):
                    cls.ipvsadm("-a", "-t", f"{VIP}:{port}", "-r", f"{endpoint_ip(i)}:{EP_PORT}",
                                "-m", "-w", "1")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.net.close()
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def _run(cls, *args):
        return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout

    @classmethod
    def ipvsadm(cls, *args):
        return cls._run("ip", "netns", "exec", cls.client, "ipvsadm", *args)

    @classmethod
    def requests(cls, host, port, n):
        return cls.net.requests(host, port, n)

    def tool(self, command, weights, port=VIP_PORT):
        services = [{
            "namespace": "default", "name": "web", "cluster_ip": VIP, "port": port,
            "protocol": "TCP",
            "endpoints": [{"ip": endpoint_ip(i), "port": EP_PORT, "weight": w}
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
        return [out[f"{endpoint_ip(i)}:{EP_PORT}"] for i in range(1, len(ENDPOINTS) + 1)]

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
