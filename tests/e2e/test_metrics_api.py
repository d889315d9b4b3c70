"""metrics.k8s.io through the real kube-apiserver aggregation layer (the metrics-server path):
`powerctl doctor`'s telemetry check against a fake metrics server registered as the
APIService v1beta1.metrics.k8s.io (metrics_apiservice.py)."""
import json
import os
import unittest

from e2e_support import ClusterTest, powerctl
from metrics_apiservice import NODES_PATH, MetricsApiService, front_proxy_client_cert

NOT_SERVED_FIX = "install metrics-server, or set telemetry.cpuSource: prometheus"


class MetricsApiTest(ClusterTest):
    def setUp(self):
        super().setUp()
        # No telemetry key: telemetry.cpuSource defaults to metrics-api.
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write("namespace: metrics-e2e\n")

    def doctor(self, *extra):
        """`powerctl doctor -o json` (admin kubeconfig); returns (telemetry check, result)."""
        r = powerctl("doctor", "--kubeconfig", self.cluster.kubeconfig, "-c", self.config,
                     "-o", "json", *extra, check=False)
        self.assertIn(r.returncode, (0, 3), r.stderr)  # 3: other checks fail (nothing applied)
        checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
        self.assertEqual(checks["api-reachable"]["status"], "PASS", checks["api-reachable"])
        return checks["telemetry"], r

    @staticmethod
    def metrics_requests(m, since):
        return m.requests(since, path_prefix=NODES_PATH)

    def test_doctor_passes_through_aggregator(self):
        nodes = {"node-a": {"cpu": "1500m", "memory": "2Gi"},
                 "node-b": {"cpu": "250m", "memory": "1Gi"}}
        with MetricsApiService(self.cluster, nodes=nodes) as m:
            mark = m.mark()
            telemetry, _ = self.doctor()
            self.assertEqual(telemetry["status"], "PASS", telemetry)
            self.assertEqual(telemetry["message"], "metrics.k8s.io reports 2 nodes")

            # doctor's list reached the fake server through the aggregator: front-proxy
            # client certificate plus the caller's identity in X-Remote-User/-Group
            seen = self.metrics_requests(m, mark)
            self.assertTrue(seen, f"the fake server saw no {NODES_PATH} request: {m.requests(mark)}")
            for req in seen:
                self.assertEqual(req["path"], NODES_PATH, req)
                self.assertEqual(req["status"], 200, req)
                self.assertEqual(req["client_cn"], "front-proxy-client", req)
                self.assertEqual(req["user"], "admin", req)  # the admin token's user (tokens.csv)
                self.assertIn("system:masters", req["groups"], req)

            # the values are live: the next doctor run sees a third node
            m.set_node_usage("node-c", cpu="3", memory="4Gi")
            telemetry, _ = self.doctor()
            self.assertEqual(telemetry["status"], "PASS", telemetry)
            self.assertEqual(telemetry["message"], "metrics.k8s.io reports 3 nodes")

            # table output
            r = powerctl("doctor", "--kubeconfig", self.cluster.kubeconfig, "-c", self.config,
                         check=False)
            self.assertRegex(r.stdout, r"(?m)^telemetry\s+PASS\s+metrics\.k8s\.io reports 3 nodes$")

    def test_fake_server_rejects_requests_not_from_aggregator(self):
        # what makes the X-Remote-User assertions above meaningful
        with MetricsApiService(self.cluster, nodes={"node-a": {"cpu": "1"}}) as m:
            status, body = m.direct_get(NODES_PATH)
            self.assertEqual(status, 401, body)
            cert, key = front_proxy_client_cert(self.cluster)
            status, body = m.direct_get(NODES_PATH, cert, key)
            self.assertEqual(status, 401, body)
            self.assertIn("X-Remote-User", body["message"])
            # a certificate of the same CA but another name is not the front proxy
            alice = self.cluster.issue_client_cert("metrics-e2e-alice")
            status, body = m.direct_get(NODES_PATH, *alice, headers={"X-Remote-User": "admin"})
            self.assertEqual(status, 401, body)
            status, body = m.direct_get(NODES_PATH, cert, key, headers={"X-Remote-User": "admin"})
            self.assertEqual(status, 200, body)
            self.assertEqual([i["metadata"]["name"] for i in body["items"]], ["node-a"])

    def test_no_node_metrics_warns(self):
        with MetricsApiService(self.cluster, nodes={}) as m:
            telemetry, _ = self.doctor()
            self.assertEqual(telemetry["status"], "WARN", telemetry)
            self.assertEqual(telemetry["message"], "metrics.k8s.io reports 0 nodes")
            self.assertEqual(telemetry["fix"], "kubectl -n kube-system logs deployment/metrics-server")
            self.assertTrue(self.metrics_requests(m, 0))

    def test_doctor_fails_when_unavailable_or_removed(self):
        with MetricsApiService(self.cluster, nodes={"node-a": {"cpu": "1"}}) as m:
            telemetry, _ = self.doctor()
            self.assertEqual(telemetry["status"], "PASS", telemetry)

            # APIService registered, backend gone: the aggregator answers 503
            m.stop_server()
            code, body = self.cluster.api("GET", NODES_PATH)
            self.assertEqual(code, 503, body)
            telemetry, r = self.doctor()
            self.assertEqual(telemetry["status"], "FAIL", telemetry)
            self.assertTrue(telemetry["message"].startswith("metrics.k8s.io: "), telemetry)
            self.assertIn("503", telemetry["message"])
            # Served but failing: look at the APIService and its backend, not "install".
            self.assertTrue(telemetry["fix"].startswith("kubectl get apiservice v1beta1.metrics.k8s.io"), telemetry)
            self.assertEqual(r.returncode, 3)

            # APIService removed: metrics.k8s.io is not served at all (404)
            m.unregister()
            telemetry, r = self.doctor()
            self.assertEqual(telemetry["status"], "FAIL", telemetry)
            self.assertEqual(telemetry["message"], "metrics.k8s.io is not served")
            self.assertEqual(telemetry["fix"], NOT_SERVED_FIX)
            table = powerctl("doctor", "--kubeconfig", self.cluster.kubeconfig, "-c", self.config,
                             check=False)
            self.assertEqual(table.returncode, 3)
            self.assertRegex(table.stdout, r"(?m)^telemetry\s+FAIL\s+metrics\.k8s\.io is not served$")
            self.assertIn(f"fix: {NOT_SERVED_FIX}", table.stdout)

    def test_unusable_node_metrics_do_not_pass(self):
        """NodeMetrics without a usable usage.cpu do not count as telemetry."""
        nodes = {"node-a": {"memory": "1Gi"},  # no usage.cpu
                 "node-b": {"cpu": "lots", "memory": "1Gi"}}  # not a quantity
        with MetricsApiService(self.cluster, nodes=nodes):
            telemetry, _ = self.doctor()
            self.assertNotEqual(telemetry["status"], "PASS", telemetry)
            self.assertIn("node-a", telemetry["message"])
            self.assertIn("node-b", telemetry["message"])

    def test_prometheus_source_skips_check(self):
        with MetricsApiService(self.cluster, nodes={"node-a": {"cpu": "1"}}) as m:
            mark = m.mark()
            telemetry, _ = self.doctor("--set", "telemetry.cpuSource=prometheus")
            self.assertEqual(telemetry["status"], "SKIP", telemetry)
            self.assertEqual(self.metrics_requests(m, mark), [])


if __name__ == "__main__":
    unittest.main()
