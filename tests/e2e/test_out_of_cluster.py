"""The out-of-cluster set-up exactly as docs/setup.md ("Out of the cluster") writes it: the
page's shell blocks are read and run command by command (only the values of its first block,
where things are, are replaced by this cluster's and free ports), so the documentation and
this test cannot drift apart. Then `doctor` passes, `status --wait` succeeds, and with the
extender killed by its PID, `doctor` fails extender-ready naming how to start it and `status`
reports it not ready."""
import json
import os
import re
import shlex
import subprocess
import unittest

import cluster as cl
from e2e_support import BINARY, SOURCE_DIR, ClusterTest, powerctl

NS = "ooc-e2e"
SCHEDULER = "ooc-e2e-scheduler"
SECTION = "## Out of the cluster"


def documented_blocks(path=os.path.join(SOURCE_DIR, "docs", "setup.md")):
    """The ```sh blocks of the section, each a list of commands (continuations joined,
    comments and blank lines dropped)."""
    with open(path) as f:
        text = f.read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else len(text)]
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", section, re.S):
        commands, current = [], ""
        for line in body.splitlines():
            line = re.sub(r"\s+#.*$", "", line) if not line.startswith("#") else ""
            if line.endswith("\\"):
                current += line[:-1].rstrip() + " "
                continue
            current += line
            if current.strip():
                commands.append(current.strip())
            current = ""
        blocks.append(commands)
    return blocks


ASSIGNMENT = re.compile(r"^([A-Z_]+)=(.*)$")


class OutOfClusterTest(ClusterTest):
    def setUp(self):
        super().setUp()
        self.variables = {}
        self.background = {}  # program name -> (Popen, log path)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCTL_")}
        self.env["KUBECONFIG"] = self.cluster.kubeconfig
        # The documented commands name `powerctl` and `kube-scheduler` as on the user's PATH.
        bin_dir = os.path.join(self.tmp, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(BINARY), os.path.join(bin_dir, "powerctl"))
        # The page promises that kubectl is not needed: one found first on PATH fails the step.
        kubectl = os.path.join(bin_dir, "kubectl")
        with open(kubectl, "w") as f:
            f.write("#!/bin/sh\necho 'a documented out-of-cluster step ran kubectl' >&2\nexit 127\n")
        os.chmod(kubectl, 0o755)
        self.env["PATH"] = os.pathsep.join([bin_dir, cl.default_bin_dir(), self.env.get("PATH", "")])

    def expand(self, command):
        """Shell words of `command` with $NAME expanded from the block's variables."""
        words = shlex.split(command)
        return [re.sub(r"\$([A-Z_]+)", lambda m: self.variables[m.group(1)], w) for w in words]

    def run_command(self, command):
        """One documented command: NAME=value, NAME=$(command), command &, or command."""
        m = ASSIGNMENT.match(command)
        if m and m.group(2).startswith("$(") and m.group(2).endswith(")"):
            out = self.run_argv(self.expand(m.group(2)[2:-1]))
            self.variables[m.group(1)] = out.stdout.strip()
            return out
        if m:
            self.variables[m.group(1)] = self.expand(m.group(2))[0]
            return None
        if command.endswith("&"):
            argv = self.expand(command[:-1])
            log_path = os.path.join(self.tmp, f"{argv[0]}-{argv[1]}.log")
            with open(log_path, "w") as log:
                proc = subprocess.Popen(argv, cwd=self.tmp, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.addCleanup(cl.terminate_pid, proc.pid, popen=proc, name=argv[0])
            self.background[argv[0]] = (proc, log_path)
            return None
        return self.run_argv(self.expand(command))

    def run_argv(self, argv, check=True):
        r = subprocess.run(argv, cwd=self.tmp, env=self.env, capture_output=True, text=True, timeout=180)
        if check and r.returncode != 0:
            logs = "\n".join(f"--- {name}:\n{cl.tail(path)}" for name, (_, path) in self.background.items())
            raise AssertionError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}\n{logs}")
        return r

    def test_the_documented_steps_work_and_doctor_tells_a_dead_extender(self):
        blocks = documented_blocks()
        where = blocks[0]
        names = [ASSIGNMENT.match(c).group(1) for c in where]
        self.assertEqual(names, ["NS", "SCHEDULER", "EXTENDER", "EXTENDER_OPS", "SCHEDULER_PORT"],
                         "the first block says where things are")
        extender_port, ops_port, secure_port, healthz_port, dead_prometheus = cl.free_ports(5)
        self.variables = {"NS": NS, "SCHEDULER": SCHEDULER, "EXTENDER": f"127.0.0.1:{extender_port}",
                          "EXTENDER_OPS": f"127.0.0.1:{ops_port}", "SCHEDULER_PORT": str(secure_port)}
        # powerctl.yaml, step 1 of the in-cluster set-up. Telemetry points at a Prometheus that is
        # not there: the extender is then ready but degraded (a doctor WARN, not a failure).
        with open(os.path.join(self.tmp, "powerctl.yaml"), "w") as f:
            f.write(f"""namespace: {NS}
kubernetesVersion: "1.20"
scheduler:
  name: {SCHEDULER}
  legacyHealthzPort: {healthz_port}
telemetry:
  cpuSource: prometheus
  temperatureSource: prometheus
  prometheusUrl: http://127.0.0.1:{dead_prometheus}
""")
        self.addCleanup(self.run_argv, ["powerctl", "delete", "--wait"], False)

        checks = []
        for block in blocks[1:]:
            for command in block:
                if command.startswith("powerctl doctor") or command.startswith("powerctl status"):
                    checks.append(command)
                    continue
                self.run_command(command)
        self.assertEqual(sorted(self.background), ["kube-scheduler", "powerctl"])
        for kubeconfig in ("scheduler.kubeconfig", "extender.kubeconfig"):
            mode = os.stat(os.path.join(self.tmp, kubeconfig)).st_mode & 0o777
            self.assertEqual(mode, 0o600, f"{kubeconfig} holds a token: {oct(mode)}")
        missing = self.run_argv(["powerctl", "kubeconfig", "no-such-account", "-n", NS], check=False)
        self.assertEqual(missing.returncode, 1, missing.stderr)
        self.assertIn(f'ServiceAccount "no-such-account" not found in namespace "{NS}"', missing.stderr)
        doctor_cmd, status_cmd = checks
        self.assertIn("--wait", status_cmd)

        # status --wait first: it waits for the scheduler's Lease and the extender's cache.
        status = self.run_argv(self.expand(status_cmd), check=False)
        self.assertEqual(status.returncode, 0, status.stdout + status.stderr)
        self.assertRegex(status.stdout, r"scheduler\s+yes\s+process http://127\.0\.0\.1:%d/healthz" % healthz_port)
        self.assertRegex(status.stdout, r"extender\s+yes\s+process http://127\.0\.0\.1:%d" % ops_port)
        # The running extender says its build: the same binary as the client here.
        client = re.search(r"Client:\s+powerctl (\S+)", status.stdout)
        self.assertIsNotNone(client, status.stdout)
        self.assertRegex(status.stdout, r"Installed:\s+powerctl %s \(the running extender's build\)"
                         % re.escape(client.group(1)))

        doctor = self.run_argv(self.expand(doctor_cmd) + ["-o", "json"], check=False)
        report = json.loads(doctor.stdout)
        by_id = {c["id"]: c for c in report["checks"]}
        self.assertEqual(doctor.returncode, 0, doctor.stdout + doctor.stderr)
        self.assertEqual(by_id["scheduler-ready"]["status"], "PASS", by_id["scheduler-ready"])
        self.assertEqual(by_id["scheduler-lease"]["status"], "PASS", by_id["scheduler-lease"])
        # Ready; degraded (a WARN) once its first telemetry refresh from the missing Prometheus failed.
        self.assertIn(by_id["extender-ready"]["status"], ("PASS", "WARN"), by_id["extender-ready"])
        self.assertIn(f"ready at http://127.0.0.1:{ops_port}", by_id["extender-ready"]["message"])

        extender, _ = self.background["powerctl"]
        cl.terminate_pid(extender.pid, popen=extender, name="powerctl schedule-server")

        dead = self.run_argv(self.expand(doctor_cmd) + ["-o", "json"], check=False)
        self.assertEqual(dead.returncode, 3, dead.stdout + dead.stderr)
        by_id = {c["id"]: c for c in json.loads(dead.stdout)["checks"]}
        self.assertEqual(by_id["extender-ready"]["status"], "FAIL", by_id["extender-ready"])
        self.assertIn(f"no extender answers at http://127.0.0.1:{ops_port}", by_id["extender-ready"]["message"])
        self.assertIn(f"powerctl schedule-server -c powerctl.yaml --ops-listen 127.0.0.1:{ops_port}",
                      by_id["extender-ready"]["fix"])
        self.assertEqual(by_id["scheduler-ready"]["status"], "PASS")

        # Without --wait: one look, exit 3, the extender not ready.
        now = [w for w in self.expand(status_cmd) if w not in ("--wait", "--timeout", "2m")]
        down = self.run_argv(now + ["-o", "json"], check=False)
        self.assertEqual(down.returncode, 3, down.stdout + down.stderr)
        state = json.loads(down.stdout)
        components = {c["name"]: c for c in state["components"]}
        self.assertFalse(state["ready"])
        self.assertFalse(components["extender"]["ready"])
        self.assertTrue(components["scheduler"]["ready"])


if __name__ == "__main__":
    unittest.main()
