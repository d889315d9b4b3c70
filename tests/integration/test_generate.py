"""powerctl generate: components, versions, output forms, config errors, templates, out-of-cluster."""
import base64
import json
import os
import stat

import yaml

from support import SOURCE_DIR, TempDirTest, clean_env, run

CERTS = os.path.join(SOURCE_DIR, "tests", "fixtures", "tls")


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def scheduler_config(objects):
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and "config.yaml" in o.get("data", {}))
    return yaml.safe_load(cm["data"]["config.yaml"])


class GenerateTest(TempDirTest):
    def generate(self, *args, env=None):
        r = run("generate", *args, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return docs(r.stdout)

    def test_all_by_default_with_labels_everywhere(self):
        objects = self.generate()
        kinds = sorted({o["kind"] for o in objects})
        self.assertEqual(kinds, ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition",
                                 "Deployment", "Namespace", "Role", "RoleBinding", "Secret", "Service",
                                 "ServiceAccount"])
        for o in objects:
            labels = o["metadata"]["labels"]
            self.assertEqual(labels["app.kubernetes.io/managed-by"], "powerctl", o["metadata"]["name"])
            self.assertIn(labels["app.kubernetes.io/component"],
                          ["namespace", "rbac", "secrets", "policies", "extender", "scheduler"])
        # builtin predictor: no model server in `all`
        self.assertFalse(any(o["metadata"]["name"] == "powerctl-model" for o in objects))

    def test_secrets_hold_a_verifiable_chain(self):
        objects = self.generate("secrets")
        secrets = {o["metadata"]["name"]: o for o in objects}
        ext = secrets["powerctl-extender-tls"]["data"]
        self.assertEqual(secrets["powerctl-extender-tls"]["type"], "kubernetes.io/tls")
        for key in ("tls.crt", "tls.key", "ca.crt"):
            self.assertTrue(base64.b64decode(ext[key]).startswith(b"-----BEGIN"), key)
        # No CA private key ever goes into the cluster.
        for s in objects:
            for value in s["data"].values():
                pem = base64.b64decode(value)
                if b"PRIVATE KEY" in pem:
                    self.assertNotEqual(pem, base64.b64decode(ext["ca.crt"]))
        self.assertEqual(len([1 for s in objects for k in s["data"] if k.endswith(".key")]), 2)

    def test_fresh_key_material_each_run_unless_cert_dir(self):
        a = self.generate("secrets")
        b = self.generate("secrets")
        self.assertNotEqual(a, b)
        c = self.generate("secrets", "--cert-dir", CERTS)
        d = self.generate("secrets", "--cert-dir", CERTS)
        self.assertEqual(c, d)

    def test_own_ca_signs_the_new_certificates(self):
        own = self.path("own")
        os.makedirs(own)
        for name in ("ca.crt", "ca.key"):
            with open(os.path.join(CERTS, name)) as src, open(os.path.join(own, name), "w") as dst:
                dst.write(src.read())
        r = run("generate", "secrets", "--cert-dir", own)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("signed new extender server and scheduler client certificates with the CA in "
                      + own, r.stderr)
        self.assertNotIn("generated new TLS material", r.stderr)
        ext = {o["metadata"]["name"]: o for o in docs(r.stdout)}["powerctl-extender-tls"]["data"]
        with open(os.path.join(CERTS, "ca.crt"), "rb") as f:
            self.assertEqual(base64.b64decode(ext["ca.crt"]), f.read())
        self.assertEqual(sorted(os.listdir(own)), ["ca.crt", "ca.key", "client.crt", "client.key",
                                                   "server.crt", "server.key"])
        again = run("generate", "secrets", "--cert-dir", own)
        self.assertIn("using TLS material from", again.stderr)
        self.assertEqual(again.stdout, r.stdout)

    def test_cert_dir_that_cannot_be_used_is_refused_with_exit_2(self):
        wrong = self.path("wrong")
        os.makedirs(wrong)
        with open(os.path.join(CERTS, "ca.crt")) as f:
            self.write("wrong/ca.crt", f.read())
        with open(os.path.join(CERTS, "server.key")) as f:
            self.write("wrong/ca.key", f.read())  # a key, but not the CA's
        r = run("generate", "secrets", "--cert-dir", wrong)
        self.assertUsageError(r, "ca.key (ca_key): is not the private key of ca.crt")
        self.assertEqual(r.stdout, "")
        partial = self.path("partial")
        os.makedirs(partial)
        with open(os.path.join(CERTS, "server.crt")) as f:
            self.write("partial/server.crt", f.read())
        r = run("generate", "secrets", "--cert-dir", partial)
        self.assertUsageError(r, "holds server.crt but not ca.crt, ca.key, server.key")

    def test_new_cert_dir_is_created_and_reused(self):
        new = self.path("new", "tls")
        first = run("generate", "secrets", "--cert-dir", new)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("wrote new TLS material to " + new, first.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(new).st_mode), 0o700)
        second = run("generate", "secrets", "--cert-dir", new)
        self.assertEqual(second.stdout, first.stdout)

    def test_config_hash_follows_the_certificates(self):
        def hashes(*args):
            return {o["metadata"]["name"]: o["spec"]["template"]["metadata"]["annotations"]["powerctl.io/config-hash"]
                    for o in self.generate("secrets", "extender", "scheduler", *args) if o["kind"] == "Deployment"}
        a, b = hashes(), hashes()
        self.assertEqual(len(a), 2)
        for name in a:
            self.assertNotEqual(a[name], b[name], name)
        self.assertEqual(hashes("--cert-dir", CERTS), hashes("--cert-dir", CERTS))

    def test_json_output_is_a_list(self):
        r = run("generate", "rbac", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["kind"], "List")
        self.assertTrue(all("apiVersion" in item for item in doc["items"]))
        single = json.loads(run("generate", "namespace", "-o", "json").stdout)
        self.assertEqual(single["kind"], "Namespace")

    def test_output_dir_files_and_modes(self):
        out = self.path("out")
        r = run("generate", "all", "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        files = sorted(os.listdir(out))
        manifests = ["00-namespace.yaml", "10-rbac.yaml", "20-secrets.yaml", "30-policies.yaml",
                     "50-extender.yaml", "60-scheduler.yaml"]
        self.assertEqual(files, manifests + ["kustomization.yaml"])
        with open(os.path.join(out, "kustomization.yaml")) as f:
            kustomization = yaml.safe_load(f)
        self.assertEqual(kustomization, {"apiVersion": "kustomize.config.k8s.io/v1beta1",
                                         "kind": "Kustomization", "resources": manifests})
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(out, "20-secrets.yaml")).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(out, "10-rbac.yaml")).st_mode), 0o644)
        self.assertIn(f"wrote {out}/20-secrets.yaml", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_output_dir_removes_only_what_powerctl_wrote_and_no_longer_writes(self):
        out = self.path("out")
        model = ("--set", "predictor.backend=tfserving-grpc", "--set", "predictor.model.image=m/m:1")
        r = run("generate", "all", "--output-dir", out, *model)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("40-model.yaml", os.listdir(out))
        self.write("out/notes.yaml", "kept: true\n")            # the user's file
        self.write("out/70-lb.json", '{"kind": "ConfigMap"}\n')  # powerctl's name, not its content
        # The model turned off and the format changed: the YAML files and 40-model go.
        r = run("generate", "all", "--output-dir", out, "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        json_files = ["00-namespace.json", "10-rbac.json", "20-secrets.json", "30-policies.json",
                      "50-extender.json", "60-scheduler.json"]
        self.assertEqual(sorted(os.listdir(out)),
                         json_files + ["70-lb.json", "kustomization.yaml", "notes.yaml"])
        self.assertIn(f"removed {out}/40-model.yaml", r.stderr)
        # The kustomization lists what powerctl wrote, not the look-alike 70-lb.json.
        with open(os.path.join(out, "kustomization.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["resources"], json_files)
        # Naming some components leaves the others' files alone.
        r = run("generate", "namespace", "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("60-scheduler.json", os.listdir(out))
        self.assertIn("00-namespace.yaml", os.listdir(out))
        self.assertNotIn("00-namespace.json", os.listdir(out))
        with open(os.path.join(out, "kustomization.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["resources"], ["00-namespace.yaml"])
        # Its own components named later join the list: lb is opt-in but kept once written.
        r = run("generate", "all", "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("generate", "lb", "--output-dir", out, "--set", "extender.image=r/powerctl:1")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "kustomization.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["resources"][-1], "70-lb.yaml")

    def test_a_kustomization_of_the_users_is_left_alone(self):
        out = self.path("out")
        mine = "resources:\n- 00-namespace.yaml\n- my-extra.yaml\n"
        os.makedirs(out)
        self.write("out/kustomization.yaml", mine)
        r = run("generate", "all", "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kustomization.yaml is not powerctl's: left as it is", r.stderr)
        with open(os.path.join(out, "kustomization.yaml")) as f:
            self.assertEqual(f.read(), mine)
        # Out of the cluster nothing there is applied as API objects: no kustomization.
        ooc = self.path("ooc")
        r = run("generate", "scheduler", "--out-of-cluster", "--kubeconfig",
                self.write("k", "apiVersion: v1\nkind: Config\n"),
                "--extender-url", "https://127.0.0.1:9443/scheduler", "--output-dir", ooc)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("kustomization.yaml", os.listdir(ooc))

    def test_scheduler_config_api_version_per_kubernetes_version(self):
        expected = {20: "v1beta1", 21: "v1beta1", 22: "v1beta2", 23: "v1beta3", 24: "v1beta3"}
        for minor in range(20, 39):  # 1.38: newer than the release table, the newest shape
            with self.subTest(minor=minor):
                cfg = scheduler_config(self.generate("scheduler", "--kube-version", f"1.{minor}"))
                want = expected.get(minor, "v1")
                self.assertEqual(cfg["apiVersion"], f"kubescheduler.config.k8s.io/{want}")
                legacy = minor <= 22
                self.assertEqual("healthzBindAddress" in cfg, legacy)
                self.assertEqual("metricsBindAddress" in cfg, legacy)
                if legacy:
                    self.assertEqual(cfg["healthzBindAddress"], "127.0.0.1:10251")
                profile = cfg["profiles"][0]
                self.assertEqual(profile["schedulerName"], "powerctl-scheduler")
                self.assertEqual(cfg["percentageOfNodesToScore"], 100)
                ext = cfg["extenders"][0]
                self.assertEqual(ext["urlPrefix"], "https://powerctl-extender.powerctl.svc:8443/scheduler")
                self.assertTrue(ext["enableHTTPS"])
                self.assertEqual(ext["tlsConfig"]["caFile"], "/etc/powerctl/tls/ca.crt")
                self.assertNotIn("caData", ext["tlsConfig"])
                self.assertNotIn("insecure", ext["tlsConfig"])  # the scheduler verifies the server
                self.assertNotIn("keyData", ext["tlsConfig"])
                self.assertEqual((ext["filterVerb"], ext["prioritizeVerb"], ext["preemptVerb"]),
                                 ("filter", "prioritize", "preempt"))

    def test_scheduler_deployment_image_and_insecure_port(self):
        # A minor alone gets its newest patch release (the most-fixed), not ".0".
        for version, tag in (("1.20.2", "1.20.2"), ("1.22", "1.22.17"), ("1.23", "1.23.17"),
                             ("1.30", "1.30.14"), ("1.34", "1.34.10"),
                             ("1.37", "1.37.1")):
            with self.subTest(version=version):
                objects = self.generate("scheduler", "--kube-version", version)
                dep = next(o for o in objects if o["kind"] == "Deployment")
                c = dep["spec"]["template"]["spec"]["containers"][0]
                self.assertEqual(c["image"], f"registry.k8s.io/kube-scheduler:v{tag}")
                # with --config, --port is ignored by 1.20-1.22 and rejected later: never passed
                self.assertFalse(any(a.startswith("--port") for a in c["command"]))
                self.assertEqual(c["livenessProbe"]["httpGet"]["port"], 10259)
                self.assertEqual(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS")
                self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])

    def test_resource_scoring_none_disables_spreading_scores(self):
        for version, plugins in (("1.21", ["NodeResourcesLeastAllocated", "NodeResourcesBalancedAllocation"]),
                                 ("1.22", ["NodeResourcesFit", "NodeResourcesBalancedAllocation"]),
                                 ("1.30", ["NodeResourcesFit", "NodeResourcesBalancedAllocation"])):
            cfg = scheduler_config(self.generate("scheduler", "--kube-version", version,
                                                 "--set", "scheduler.resourceScoring=none"))
            disabled = [p["name"] for p in cfg["profiles"][0]["plugins"]["score"]["disabled"]]
            self.assertEqual(disabled, plugins)
        # The default, spread, keeps kube-scheduler's own resource scores.
        cfg = scheduler_config(self.generate("scheduler"))
        self.assertNotIn("plugins", cfg["profiles"][0])
        self.assertNotIn("pluginConfig", cfg["profiles"][0])

    def test_resource_scoring_pack_uses_most_allocated(self):
        profile = scheduler_config(self.generate("scheduler", "--kube-version", "1.20",
                                                 "--set", "scheduler.resourceScoring=pack"))["profiles"][0]
        self.assertEqual(profile["plugins"]["score"]["enabled"], [{"name": "NodeResourcesMostAllocated", "weight": 1}])
        profile = scheduler_config(self.generate("scheduler", "--kube-version", "1.34",
                                                 "--set", "scheduler.resourceScoring=pack"))["profiles"][0]
        self.assertEqual(profile["pluginConfig"][0]["args"]["scoringStrategy"]["type"], "MostAllocated")

    def test_deprecated_power_first_still_means_none_and_warns(self):
        r = run("generate", "scheduler", "--kube-version", "1.30", "--set", "scheduler.powerFirst=true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: scheduler.powerFirst is deprecated", r.stderr)
        profile = scheduler_config(docs(r.stdout))["profiles"][0]
        self.assertEqual([p["name"] for p in profile["plugins"]["score"]["disabled"]],
                         ["NodeResourcesFit", "NodeResourcesBalancedAllocation"])
        r = run("generate", "scheduler", "--set", "scheduler.powerFirst=true",
                "--set", "scheduler.resourceScoring=pack")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("scheduler.powerFirst: true and scheduler.resourceScoring: pack disagree", r.stderr)

    def test_insecure_mode_has_no_tls_and_no_secrets(self):
        objects = self.generate("--set", "extender.tlsMode=insecure")
        self.assertFalse(any(o["kind"] == "Secret" for o in objects))
        ext = scheduler_config(objects)["extenders"][0]
        self.assertTrue(ext["urlPrefix"].startswith("http://"))
        self.assertFalse(ext["enableHTTPS"])
        self.assertNotIn("tlsConfig", ext)

    def test_extender_deployment_is_hardened_with_both_ports(self):
        objects = self.generate("extender")
        dep = next(o for o in objects if o["kind"] == "Deployment")
        pod = dep["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
        self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        self.assertIn("--client-ca=/etc/powerctl/tls/ca.crt", c["args"])
        svc = next(o for o in objects if o["kind"] == "Service")
        self.assertEqual(sorted(p["port"] for p in svc["spec"]["ports"]), [8080, 8443])
        cm = next(o for o in objects if o["kind"] == "ConfigMap")
        self.assertEqual(yaml.safe_load(cm["data"]["powerctl.yaml"])["kind"], "PowerctlConfig")

    def test_model_requires_an_image_or_pvc(self):
        r = run("generate", "model")
        self.assertUsageError(r, "predictor.model.image")
        objects = self.generate("model", "--set", "predictor.model.image=registry.example.com/m:1")
        dep = next(o for o in objects if o["kind"] == "Deployment")
        ports = [p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]]
        self.assertEqual(ports, [8500, 8501])
        # with the TF Serving backend, `all` includes the model
        names = [o["metadata"]["name"] for o in self.generate(
            "--set", "predictor.backend=tfserving-grpc", "--set", "predictor.model.image=registry.example.com/m:1")]
        self.assertIn("powerctl-model", names)

    def test_extender_image_is_required(self):
        r = run("generate", "extender", "--set", "extender.image=")
        self.assertUsageError(r, "extender.image is required")

    def test_consolidate_rbac_is_opt_in_and_grants_only_what_consolidate_needs(self):
        self.assertFalse(any("consolidate" in o["metadata"]["name"] for o in self.generate("all")))
        objects = self.generate("consolidate", "-n", "energy")
        self.assertEqual([(o["kind"], o["metadata"]["name"]) for o in objects], [
            ("ServiceAccount", "powerctl-consolidate"),
            ("ClusterRole", "powerctl:consolidate:energy"),
            ("ClusterRoleBinding", "powerctl:consolidate:energy")])
        for o in objects:
            labels = o["metadata"]["labels"]
            self.assertEqual(labels["app.kubernetes.io/component"], "consolidate")
            self.assertEqual(labels["app.kubernetes.io/instance"], "energy")
        grants = {(g, r): sorted(rule["verbs"]) for rule in objects[1]["rules"]
                  for g in rule["apiGroups"] for r in rule["resources"]}
        # Writes only where consolidate writes: node patches (cordon and marks), evictions
        # (never a pod delete), Events; PodDisruptionBudgets only read.
        self.assertEqual(grants, {
            ("", "nodes"): ["get", "list", "patch", "watch"],
            ("", "pods"): ["get", "list", "watch"],
            ("", "pods/eviction"): ["create"],
            ("policy", "poddisruptionbudgets"): ["get", "list"],
            ("", "events"): ["create", "patch"]})
        binding = objects[2]
        self.assertEqual(binding["roleRef"]["name"], "powerctl:consolidate:energy")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount",
                                                "name": "powerctl-consolidate",
                                                "namespace": "energy"}])

    def test_lb_is_opt_in_and_its_daemonset_runs_root_with_net_admin_only(self):
        self.assertFalse(any("lb-agent" in o["metadata"]["name"] for o in self.generate("all")))
        objects = self.generate("lb", "-n", "energy", "--set", "lb.opsPort=9500")
        self.assertEqual([(o["kind"], o["metadata"]["name"]) for o in objects], [
            ("ServiceAccount", "powerctl-lb-agent"),
            ("ClusterRole", "powerctl:lb-agent:energy"),
            ("ClusterRoleBinding", "powerctl:lb-agent:energy"),
            ("ConfigMap", "powerctl-lb-agent-config"),
            ("DaemonSet", "powerctl-lb-agent")])
        for o in objects:
            labels = o["metadata"]["labels"]
            self.assertEqual(labels["app.kubernetes.io/component"], "lb", o["metadata"]["name"])
            self.assertEqual(labels["app.kubernetes.io/instance"], "energy", o["metadata"]["name"])
        ds = objects[-1]
        self.assertEqual(ds["spec"]["updateStrategy"],
                         {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
        self.assertEqual(ds["spec"]["selector"]["matchLabels"],
                         {"app.kubernetes.io/name": "powerctl", "app.kubernetes.io/component": "lb-agent"})
        pod = ds["spec"]["template"]["spec"]
        self.assertTrue(pod["hostNetwork"])
        self.assertEqual(pod["dnsPolicy"], "ClusterFirstWithHostNet")
        self.assertEqual(pod["tolerations"], [{"operator": "Exists"}])
        self.assertEqual(pod["serviceAccountName"], "powerctl-lb-agent")
        c = pod["containers"][0]
        self.assertEqual(c["image"], "localhost/powerctl:0.1.0")  # extender.image
        self.assertEqual(c["args"], ["lb-agent", "--config=/etc/powerctl/powerctl.yaml",
                                     "--ops-listen=0.0.0.0:9500"])
        self.assertEqual(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        self.assertEqual(c["ports"], [{"name": "ops", "containerPort": 9500, "protocol": "TCP"}])
        sc = c["securityContext"]
        self.assertEqual(sc["runAsUser"], 0)
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"], "add": ["NET_ADMIN"]})
        self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
        cm = objects[3]
        self.assertEqual(yaml.safe_load(cm["data"]["powerctl.yaml"])["lb"]["opsPort"], 9500)
        # Read-only RBAC: nothing but get, list and watch.
        rules = objects[1]["rules"]
        for rule in rules:
            self.assertTrue(set(rule["verbs"]) <= {"get", "list", "watch"}, rule)
        self.assertIn({"apiGroups": ["metrics.k8s.io"], "resources": ["nodes"], "verbs": ["get", "list"]},
                      rules)
        # With CPU from Prometheus, NodeMetrics are not read, so not granted.
        rules = self.generate("lb", "--set", "telemetry.cpuSource=prometheus")[1]["rules"]
        self.assertEqual([r["apiGroups"] for r in rules], [[""], ["discovery.k8s.io"], [""]])

    def test_lb_pods_roll_when_the_config_changes(self):
        def config_hash(*args):
            ds = self.generate("lb", *args)[-1]
            return ds["spec"]["template"]["metadata"]["annotations"]["powerctl.io/config-hash"]
        self.assertEqual(config_hash(), config_hash())
        self.assertNotEqual(config_hash(), config_hash("--set", "lb.unknownWeight=10"))

    def test_lb_needs_the_powerctl_image(self):
        r = run("generate", "lb", "--set", "extender.image=")
        self.assertUsageError(r, "extender.image is required to generate the lb component")

    def test_policies_render_tas_policies(self):
        cfg = self.write("p.yaml", """
policies:
- name: hot
  strategies:
    dontschedule:
      rules:
      - {metricname: temp, operator: GreaterThan, target: 80}
""")
        objects = self.generate("policies", "-c", cfg)
        crd = objects[0]
        self.assertEqual(crd["metadata"]["name"], "taspolicies.telemetry.intel.com")
        policy = objects[1]
        self.assertEqual(policy["kind"], "TASPolicy")
        self.assertEqual(policy["spec"]["strategies"]["dontschedule"]["rules"][0],
                         {"metricname": "temp", "operator": "GreaterThan", "target": 80})


class ConfigErrorTest(TempDirTest):
    def test_unknown_key_names_file_line_and_suggestion(self):
        cfg = self.write("powerctl.yaml", "namespace: x\nextender:\n  weight: 3\n  prot: 9443\n")
        r = run("generate", "-c", cfg)
        self.assertUsageError(r, f"{cfg}:4:", 'unknown key "extender.prot"', 'did you mean "extender.port"')

    def test_bad_port_names_file_line_and_key(self):
        cfg = self.write("powerctl.yaml", "extender:\n  port: 70000\n")
        r = run("generate", "-c", cfg)
        self.assertUsageError(r, f"{cfg}:2:", "extender.port", "between 1 and 65535")

    def test_bad_version_names_file_line_and_key(self):
        cfg = self.write("powerctl.yaml", "kubernetesVersion: \"1.9\"\n")
        r = run("generate", "-c", cfg)
        self.assertUsageError(r, f"{cfg}:1:", "kubernetesVersion", "1.20 and later")

    def test_bad_kube_version_flag(self):
        self.assertUsageError(run("generate", "--kube-version", "1.19"), "--kube-version", "1.20 and later")
        self.assertUsageError(run("generate", "--kube-version", "1.100"), "--kube-version", "1.20 and later")
        self.assertUsageError(run("generate", "--kube-version", "banana"), "--kube-version")

    def test_patch_releases_must_exist(self):
        # 1.30 ended with 1.30.14: there is no image for 1.30.99.
        self.assertUsageError(run("generate", "scheduler", "--kube-version", "1.30.99"),
                              "--kube-version", "ended with 1.30.14")
        cfg = self.write("powerctl.yaml", "kubernetesVersion: 1.30.99\n")
        self.assertUsageError(run("generate", "scheduler", "-c", cfg), "kubernetesVersion",
                              "ended with 1.30.14")
        # A line that may still get releases: a newer patch than known is a warning.
        r = run("generate", "scheduler", "--kube-version", "1.37.40")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("newer than the newest 1.37 release this powerctl knows", r.stderr)
        self.assertIn("kube-scheduler:v1.37.40", r.stdout)

    def test_newer_minor_renders_the_newest_shape_with_a_warning(self):
        newest = scheduler_config(docs(run("generate", "scheduler", "--kube-version", "1.37").stdout))
        r = run("generate", "scheduler", "--kube-version", "1.38")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1.38 is newer than the newest line this powerctl knows (1.37)", r.stderr)
        self.assertIn("rendering the 1.37 scheduler configuration", r.stderr)
        self.assertEqual(scheduler_config(docs(r.stdout)), newest)
        self.assertIn("kube-scheduler:v1.38.0", r.stdout)

    def test_ended_line_warns_with_its_end_of_life(self):
        r = run("generate", "scheduler", "--kube-version", "1.32")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Kubernetes 1.32 reached its end of life on 2026-02-28", r.stderr)

    def test_default_version_is_the_newest_supported(self):
        r = run("generate", "scheduler", env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        dep = next(o for o in docs(r.stdout) if o["kind"] == "Deployment")
        image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
        self.assertEqual(image, "registry.k8s.io/kube-scheduler:v1.37.1")

    def test_yaml_syntax_error_has_line(self):
        cfg = self.write("powerctl.yaml", "namespace: a\nextender: [1, 2\n")
        r = run("generate", "-c", cfg)
        self.assertEqual(r.returncode, 2)
        self.assertIn(cfg + ":", r.stderr)

    def test_bad_policy_names_line(self):
        cfg = self.write("powerctl.yaml", "policies:\n- name: p\n  strategies:\n    dontschedule:\n"
                                          "      rules:\n      - {metricname: t, operator: Bigger, target: 1}\n")
        r = run("generate", "-c", cfg)
        self.assertUsageError(r, f"{cfg}:6:", "operator")

    def test_missing_config_file(self):
        r = run("generate", "-c", self.path("nope.yaml"))
        self.assertUsageError(r, "nope.yaml")

    def test_env_and_set_precedence(self):
        cfg = self.write("powerctl.yaml", "extender:\n  weight: 3\n")
        env = clean_env(POWERCTL_EXTENDER_WEIGHT="4")
        weight = lambda *a: scheduler_config(docs(run("generate", "scheduler", *a, env=env).stdout))[
            "extenders"][0]["weight"]
        self.assertEqual(weight(), 4)                       # env over defaults
        self.assertEqual(weight("-c", cfg), 4)              # env over file
        self.assertEqual(weight("-c", cfg, "--set", "extender.weight=6"), 6)  # flag over env
        bad = run("generate", env=clean_env(POWERCTL_EXTENDER_WEIGHT="heavy"))
        self.assertUsageError(bad, "POWERCTL_EXTENDER_WEIGHT", "not an integer")

    def test_unknown_component(self):
        self.assertUsageError(run("generate", "schedular"), 'unknown component "schedular"')


class ConfigFileTest(TempDirTest):
    """Which powerctl.yaml a command reads: -c, else $POWERCTL_CONFIG, else ./powerctl.yaml."""

    def image(self, *args, env=None):
        r = run("generate", "extender", *args, env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        images = [c["image"] for o in docs(r.stdout) if o["kind"] == "Deployment"
                  for c in o["spec"]["template"]["spec"]["containers"]]
        return images[0], r.stderr

    def test_the_working_directorys_file_is_read_unless_another_is_named(self):
        for name, image in (("powerctl.yaml", "cwd"), ("env.yaml", "env"), ("flag.yaml", "flag")):
            self.write(name, f"extender:\n  image: registry.example.com/{image}:1\n")
        image, stderr = self.image("-v", "2")
        self.assertEqual(image, "registry.example.com/cwd:1")
        self.assertIn("reading ./powerctl.yaml", stderr)
        env = clean_env(POWERCTL_CONFIG=self.path("env.yaml"))
        self.assertEqual(self.image(env=env)[0], "registry.example.com/env:1")
        self.assertEqual(self.image("-c", self.path("flag.yaml"), env=env)[0],
                         "registry.example.com/flag:1")


class TemplatesAndOutOfClusterTest(TempDirTest):
    def test_templates_dir_overrides_one_template(self):
        tdir = os.path.join(self.tmp, "templates")
        os.makedirs(tdir)
        with open(os.path.join(tdir, "namespace.yaml"), "w") as f:
            f.write("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{namespace}}\n"
                    "  annotations:\n    owner: platform-team\n")
        r = run("generate", "namespace", "rbac", "--templates", tdir)
        self.assertEqual(r.returncode, 0, r.stderr)
        objects = docs(r.stdout)
        self.assertEqual(objects[0]["metadata"]["annotations"]["owner"], "platform-team")
        self.assertEqual(objects[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"], "powerctl")
        self.assertTrue(any(o["kind"] == "ClusterRole" for o in objects))  # rbac still embedded

    def test_an_override_that_matches_no_template_is_an_error(self):
        tdir = os.path.join(self.tmp, "templates")
        os.makedirs(tdir)
        with open(os.path.join(tdir, "namespaces.yaml"), "w") as f:
            f.write("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n")
        r = run("generate", "namespace", "--templates", tdir)
        self.assertUsageError(r, '"namespaces.yaml" (did you mean "namespace.yaml"?) matches no '
                                 "template")
        self.assertEqual(r.stdout, "")

    def test_exported_templates_render_what_the_embedded_ones_do(self):
        tdir = os.path.join(self.tmp, "exported")
        r = run("generate", "--export-templates", tdir)
        self.assertEqual(r.returncode, 0, r.stderr)
        names = sorted(os.listdir(tdir))
        self.assertEqual(names, sorted(os.path.basename(p) for p in os.listdir(
            os.path.join(SOURCE_DIR, "templates"))))
        args = ("generate", "namespace", "rbac", "scheduler", "--set", "extender.tlsMode=insecure")
        self.assertEqual(run(*args, "--templates", tdir).stdout, run(*args).stdout)
        # A second export would overwrite edits: refused, nothing touched.
        with open(os.path.join(tdir, "namespace.yaml"), "a") as f:
            f.write("# edited\n")
        again = run("generate", "--export-templates", tdir)
        self.assertEqual(again.returncode, 1)
        self.assertIn("not overwriting", again.stderr)
        with open(os.path.join(tdir, "namespace.yaml")) as f:
            self.assertTrue(f.read().endswith("# edited\n"))

    def test_broken_template_names_template_and_line(self):
        tdir = os.path.join(self.tmp, "templates")
        os.makedirs(tdir)
        with open(os.path.join(tdir, "namespace.yaml"), "w") as f:
            f.write("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{namespaec}}\n")
        r = run("generate", "namespace", "--templates", tdir)
        self.assertUsageError(r, "namespace.yaml:4", "namespaec")

    def test_out_of_cluster_scheduler_config_and_cert_files(self):
        out = self.path("out")
        kubeconfig = self.write("sched.kubeconfig", "apiVersion: v1\nkind: Config\n")
        args = ("generate", "scheduler", "--out-of-cluster", "--kubeconfig", kubeconfig,
                "--extender-url", "https://127.0.0.1:9443/scheduler", "--output-dir", out)
        r = run(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = yaml.safe_load(open(os.path.join(out, "scheduler-config.yaml")))
        self.assertEqual(cfg["kind"], "KubeSchedulerConfiguration")
        self.assertEqual(cfg["clientConnection"]["kubeconfig"], kubeconfig)
        ext = cfg["extenders"][0]
        self.assertEqual(ext["urlPrefix"], "https://127.0.0.1:9443/scheduler")
        tls = ext["tlsConfig"]
        self.assertEqual(tls["serverName"], "powerctl-extender.powerctl.svc")
        self.assertEqual(tls["caFile"], os.path.join(out, "tls", "ca.crt"))
        self.assertEqual(tls["certFile"], os.path.join(out, "tls", "client.crt"))
        self.assertEqual(tls["keyFile"], os.path.join(out, "tls", "client.key"))
        for name in ("ca.key", "server.key", "client.key"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(out, "tls", name)).st_mode), 0o600, name)
        ca = open(os.path.join(out, "tls", "ca.crt")).read()
        # a second run reuses the material instead of replacing it
        r2 = run(*args)
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertIn("using TLS material", r2.stderr)
        self.assertEqual(open(os.path.join(out, "tls", "ca.crt")).read(), ca)

    def test_out_of_cluster_needs_kubeconfig_and_url(self):
        r = run("generate", "scheduler", "--out-of-cluster", "--extender-url", "https://x/s", "--cert-dir", self.tmp)
        self.assertUsageError(r, "--kubeconfig")
        r = run("generate", "scheduler", "--out-of-cluster", "--kubeconfig", "/k", "--cert-dir", self.tmp)
        self.assertUsageError(r, "--extender-url")
        r = run("generate", "scheduler", "--out-of-cluster", "--kubeconfig", "/k", "--extender-url",
                "http://127.0.0.1:1/s", "--cert-dir", self.tmp)
        self.assertUsageError(r, "scheme")


if __name__ == "__main__":
    import unittest
    unittest.main()
