"""Every object of `powerctl generate all --kube-version 1.20` is accepted by the real kube-apiserver,
and the generated Deployments roll out (controller manager + scheduler + fake kubelet)."""
import unittest

from e2e_support import ClusterTest, load_docs, object_path, powerctl

CONFIG = """
apiVersion: powerctl.io/v1alpha1
kind: PowerctlConfig
namespace: gen-e2e
scheduler:
  name: gen-e2e-scheduler
  powerFirst: true
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
