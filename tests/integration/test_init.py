"""powerctl init: commented file, CI flags, refusal to overwrite, interactive prompts."""
import os
import pty
import select
import subprocess
import time
import unittest

import yaml

from support import BINARY, TempDirTest, clean_env, run


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
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(BINARY, [BINARY, "init", target], clean_env(TERM="dumb"))
        # Each prompt ends with "]: "; answer them in order, by words in the question.
        answers = [("Namespace", "energy"), ("Resource scores of the generated profile", "none"),
                   ("powerctl image", "registry.example.com/powerctl:9")]
        version_answers = ["1.99", "1.25"]  # the invalid one is asked again
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
                question = prompts[answered].splitlines()[-1]
                answer = ""
                if "Kubernetes version" in question:
                    answer = version_answers.pop(0) if version_answers else ""
                else:
                    answer = next((v for k, v in answers if k in question), "")
                os.write(fd, (answer + "\n").encode())
                answered += 1
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, transcript)
        self.assertIn("invalid Kubernetes version", transcript)
        doc = yaml.safe_load(open(target))
        self.assertEqual(doc["namespace"], "energy")
        self.assertEqual(str(doc["kubernetesVersion"]), "1.25")
        self.assertEqual(doc["scheduler"]["resourceScoring"], "none", transcript)
        self.assertEqual(doc["extender"]["image"], "registry.example.com/powerctl:9")
        self.assertEqual(doc["scheduler"]["name"], "powerctl-scheduler")  # Enter keeps the default


if __name__ == "__main__":
    unittest.main()
