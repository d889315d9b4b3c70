"""core/lb's nftables table on real kernels: a client host and three endpoint hosts in network
namespaces, HTTP servers on the endpoints, and the split of new connections to a virtual
address following the programmed weights (tests/lb_nft_tool stands in for the lb-agent loop).

Root only (network namespaces, nftables); skipped with the reason otherwise. Every namespace
and process it starts is removed by name or PID in cleanup."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import netns_topology
from netns_topology import ENDPOINTS, EP_PORT, VIP_PORT

TOOL = os.environ.get("LB_NFT_TOOL") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tests", "lb_nft_tool")
VIP = "10.96.0.10"
REQUESTS = 3000
TOLERANCE = 5.0  # percentage points


def skip_reason():
    why = netns_topology.skip_reason()
    if why is None and not os.path.exists(TOOL):
        why = f"{TOOL} not built"
    return why


SKIP = skip_reason()


@unittest.skipIf(SKIP, SKIP)
class LbNetnsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="powerctl-lb-")
        cls.net = netns_topology.NetnsTopology(f"pclb{os.getpid()}")
        cls.client = cls.net.client
        cls.prefix = cls.net.prefix

    @classmethod
    def tearDownClass(cls):
        cls.net.close()
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def requests(cls, host, port, n, ns=None):
        return cls.net.requests(host, port, n, ns)

    def tool(self, *args):
        return subprocess.run(["ip", "netns", "exec", self.client, TOOL, *args],
                              capture_output=True, text=True, timeout=60)

    def nft(self, *args):
        return self.net.nft(*args)

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
        # kube-proxy's nat chains at dstnat (-100) spread the VIP evenly.
        remove = self.net.install_kube_proxy_standin(VIP, os.path.join(self.tmp, "kube-proxy.nft"))
        self.addCleanup(remove)

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
