"""The Kubernetes lines maintained today (1.35-1.37), a newer one (1.38) and an ended one (1.33),
through `powerctl apply` and `doctor`; and the GitOps folder through Debian's `kubectl kustomize`.

The API server here is the real kube-apiserver 1.20.2 (the newest Debian packages; newer lines
cannot be built on this machine). A proxy in front of it answers /version as the line under test
and passes everything else through, so the server still judges every object powerctl sends; the
rendered objects are checked against that line's published OpenAPI schema
(tests/fixtures/openapi/), which the 1.20 server cannot do.
"""
import json
import os
import subprocess
import unittest

import cluster as cl
import openapi_schema
import yaml
from e2e_support import ClusterTest, load_docs, object_path, powerctl
from version_proxy import VersionProxy

CONFIG = """
namespace: {namespace}
scheduler:
  name: lines-e2e-scheduler
extender:
  image: registry.example.com/powerctl:0.1.0
"""


def scheduler_config(objects):
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and "config.yaml" in o.get("data", {}))
    return yaml.safe_load(cm["data"]["config.yaml"])


def scheduler_image(objects):
    dep = next(o for o in objects if o["kind"] == "Deployment" and
               o["metadata"]["name"] == "lines-e2e-scheduler")
    return dep["spec"]["template"]["spec"]["containers"][0]["image"]


class KubeLinesTest(ClusterTest):
    def setUp(self):
        super().setUp()
        # A namespace per test: the one the previous test deleted may still be terminating.
        self.config = os.path.join(self.tmp, "powerctl.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG.format(namespace="lines-" + self._testMethodName[5:20].rstrip("_").replace("_", "-")))
        self.pki = os.path.dirname(self.cluster.ca)
        self.addCleanup(powerctl, "delete", "--kubeconfig", self.cluster.kubeconfig, "-c", self.config,
                        check=False)

    def behind_proxy(self, git_version):
        proxy = VersionProxy(self.cluster.server, self.pki, git_version)
        self.addCleanup(proxy.close)
        kubeconfig = os.path.join(self.tmp, f"{git_version}.kubeconfig")
        cl.write_kubeconfig(kubeconfig, proxy.url, self.cluster.ca, token=self.cluster.token, user="admin")
        return ["--kubeconfig", kubeconfig, "-c", self.config]

    def apply(self, git_version):
        r = powerctl("apply", *self.behind_proxy(git_version), "-o", "json", "-v", "2", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["items"], r.stderr

    def test_maintained_lines_apply_their_configuration_and_pass_their_schema(self):
        for git_version in ("v1.35.2", "v1.36.1", "v1.37.0"):
            minor = git_version[1:5]
            with self.subTest(line=minor):
                objects, stderr = self.apply(git_version)
                self.assertIn(f"target Kubernetes {minor} (from the server)", stderr)
                self.assertNotIn("invalid Kubernetes version", stderr)
                self.assertNotIn("end of life", stderr)
                cfg = scheduler_config(objects)
                self.assertEqual(cfg["apiVersion"], "kubescheduler.config.k8s.io/v1")
                self.assertEqual(cfg["profiles"][0]["percentageOfNodesToScore"], 100)
                self.assertTrue(scheduler_image(objects).startswith(f"registry.k8s.io/kube-scheduler:v{minor}."))
                # What the 1.20 server stored is what was sent; the line's own schema judges it.
                schema = openapi_schema.load(minor)
                bad = json.loads(json.dumps(next(o for o in objects if o["kind"] == "Deployment")))
                bad["spec"]["replicaz"] = 1
                bad["spec"]["template"]["spec"]["containers"][0]["ports"] = "8443"
                self.assertEqual(len(openapi_schema.problems(schema, bad)), 2)  # the check can fail
                for obj in objects:
                    self.assertEqual(openapi_schema.problems(schema, obj), [], object_path(obj))
                    status, _ = self.cluster.api("GET", object_path(obj))
                    self.assertEqual(status, 200, object_path(obj))

    def test_doctor_and_status_show_the_line(self):
        self.apply("v1.36.1")
        r = powerctl("doctor", *self.behind_proxy("v1.36.1"), "-o", "json", check=False)
        check = next(c for c in json.loads(r.stdout)["checks"] if c["id"] == "kube-version")
        self.assertEqual(check["status"], "PASS", check)
        self.assertIn("1.36, maintained until 2027-06-28", check["message"])
        self.assertIn("within the skew policy", check["message"])
        # The server upgraded two minors past the scheduler: the skew policy is broken.
        r = powerctl("status", *self.behind_proxy("v1.38.0"), check=False)
        self.assertIn("Line:        1.38, newer than this powerctl knows (newest known: 1.37); "
                      "kube-scheduler 1.36 is 2 minors older than the API server (1.38)", r.stdout)

    def test_a_newer_line_renders_with_a_warning_and_an_ended_one_names_its_end(self):
        objects, stderr = self.apply("v1.38.0")
        self.assertIn("Kubernetes 1.38 is newer than the newest line this powerctl knows (1.37)", stderr)
        self.assertEqual(scheduler_image(objects), "registry.k8s.io/kube-scheduler:v1.38.0")
        self.assertEqual(scheduler_config(objects)["apiVersion"], "kubescheduler.config.k8s.io/v1")
        objects, stderr = self.apply("v1.33.4")
        self.assertIn("Kubernetes 1.33 reached its end of life on 2026-06-28", stderr)
        self.assertEqual(scheduler_image(objects), "registry.k8s.io/kube-scheduler:v1.33.4")


class GitOpsFolderTest(ClusterTest):
    """`generate all --output-dir` is a kustomization: Debian's kubectl 1.20.2 (kustomize inside)
    builds the same objects from it, and applies them server-side."""

    def kubectl(self, *args):
        kubectl = os.path.join(self.cluster.state.get("bin_dir") or cl.default_bin_dir(), "kubectl")
        return subprocess.run([kubectl, "--kubeconfig", self.cluster.kubeconfig, *args],
                              capture_output=True, text=True, timeout=120)

    def test_kubectl_kustomize_builds_what_generate_renders_and_applies_it(self):
        config = os.path.join(self.tmp, "powerctl.yaml")
        with open(config, "w") as f:
            f.write(CONFIG.format(namespace="gitops-e2e").replace("lines-e2e", "gitops-e2e"))
        certs = os.path.join(self.tmp, "tls")  # stable certificates: both renders hold the same keys
        out = os.path.join(self.tmp, "manifests")
        args = ("-c", config, "--kube-version", "1.20", "--cert-dir", certs)
        powerctl("generate", "all", *args, "--output-dir", out)
        rendered = load_docs(powerctl("generate", "all", *args).stdout)
        built = self.kubectl("kustomize", out)
        self.assertEqual(built.returncode, 0, built.stderr)

        def key(o):
            return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        self.assertEqual(sorted(load_docs(built.stdout), key=key), sorted(rendered, key=key))

        applied = self.kubectl("apply", "--server-side", "--field-manager=gitops-e2e", "-k", out)
        self.addCleanup(powerctl, "delete", "--kubeconfig", self.cluster.kubeconfig, "-c", config,
                        check=False)
        self.assertEqual(applied.returncode, 0, applied.stdout + applied.stderr)
        for obj in rendered:
            status, live = self.cluster.api("GET", object_path(obj))
            self.assertEqual(status, 200, object_path(obj))
            managers = {m["manager"] for m in live["metadata"].get("managedFields", [])}
            self.assertIn("gitops-e2e", managers, object_path(obj))


if __name__ == "__main__":
    unittest.main()
