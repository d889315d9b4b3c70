"""Connecting as kubectl would: token, client certificate and exec-plugin kubeconfigs, merged
$KUBECONFIG, and no credential ever printed, even at -v 10."""
import base64
import json
import os
import stat
import unittest

from e2e_support import ClusterTest, powerctl


def api_check(result):
    doc = json.loads(result.stdout)
    return next(c for c in doc["checks"] if c["id"] == "api-reachable")


class KubeconfigAuthTest(ClusterTest):
    def doctor(self, *args, env=None):
        return powerctl("doctor", "-o", "json", *args, env=env, check=False)

    def test_token_kubeconfig(self):
        kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, "token.kubeconfig"), token=self.cluster.token)
        self.assertEqual(api_check(self.doctor("--kubeconfig", kc))["status"], "PASS")

    def test_client_certificate_kubeconfig_files_and_data(self):
        cert, key = self.cluster.issue_client_cert("cert-admin", groups=["system:masters"])
        for embed in (False, True):
            kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, f"cert-{embed}.kubeconfig"), client_cert=cert,
                                               client_key=key, embed=embed)
            self.assertEqual(api_check(self.doctor("--kubeconfig", kc))["status"], "PASS", embed)

    def test_exec_plugin_kubeconfig(self):
        for api_version in ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"):
            plugin = os.path.join(self.tmp, "plugin.sh")
            with open(plugin, "w") as f:
                f.write("#!/bin/sh\n"
                        f"echo '{{\"apiVersion\":\"{api_version}\",\"kind\":\"ExecCredential\","
                        f"\"status\":{{\"token\":\"{self.cluster.token}\"}}}}'\n")
            os.chmod(plugin, 0o755)
            kc = os.path.join(self.tmp, "exec.kubeconfig")
            interactive = "      interactiveMode: Never\n" if api_version.endswith("/v1") else ""
            with open(kc, "w") as f:
                f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: {self.cluster.server}
    certificate-authority: {self.cluster.ca}
users:
- name: u
  user:
    exec:
      apiVersion: {api_version}
      command: {plugin}
{interactive}contexts:
- name: ctx
  context: {{cluster: c, user: u}}
current-context: ctx
""")
            self.assertEqual(api_check(self.doctor("--kubeconfig", kc))["status"], "PASS", api_version)

    def test_merged_kubeconfig_picks_what_kubectl_picks(self):
        good = self.cluster.write_kubeconfig(os.path.join(self.tmp, "good.kubeconfig"), token=self.cluster.token)
        # The second file redefines the same context name with a dead server and another current-context.
        with open(good) as f:
            text = f.read()
        bad = os.path.join(self.tmp, "bad.kubeconfig")
        with open(bad, "w") as f:
            f.write(text.replace(self.cluster.server, "https://127.0.0.1:1"))
        env = {"KUBECONFIG": f"{good}:{bad}"}
        self.assertEqual(api_check(self.doctor(env=env))["status"], "PASS")     # first file wins
        env = {"KUBECONFIG": f"{bad}:{good}"}
        self.assertEqual(api_check(self.doctor(env=env))["status"], "FAIL")
        # --kubeconfig uses only that file, whatever KUBECONFIG says
        self.assertEqual(api_check(self.doctor("--kubeconfig", good, env=env))["status"], "PASS")

    def test_unknown_context_is_clear(self):
        kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, "token.kubeconfig"), token=self.cluster.token)
        r = self.doctor("--kubeconfig", kc, "--context", "nope")
        self.assertEqual(r.returncode, 3)
        self.assertIn("nope", api_check(r)["message"])

    def test_no_secret_in_output_at_highest_verbosity(self):
        cert, key = self.cluster.issue_client_cert("log-admin", groups=["system:masters"])
        with open(key) as f:
            key_pem = f.read()
        token_kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, "t.kubeconfig"), token=self.cluster.token)
        cert_kc = self.cluster.write_kubeconfig(os.path.join(self.tmp, "c.kubeconfig"), client_cert=cert,
                                                client_key=key, embed=True)
        config = os.path.join(self.tmp, "powerctl.yaml")
        with open(config, "w") as f:
            f.write("namespace: logs-e2e\nscheduler:\n  name: logs-e2e-scheduler\n")
        secrets = [self.cluster.token, key_pem.strip().splitlines()[1],
                   base64.b64encode(key_pem.encode()).decode()[:40]]
        for kc in (token_kc, cert_kc):
            for args in (["doctor"], ["apply", "-c", config, "--dry-run=server"], ["apply", "-c", config],
                         ["delete", "-c", config]):
                r = powerctl("-v", "10", "--kubeconfig", kc, *args, check=False)
                out = r.stdout + r.stderr
                self.assertIn("GET", r.stderr, "expected request logging at -v 10")
                for s in secrets:
                    self.assertNotIn(s, out, f"{args} printed a credential")
                self.assertNotIn("PRIVATE KEY", out)


if __name__ == "__main__":
    unittest.main()
