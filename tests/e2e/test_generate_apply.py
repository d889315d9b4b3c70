"""Every object of `powerctl generate all --kube-version 1.20` is accepted by the real kube-apiserver,
and the generated Deployments roll out (controller manager + scheduler + fake kubelet); the real
kube-scheduler 1.20 starts with each scheduler.resourceScoring profile."""
import os
import ssl
import subprocess
import unittest
import urllib.request

import cluster as cl
import yaml
from e2e_support import ClusterTest, load_docs, object_path, powerctl

CONFIG = """
apiVersion: powerctl.io/v1alpha1
kind: PowerctlConfig
namespace: gen-e2e
scheduler:
  name: gen-e2e-scheduler
  resourceScoring: pack
extender:
  image: registry.example.com/powerctl:0.1.0
predictor:
  backend: tfserving-grpc
  model:
    image: registry.example.com/power-model:1
policies:
- name: cool-nodes
  strategies:
    dontschedule:
      rules:
      - {metricname: node_temperature, operator: GreaterThan, target: 85}
    scheduleonmetric:
      rules:
      - {metricname: node_temperature, operator: LessThan}
"""


class GenerateApplyTest(ClusterTest):
    def test_generate_all_is_accepted_and_rolls_out(self):
        config = f"{self.tmp}/powerctl.yaml"
        with open(config, "w") as f:
            f.write(CONFIG)
        objects = load_docs(powerctl("generate", "all", "--kube-version", "1.20", "-c", config).stdout)
        kinds = {o["kind"] for o in objects}
        self.assertTrue({"Namespace", "CustomResourceDefinition", "TASPolicy", "Deployment", "Secret",
                         "ClusterRole", "Role", "RoleBinding", "ServiceAccount", "Service"} <= kinds, kinds)

        for obj in objects:
            if obj["kind"] == "TASPolicy":
                # A custom resource can only be created once its CRD is established.
                self.cluster.wait_for(lambda: self._crd_established("taspolicies.telemetry.intel.com"),
                                      timeout=30, what="TASPolicy CRD established")
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), f"{obj['kind']}/{obj['metadata']['name']}: {body}")

        for obj in objects:
            status, live = self.get(obj)
            self.assertEqual(status, 200, object_path(obj))
            self.assertEqual(live["metadata"]["labels"]["app.kubernetes.io/managed-by"], "powerctl")

        deployments = [o for o in objects if o["kind"] == "Deployment"]
        self.assertEqual(sorted(d["metadata"]["name"] for d in deployments),
                         ["gen-e2e-scheduler", "powerctl-extender", "powerctl-model"])
        for d in deployments:
            self.cluster.wait_for(lambda d=d: self._available(d), timeout=90,
                                  what=f"deployment {d['metadata']['name']} rolled out")

    def test_generated_json_is_accepted_too(self):
        """-o json output holds the same objects, and server-side apply accepts them."""
        import json
        doc = json.loads(powerctl("generate", "namespace", "rbac", "scheduler", "--kube-version", "1.20",
                                  "-n", "gen-json", "--set", "scheduler.name=gen-json-scheduler", "-o", "json").stdout)
        self.assertEqual(doc["kind"], "List")
        for obj in doc["items"]:
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), f"{obj['kind']}: {body}")

    def test_kube_scheduler_starts_with_each_resource_scoring(self):
        """kube-scheduler builds its profiles before it serves /healthz, and exits on a plugin it
        does not know: serving means the generated profile was accepted."""
        ns, name = "gen-profile", "gen-profile-scheduler"
        common = ["--kube-version", "1.20", "-n", ns, "--set", f"scheduler.name={name}"]
        for obj in load_docs(powerctl("generate", "namespace", "rbac", *common).stdout):
            status, body = self.apply(obj)
            self.assertIn(status, (200, 201), body)
        kubeconfig = self.cluster.write_kubeconfig(os.path.join(self.tmp, "scheduler.kubeconfig"),
                                                   token=self.cluster.service_account_token(ns, name), user=name)
        for scoring in ("pack", "none", "spread"):
            out = os.path.join(self.tmp, scoring)
            healthz_port, = cl.free_ports(1)
            powerctl("generate", "scheduler", *common, "--set", f"scheduler.resourceScoring={scoring}",
                     "--set", f"scheduler.legacyHealthzPort={healthz_port}", "--out-of-cluster",
                     "--kubeconfig", kubeconfig, "--extender-url", "https://127.0.0.1:1/scheduler",
                     "--output-dir", out)
            config = os.path.join(out, "scheduler-config.yaml")
            with open(config) as f:
                profile = yaml.safe_load(f)["profiles"][0]
            if scoring == "pack":
                self.assertEqual(profile["plugins"]["score"]["enabled"][0]["name"], "NodeResourcesMostAllocated")
            self.assertIsNone(self._scheduler_exit(config, kubeconfig, f"{scoring}.log"), scoring)
        # The check can fail: a plugin 1.20 does not have stops kube-scheduler.
        bad = os.path.join(self.tmp, "pack", "bad-config.yaml")
        with open(os.path.join(self.tmp, "pack", "scheduler-config.yaml")) as f:
            text = f.read().replace("NodeResourcesMostAllocated", "NodeResourcesMostAllocatedX")
        with open(bad, "w") as f:
            f.write(text)
        self.assertIn("NodeResourcesMostAllocatedX", self._scheduler_exit(bad, kubeconfig, "bad.log") or "")

    def _scheduler_exit(self, config, kubeconfig, log_name):
        """Starts kube-scheduler with `config`: None once it serves /healthz, else its exit and log."""
        port, = cl.free_ports(1)
        log_path = os.path.join(self.tmp, log_name)
        with open(log_path, "w") as log:
            proc = subprocess.Popen([os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={config}",
                                     f"--secure-port={port}", "--bind-address=127.0.0.1",
                                     f"--authentication-kubeconfig={kubeconfig}",
                                     f"--authorization-kubeconfig={kubeconfig}", "--v=2"],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name="kube-scheduler")
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE

        def serving():
            if proc.poll() is not None:
                return f"exited {proc.returncode}:\n{cl.tail(log_path)}"
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2,
                                            context=insecure) as r:
                    return "serving" if r.status == 200 else None
            except OSError:
                return None
        result = cl.wait_for(serving, 60, f"kube-scheduler with {config} serving or exited",
                             diagnose=lambda: cl.tail(log_path))
        cl.terminate_pid(proc.pid, popen=proc, name="kube-scheduler")
        return None if result == "serving" else result

    def _crd_established(self, name):
        status, crd = self.cluster.api("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return status == 200 and any(c["type"] == "Established" and c["status"] == "True"
                                     for c in crd.get("status", {}).get("conditions", []))

    def _available(self, deployment):
        status, live = self.get(deployment)
        if status != 200:
            return False
        s = live.get("status", {})
        want = deployment["spec"]["replicas"]
        return s.get("availableReplicas") == want and s.get("updatedReplicas") == want and \
            s.get("observedGeneration", 0) >= live["metadata"]["generation"]


if __name__ == "__main__":
    unittest.main()
