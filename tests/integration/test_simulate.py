"""powerctl simulate as a user runs it: the demo, its tables and JSON, files and exit codes."""
import json
import os
import pty
import subprocess
import unittest

from support import BINARY, SOURCE_DIR, TempDirTest, clean_env, run

SMALL = """kind: ClusterSnapshot
nodes:
- name: efficient
  cpu: 8
  memory: 32Gi
  powerCurve: [60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100]
- name: hungry
  cpu: 8
  memory: 32Gi
  powerCurve: [100, 120, 140, 160, 180, 200, 220, 240, 260, 280, 300]
"""


class SimulateTest(TempDirTest):
    def test_the_demo_runs_with_no_flags(self):
        r = run("simulate")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("demo-snapshot.yaml (24 nodes", r.stdout)
        for scorer in ("powerctl", "default", "minimizepower", "peaks"):
            self.assertIn(scorer, r.stdout)
        for load in ("25%", "50%", "75%"):
            self.assertIn(load, r.stdout)
        self.assertIn("gen2019-6", r.stdout)  # the per-node table

    def test_the_outcome_comes_first_with_the_bound(self):
        r = run("simulate", "--seeds", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        outcome = r.stdout.index("Outcome (mean of seeds):")
        self.assertLess(outcome, r.stdout.index("LOAD   SCORER"))
        for column in ("SAVES VS DEFAULT", "SAVES VS PEAKS", "BOUND W", "ABOVE BOUND"):
            self.assertIn(column, r.stdout)
        off = run("simulate", "--seeds", "1", "--idle-off", "-o", "json")
        self.assertEqual(off.returncode, 0, off.stderr)
        self.assertTrue(json.loads(off.stdout)["idleOff"])

    def test_every_specpower_snapshot_loads_and_no_scorer_beats_the_bound(self):
        folder = os.path.join(SOURCE_DIR, "data", "specpower")
        snapshots = sorted(f for f in os.listdir(folder) if f.endswith(".yaml"))
        self.assertGreaterEqual(len(snapshots), 3)
        for name in snapshots:
            r = run("simulate", "--cluster", os.path.join(folder, name), "--seeds", "1", "-o", "json")
            self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")
            doc = json.loads(r.stdout)
            for scorer in doc["summary"]:
                for load in scorer["loads"]:
                    self.assertGreaterEqual(load["aboveBoundPercent"], 0, f"{name} {scorer['scorer']}")

    def test_json_has_the_summary_per_load(self):
        r = run("simulate", "--seeds", "2", "--load", "30,60", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["seeds"], 2)
        self.assertEqual(len(doc["runs"]), 2)
        by_scorer = {s["scorer"]: s for s in doc["summary"]}
        self.assertEqual(set(by_scorer), {"powerctl", "default", "minimizepower", "peaks"})
        loads = by_scorer["default"]["loads"]
        self.assertEqual([l["loadPercent"] for l in loads], [30, 60])
        self.assertLess(loads[0]["meanWatts"], loads[1]["meanWatts"])

    def test_a_workload_too_small_for_the_loads_is_warned_about(self):
        r = run("simulate", "--seeds", "1", "--pods", "10", "--load", "30,60", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        loads = {s["scorer"]: s for s in json.loads(r.stdout)["summary"]}["default"]["loads"]
        self.assertEqual([l["meanWatts"] for l in loads], [None, None])
        self.assertRegex(r.stderr, r"the workload reaches only \d+\.\d% of the cluster's CPU: no figures "
                                   r"at --load 30,60% \(more --pods, or lower loads\)")
        # A workload that reaches every load says nothing.
        r = run("simulate", "--seeds", "1", "--load", "30", "-o", "json")
        self.assertNotIn("reaches only", r.stderr)

    def test_a_cluster_and_workload_file(self):
        cluster = self.write("c.yaml", SMALL)
        workload = self.write("w.yaml", "pods:\n- {name: web, cpu: 1, memory: 1Gi, count: 8}\n")
        r = run("simulate", "--cluster", cluster, "--workload", workload, "--load", "50",
                "--seeds", "1", "--prediction-error", "0", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        watts = {s["scorer"]: s["loads"][0]["meanWatts"] for s in doc["summary"]}
        self.assertEqual(watts["powerctl"], 200.0)  # all eight pods on the efficient node
        self.assertEqual(watts["default"], 280.0)   # spread four and four

    def test_opportunistic_batching_places_a_like_pod_on_the_previous_ranking(self):
        cluster = self.write("c.yaml", SMALL)
        # Each pod fills a node: the second finds the first's node full and takes the next of
        # the first pod's ranking, unscored.
        workload = self.write("w.yaml", "pods:\n- {name: big, cpu: 8, memory: 1Gi, count: 2}\n")
        args = ("simulate", "--cluster", cluster, "--workload", workload, "--load", "100",
                "--seeds", "1", "-o", "json")
        plain = json.loads(run(*args).stdout)
        batched = json.loads(run(*args, "--opportunistic-batching").stdout)
        self.assertFalse(plain["opportunisticBatching"])
        self.assertTrue(batched["opportunisticBatching"])
        self.assertEqual({s["scorer"]: s["hinted"] for s in plain["runs"][0]["scorers"]}["powerctl"], 0)
        self.assertEqual({s["scorer"]: s["hinted"] for s in batched["runs"][0]["scorers"]}["powerctl"], 1)
        r = run(*args[:-2], "--opportunistic-batching")
        self.assertIn("OpportunisticBatching: 1 of 2 powerctl placements took the previous pod's "
                      "ranking unscored", r.stdout)

    def test_a_bad_snapshot_names_file_and_line(self):
        bad = self.write("bad.yaml", SMALL.replace("cpu: 8\n  memory: 32Gi\n  powerCurve: [100",
                                                   "cpu: eight\n  memory: 32Gi\n  powerCurve: [100"))
        r = run("simulate", "--cluster", bad)
        self.assertUsageError(r, "bad.yaml:7", "hungry", "cpu")

    def test_usage_errors(self):
        self.assertUsageError(run("simulate", "--cluster", self.path("missing.yaml")),
                              "missing.yaml")
        self.assertEqual(run("simulate", "--scorer", "best").returncode, 2)
        self.assertEqual(run("simulate", "--load", "150").returncode, 2)
        self.assertEqual(run("simulate", "--pods", "5", "--workload", "w.yaml").returncode, 2)

    def test_report_is_written(self):
        report = self.path("r.html")
        r = run("simulate", "--seeds", "1", "--report", report)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(report) as f:
            html = f.read()
        self.assertIn("<svg", html)
        self.assertNotIn("<script", html)


def run_on_a_terminal(*args, stdout_too=False):
    """Runs powerctl with stderr (and with stdout_too, stdout) on a pseudo-terminal; returns
    (exit code, what the terminal received, stdout when it is a pipe)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BINARY, *args], stdin=subprocess.DEVNULL,
                         stdout=slave if stdout_too else subprocess.PIPE, stderr=slave,
                         env=clean_env(TERM="xterm"))
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        terminal += chunk
    os.close(master)
    stdout = b"" if stdout_too else p.stdout.read()
    if not stdout_too:
        p.stdout.close()
    return p.wait(timeout=120), terminal.decode(), stdout.decode()


class SimulateProgressTest(TempDirTest):
    def test_progress_on_a_terminal_is_erased_at_the_end(self):
        code, terminal, stdout = run_on_a_terminal("simulate", "--seeds", "3")
        self.assertEqual(code, 0, terminal)
        # Runs go side by side: a bar for each run in progress, seeds named when there are several.
        self.assertRegex(terminal, r"^\r0/12 runs done  \w+ s\d \[[#-]{10}\] \d+%")
        # Later lines are drawn at most every 100 ms, so which runs show depends on speed.
        # The last thing on the terminal blanks the line: \r, spaces, \r.
        self.assertTrue(terminal.endswith("\r"), repr(terminal[-80:]))
        erased = terminal[:-1].rsplit("\r", 1)[1]
        self.assertTrue(erased and erased.strip() == "", repr(terminal[-80:]))
        self.assertNotIn("runs done", stdout)
        self.assertIn("Outcome (mean of seeds):", stdout)

    def test_no_progress_on_a_pipe_or_for_scripts(self):
        piped = run("simulate", "--seeds", "3")
        self.assertEqual(piped.returncode, 0, piped.stderr)
        self.assertEqual(piped.stderr, "")
        # -o json into a pipe is read by a program, even when stderr is a terminal.
        code, terminal, stdout = run_on_a_terminal("simulate", "--seeds", "3", "-o", "json")
        self.assertEqual(code, 0, terminal)
        self.assertEqual(terminal, "")
        self.assertEqual(json.loads(stdout)["seeds"], 3)
        # Log lines share the terminal at -v 2 and up: no progress line among them.
        code, terminal, _ = run_on_a_terminal("-v", "2", "simulate", "--seeds", "2")
        self.assertEqual(code, 0, terminal)
        self.assertNotIn("runs done", terminal)

    def test_progress_with_table_output_on_the_same_terminal(self):
        code, terminal, _ = run_on_a_terminal("simulate", "--seeds", "2", stdout_too=True)
        self.assertEqual(code, 0, terminal)
        self.assertIn("/8 runs done", terminal)
        # Erased before the tables are printed.
        before_tables = terminal[:terminal.index("Cluster: ")]
        self.assertTrue(before_tables.endswith("\r"), repr(before_tables[-80:]))


if __name__ == "__main__":
    unittest.main()
