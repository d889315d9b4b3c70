"""powerctl doctor on a real cluster: stable check IDs, fixes, exit 3 on failure."""
import json
import os
import unittest

from e2e_support import ClusterTest, powerctl

NS = "doctor-e2e"


class DoctorTest(ClusterTest):
    def test_doctor_before_and_after_apply(self):
        config = os.path.join(self.tmp, "powerctl.yaml")
        with open(config, "w") as f:
            f.write(f"namespace: {NS}\nscheduler:\n  name: doctor-e2e-scheduler\n")
        kc = ["--kubeconfig", self.cluster.kubeconfig, "-c", config]
        before = powerctl("doctor", *kc, check=False)
        self.assertEqual(before.returncode, 3, before.stdout + before.stderr)
        self.assertRegex(before.stdout, r"scheduler-ready\s+FAIL\s+deployment doctor-e2e/doctor-e2e-scheduler does "
                                        r"not exist")
        self.assertIn("fix: powerctl apply scheduler --wait", before.stdout)

        powerctl("apply", *kc, "--wait", "--timeout", "2m")
        self.addCleanup(powerctl, "delete", *kc, check=False)
        after = powerctl("doctor", *kc, "-o", "json", check=False)
        doc = json.loads(after.stdout)
        checks = {c["id"]: c for c in doc["checks"]}
        self.assertEqual(list(checks), ["api-reachable", "permissions", "scheduler-ready", "scheduler-lease",
                                        "kube-version", "extender-ready", "model-ready", "node-labels", "telemetry",
                                        "lb-agent", "extender-tls", "model-accuracy", "drained-nodes",
                                        "power-source", "gpu-power"])
        self.assertEqual(checks["api-reachable"]["status"], "PASS")
        self.assertIn("v1.20.2", checks["api-reachable"]["message"])
        self.assertEqual(checks["permissions"]["status"], "PASS")
        # The real server here is 1.20 (the newest Debian packages), long past its end of life.
        self.assertEqual(checks["kube-version"]["status"], "WARN")
        self.assertIn("1.20, end of life since 2022-02-28", checks["kube-version"]["message"])
        self.assertIn("kube-scheduler v1.20.2 is within the skew policy", checks["kube-version"]["message"])
        self.assertEqual(checks["scheduler-ready"]["status"], "PASS")
        self.assertEqual(checks["extender-ready"]["status"], "PASS")
        self.assertEqual(checks["model-ready"]["status"], "SKIP")
        self.assertEqual(checks["lb-agent"]["status"], "SKIP")  # `apply all` leaves the agent out
        self.assertEqual(checks["drained-nodes"]["status"], "PASS")
        self.assertEqual(checks["drained-nodes"]["message"], "no node is drained")
        # The fake kubelet runs no real kube-scheduler in that Deployment: nobody holds its lease.
        self.assertEqual(checks["scheduler-lease"]["status"], "FAIL")
        self.assertTrue(checks["scheduler-lease"]["fix"])
        self.assertEqual(checks["telemetry"]["status"], "FAIL")  # no metrics-server here
        # The fake kubelet's pods serve nothing: their /metrics cannot be read, a warning.
        self.assertEqual(checks["extender-tls"]["status"], "WARN")
        self.assertIn("metrics not readable", checks["extender-tls"]["message"])
        self.assertEqual(after.returncode, 3)
        self.assertTrue(doc["failed"])

    def test_unreachable_api(self):
        kc = os.path.join(self.tmp, "dead.kubeconfig")
        with open(kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
                    "users:\n- name: u\n  user:\n    token: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                    "current-context: x\n")
        r = powerctl("doctor", "--kubeconfig", kc, check=False)
        self.assertEqual(r.returncode, 3)
        self.assertRegex(r.stdout, r"api-reachable\s+FAIL")
        self.assertRegex(r.stdout, r"telemetry\s+SKIP\s+skipped: the API is not reachable")


if __name__ == "__main__":
    unittest.main()
