"""powerctl init: commented file, CI flags, refusal to overwrite, interactive prompts."""
import os
import pty
import select
import stat
import subprocess
import time
import unittest

import yaml

from support import BINARY, FakeKubeApi, TempDirTest, clean_env, run


class FakeApiServer(FakeKubeApi):
    """What `init` asks an API server: /version, metrics.k8s.io and Services by label."""

    def __init__(self, git_version="v1.29.3", metrics_api=False, services=()):
        def answer(path, query):
            if path == "/version":
                return 200, {"major": "1", "minor": git_version.split(".")[1],
                             "gitVersion": git_version}
            if path == "/apis/metrics.k8s.io/v1beta1" and metrics_api:
                return 200, {"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1",
                             "resources": []}
            if path == "/api/v1/services":
                key, _, value = query.get("labelSelector", [""])[0].partition("=")
                items = [s for s in services if s["metadata"].get("labels", {}).get(key) == value]
                return 200, {"kind": "ServiceList", "apiVersion": "v1",
                             "metadata": {"resourceVersion": "1"}, "items": items}
            return None
        super().__init__(answer)

    @property
    def requests(self):
        return self.paths

    def close(self):
        self.stop()


PROMETHEUS_SERVICE = {
    "metadata": {"name": "prometheus-k8s", "namespace": "monitoring",
                 "labels": {"app.kubernetes.io/name": "prometheus"}},
    "spec": {"ports": [{"name": "reloader-web", "port": 8080},
                       {"name": "web", "port": 9090}]},
}


def answer_prompts(test, args, env, answer):
    """Runs powerctl on a pseudo-terminal; `answer(question)` gives each reply. Returns the
    exit code and the transcript."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(BINARY, [BINARY, *args], env)
    transcript = ""
    answered = 0
    deadline = time.time() + 30
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if fd not in ready:
            continue
        try:
            chunk = os.read(fd, 4096).decode(errors="replace")
        except OSError:
            break
        if not chunk:
            break
        transcript += chunk
        prompts = transcript.split("]: ")[:-1]
        while answered < len(prompts):
            os.write(fd, (answer(prompts[answered].splitlines()[-1]) + "\n").encode())
            answered += 1
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), transcript


class InitTest(TempDirTest):
    def test_defaults_write_a_commented_file_that_loads_back(self):
        r = run("init", "--defaults", cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = open(self.path("powerctl.yaml")).read()
        self.assertIn("# Namespace for the extender", text)
        self.assertIn("(env POWERCTL_EXTENDER_WEIGHT)", text)
        doc = yaml.safe_load(text)
        self.assertEqual(doc["apiVersion"], "powerctl.io/v1alpha1")
        self.assertEqual(doc["namespace"], "powerctl")
        self.assertEqual(doc["extender"]["tlsMode"], "mtls")
        self.assertEqual(doc["scheduler"]["name"], "powerctl-scheduler")
        # The written file is valid input for generate.
        g = run("generate", "namespace", "-c", self.path("powerctl.yaml"))
        self.assertEqual(g.returncode, 0, g.stderr)

    def test_refuses_to_overwrite_without_force(self):
        target = self.write("powerctl.yaml", "namespace: mine\n")
        r = run("init", "--defaults", target)
        self.assertEqual(r.returncode, 1)
        self.assertIn("already exists", r.stderr)
        self.assertIn("--force", r.stderr)
        self.assertEqual(open(target).read(), "namespace: mine\n")
        r = run("init", "--defaults", "--force", target)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(yaml.safe_load(open(target))["namespace"], "powerctl")

    def test_flags_environment_and_set_are_applied(self):
        env = clean_env(POWERCTL_EXTENDER_WEIGHT="7")
        r = run("init", "-", "--defaults", "-n", "power", "--kube-version", "1.29",
                "--extender-image", "registry.example.com/powerctl:1.2.3", "--tls-mode", "tls",
                "--set", "scheduler.resourceScoring=pack", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(r.stdout)
        self.assertEqual(doc["namespace"], "power")
        self.assertEqual(str(doc["kubernetesVersion"]), "1.29")
        self.assertEqual(doc["extender"]["image"], "registry.example.com/powerctl:1.2.3")
        self.assertEqual(doc["extender"]["tlsMode"], "tls")
        self.assertEqual(doc["extender"]["weight"], 7)
        self.assertEqual(doc["scheduler"]["resourceScoring"], "pack")
        self.assertNotIn("powerFirst", doc["scheduler"])

    def test_set_takes_one_pair_and_leaves_the_file_name_to_init(self):
        path = os.path.join(self.tmp, "out.yaml")
        r = run("init", "--defaults", "--set", "extender.weight=7", "--set",
                "scheduler.replicas=2", path, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        self.assertEqual(doc["extender"]["weight"], 7)
        self.assertEqual(doc["scheduler"]["replicas"], 2)

    def test_says_what_generate_all_still_needs_instead_of_next(self):
        path = os.path.join(self.tmp, "model.yaml")
        r = run("init", "--defaults", "--predictor", "tfserving-grpc", path, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("before `powerctl generate all", r.stderr)
        self.assertIn("predictor.model.image or predictor.model.persistentVolumeClaim", r.stderr)
        self.assertNotIn("next:", r.stderr)
        # ... and that is exactly what generate asks for.
        g = run("generate", "all", "-c", path, env=clean_env())
        self.assertEqual(g.returncode, 2)
        self.assertIn("predictor.model.image or predictor.model.persistentVolumeClaim", g.stderr)
        fixed = run("generate", "all", "-c", path, "--set", "predictor.model.image=m/m:1",
                    env=clean_env())
        self.assertEqual(fixed.returncode, 0, fixed.stderr)

    def test_deprecated_power_first_is_written_as_resource_scoring(self):
        r = run("init", "-", "--defaults", "--set", "scheduler.powerFirst=true", env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("scheduler.powerFirst is deprecated", r.stderr)
        doc = yaml.safe_load(r.stdout)
        self.assertEqual(doc["scheduler"]["resourceScoring"], "none")
        self.assertNotIn("powerFirst", doc["scheduler"])

    def test_does_not_replace_what_is_not_a_regular_file(self):
        # Writing is write-then-rename: renaming over a device or a FIFO would replace it.
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        r = run("init", "--defaults", "--force", fifo, env=clean_env())
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a regular file", r.stderr)
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))

    def test_bad_flag_value_is_usage_error_and_writes_nothing(self):
        r = run("init", "--defaults", "--tls-mode", "plaintext", cwd=self.tmp)
        self.assertUsageError(r, "extender.tlsMode", "plaintext", "mtls, tls, insecure")
        self.assertFalse(os.path.exists(self.path("powerctl.yaml")))

    def test_not_a_terminal_does_not_prompt(self):
        r = run("init", cwd=self.tmp, input="")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("[", r.stderr.split("\n")[0] if r.stderr else "")
        self.assertTrue(os.path.exists(self.path("powerctl.yaml")))

    def test_interactive_prompts_on_a_terminal(self):
        """Runs init on a pseudo-terminal and answers its questions."""
        target = self.path("answers.yaml")
        # Answer by words in the question.
        answers = [("Namespace", "energy"), ("Resource scores of the generated profile", "none"),
                   ("powerctl image", "registry.example.com/powerctl:9")]
        version_answers = ["1.19", "1.25"]  # the invalid one is asked again

        def answer(question):
            if "Kubernetes version" in question:
                return version_answers.pop(0) if version_answers else ""
            return next((v for k, v in answers if k in question), "")

        code, transcript = answer_prompts(self, ["init", target], clean_env(TERM="dumb"), answer)
        self.assertEqual(code, 0, transcript)
        self.assertIn("invalid Kubernetes version", transcript)
        doc = yaml.safe_load(open(target))
        self.assertEqual(doc["namespace"], "energy")
        self.assertEqual(str(doc["kubernetesVersion"]), "1.25")
        self.assertEqual(doc["scheduler"]["resourceScoring"], "none", transcript)
        self.assertEqual(doc["extender"]["image"], "registry.example.com/powerctl:9")
        self.assertEqual(doc["scheduler"]["name"], "powerctl-scheduler")  # Enter keeps the default

    def test_interactive_follow_ups_and_yes_no(self):
        """Choosing prometheus asks for its URL; a tfserving model asks for the SavedModel;
        a yes/no question takes yes and no."""
        target = self.path("answers.yaml")
        questions = []

        def answer(question):
            questions.append(question)
            if "Node CPU usage" in question:
                return "prometheus"
            if "Prometheus base URL" in question:
                return "http://prom.example:9090"
            if "Power model" in question:
                return "tfserving-grpc"
            if "Image holding the SavedModel" in question:
                return ""
            if "PVC holding the SavedModel" in question:
                return "models"
            if "Keep scheduling when the extender" in question:
                return "no"
            return ""

        code, transcript = answer_prompts(self, ["init", target], clean_env(TERM="dumb"), answer)
        self.assertEqual(code, 0, transcript)
        self.assertTrue(any(q.endswith("(yes|no) [yes") for q in questions), questions)
        doc = yaml.safe_load(open(target))
        self.assertEqual(doc["telemetry"]["cpuSource"], "prometheus")
        self.assertEqual(doc["telemetry"]["prometheusUrl"], "http://prom.example:9090")
        self.assertEqual(doc["predictor"]["model"]["persistentVolumeClaim"], "models")
        self.assertIs(doc["extender"]["ignorable"], False)
        # The follow-ups come right after the answer that needs them, and only then.
        cpu = next(i for i, q in enumerate(questions) if "Node CPU usage" in q)
        self.assertIn("Prometheus base URL", questions[cpu + 2])  # after the temperature source

        asked = []
        code, transcript = answer_prompts(self, ["init", self.path("plain.yaml")],
                                          clean_env(TERM="dumb"),
                                          lambda q: asked.append(q) or "")
        self.assertEqual(code, 0, transcript)
        self.assertFalse(any("Prometheus base URL" in q or "SavedModel" in q for q in asked),
                         asked)

    def test_defaults_come_from_the_cluster(self):
        api = FakeApiServer(git_version="v1.29.3", metrics_api=False,
                            services=[PROMETHEUS_SERVICE])
        self.addCleanup(api.close)
        kubeconfig = api.kubeconfig(self.tmp)
        r = run("init", "-", "--defaults", "--from-cluster", "--kubeconfig", kubeconfig,
                env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(r.stdout)
        self.assertEqual(str(doc["kubernetesVersion"]), "1.29")
        self.assertEqual(doc["telemetry"]["cpuSource"], "prometheus")
        self.assertEqual(doc["telemetry"]["prometheusUrl"],
                         "http://prometheus-k8s.monitoring.svc:9090")
        self.assertIn("the cluster runs Kubernetes v1.29.3", r.stderr)
        # A flag wins over what the cluster suggests.
        r = run("init", "-", "--defaults", "--from-cluster", "--kubeconfig", kubeconfig,
                "--kube-version", "1.27", env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(str(yaml.safe_load(r.stdout)["kubernetesVersion"]), "1.27")
        # Without --from-cluster, --defaults does not ask the cluster.
        before = len(api.requests)
        r = run("init", "-", "--defaults", "--kubeconfig", kubeconfig, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(api.requests), before)
        self.assertEqual(str(yaml.safe_load(r.stdout)["kubernetesVersion"]), "1.37")

    def test_metrics_server_keeps_the_metrics_api_source(self):
        api = FakeApiServer(git_version="v1.33.2", metrics_api=True,
                            services=[PROMETHEUS_SERVICE])
        self.addCleanup(api.close)
        r = run("init", "-", "--defaults", "--from-cluster", "--kubeconfig",
                api.kubeconfig(self.tmp), env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(r.stdout)
        self.assertEqual(str(doc["kubernetesVersion"]), "1.33")
        self.assertEqual(doc["telemetry"].get("cpuSource", "metrics-api"), "metrics-api")

    def test_unreachable_cluster_fails_from_cluster_and_writes_nothing(self):
        api = FakeApiServer()
        kubeconfig = api.kubeconfig(self.tmp)
        api.close()  # nothing listens on its port now
        r = run("init", "--defaults", "--from-cluster", "--kubeconfig", kubeconfig,
                cwd=self.tmp, env=clean_env())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--from-cluster", r.stderr)
        self.assertFalse(os.path.exists(self.path("powerctl.yaml")))


if __name__ == "__main__":
    unittest.main()
