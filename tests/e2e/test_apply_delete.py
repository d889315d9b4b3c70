"""powerctl apply / delete against the real kube-apiserver with RBAC on: rollout with --wait,
idempotent second apply, server dry run, certificate rotation, all-or-nothing permissions, delete."""
import base64
import os
import unittest

from e2e_support import ClusterTest, powerctl

NS = "apply-e2e"
CONFIG = f"""
namespace: {NS}
scheduler:
  name: apply-e2e-scheduler
extender:
  image: registry.example.com/powerctl:0.1.0
policies:
- name: hot
  strategies:
    dontschedule:
      rules:
      - {{metricname: temp, operator: GreaterThan, target: 80}}
"""


class ApplyDeleteTest(ClusterTest):
    def setUp(self):
        super().setUp()
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.admin = ["--kubeconfig", self.cluster.kubeconfig, "-c", self.config]

    def secret_data(self, name):
        status, s = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/secrets/{name}")
        self.assertEqual(status, 200, s)
        return s["data"]

    def test_1_apply_wait_then_unchanged_then_delete(self):
        r = powerctl("apply", *self.admin, "--wait", "--timeout", "2m")
        lines = r.stdout.splitlines()
        self.assertIn(f"namespace/{NS} created", lines)
        self.assertIn("deployment/powerctl-extender created", lines)
        self.assertIn("deployment/apply-e2e-scheduler created", lines)
        self.assertIn("taspolicy/hot created", lines)
        self.assertIn("waiting for rollout", r.stderr)
        self.assertIn("(from the server)", powerctl("apply", *self.admin, "-v", "2").stderr)
        for name in ("powerctl-extender", "apply-e2e-scheduler"):
            status, d = self.cluster.api("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
            self.assertEqual(d["status"].get("availableReplicas"), 1, name)
            self.assertEqual(d["metadata"]["managedFields"][0]["manager"], "powerctl")
        ca_before = self.secret_data("powerctl-extender-tls")["ca.crt"]

        # A second apply changes nothing and says so; Secrets keep their keys.
        again = powerctl("apply", *self.admin)
        self.assertTrue(all(l.endswith("unchanged") or "unchanged (kept" in l for l in again.stdout.splitlines()),
                        again.stdout)
        self.assertIn("nothing changed", again.stderr)
        self.assertEqual(self.secret_data("powerctl-extender-tls")["ca.crt"], ca_before)

        # Server dry run of a change: reported, not persisted.
        dry = powerctl("apply", *self.admin, "extender", "--set", "extender.weight=9", "--dry-run=server")
        self.assertIn("configmap/powerctl-extender-config configured (server dry run)", dry.stdout)
        status, cm = self.cluster.api("GET", f"/api/v1/namespaces/{NS}/configmaps/powerctl-extender-config")
        self.assertIn("weight: 5", cm["data"]["powerctl.yaml"])

        # Rotation replaces the key material of both Secrets.
        rotated = powerctl("apply", *self.admin, "secrets", "--rotate-certs", "-v", "10")
        self.assertIn("secret/powerctl-extender-tls configured", rotated.stdout)
        # Even at the highest verbosity nothing of the keys or the token reaches the terminal.
        said = rotated.stdout + rotated.stderr
        for secret in ("powerctl-extender-tls", "apply-e2e-scheduler-tls"):
            for field, value in self.secret_data(secret).items():
                self.assertNotIn(value, said, f"{secret} {field} printed")
                if field.endswith(".key"):
                    for line in base64.b64decode(value).decode().splitlines():
                        if not line.startswith("-----"):
                            self.assertNotIn(line, said, f"{secret} {field} printed")
        self.assertNotIn(self.cluster.token, said)
        self.assertNotEqual(self.secret_data("powerctl-extender-tls")["ca.crt"], ca_before)
        self.assertEqual(self.secret_data("powerctl-extender-tls")["ca.crt"],
                         self.secret_data("apply-e2e-scheduler-tls")["ca.crt"])
        self.assertNotIn("PRIVATE KEY", rotated.stdout + rotated.stderr)

        # Delete removes everything powerctl made (the CRD stays without --include-crds).
        deleted = powerctl("delete", *self.admin, "--wait", "--timeout", "2m")
        self.assertIn(f"namespace/{NS} deleted", deleted.stdout)
        self.assertIn("customresourcedefinition/taspolicies.telemetry.intel.com kept", deleted.stdout)
        self.assertIn("clusterrolebinding/powerctl:scheduler:apply-e2e:kube-scheduler deleted", deleted.stdout)
        status, _ = self.cluster.api("GET", f"/api/v1/namespaces/{NS}")
        self.assertEqual(status, 404)
        status, _ = self.cluster.api(
            "GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/powerctl:scheduler:apply-e2e:kube-scheduler")
        self.assertEqual(status, 404)
        self.assertIn("nothing to delete", powerctl("delete", *self.admin).stderr)

    def test_2_user_without_permission_changes_nothing(self):
        ns = "apply-denied"
        token = self.cluster.service_account_token("powerless", "nobody")
        kubeconfig = self.cluster.write_kubeconfig(os.path.join(self.tmp, "nobody.kubeconfig"), token=token)
        r = powerctl("apply", "--kubeconfig", kubeconfig, "-c", self.config, "-n", ns, check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("nothing was changed", r.stderr)
        self.assertIn("patch deployments.apps in namespace apply-denied", r.stderr)
        self.assertEqual(r.stdout, "")
        status, _ = self.cluster.api("GET", f"/api/v1/namespaces/{ns}")
        self.assertEqual(status, 404, "a namespace was created although the apply was refused")

    def test_3_bad_input_is_refused_before_the_cluster(self):
        r = powerctl("apply", *self.admin, "--dry-run=maybe", check=False)
        self.assertEqual(r.returncode, 2)
        r = powerctl("apply", *self.admin, "--kube-version", "1.19", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kube-version", r.stderr)


if __name__ == "__main__":
    unittest.main()
