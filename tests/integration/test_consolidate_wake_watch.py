"""powerctl consolidate wake --watch --ops-listen against a stand-in API server: /metrics says
what the pass found and what the hook did, and SIGTERM ends the watch at once with exit 0."""
import json
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.request

from support import BINARY, FakeKubeApi, TempDirTest, clean_env

LISTENING = re.compile(r"/metrics on (http://127\.0\.0\.1:(\d+))")


def node(name, cpu, drained=False):
    n = {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
         "spec": {},
         "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]}}
    if drained:
        n["metadata"]["labels"]["powerctl.io/power-state"] = "drained"
        n["metadata"]["annotations"] = {"powerctl.io/consolidation": json.dumps(
            {"state": "drained", "since": "2026-11-27T20:00:00Z", "expectedWattsSaved": 150})}
        n["spec"] = {"unschedulable": True,
                     "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}
    return n


def pod(name, cpu, node_name=None):
    p = {"metadata": {"name": name, "namespace": "shop", "uid": "u-" + name,
                      "creationTimestamp": "2026-11-27T21:00:00Z"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
    if node_name:
        p["spec"]["nodeName"] = node_name
        p["status"] = {"phase": "Running"}
    else:
        p["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    return p


def answer(path, query):
    lists = {"/api/v1/nodes": ("NodeList", [node("on", "4"), node("off", "8", drained=True)]),
             "/api/v1/pods": ("PodList", [pod("busy", "4", "on"), pod("web-3", "2")])}
    if path not in lists:
        return None
    kind, items = lists[path]
    return 200, {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                 "items": items}


class ConsolidateWakeWatchTest(TempDirTest):
    def test_metrics_after_a_pass_and_sigterm_ends_the_watch(self):
        api = FakeKubeApi(answer)
        self.addCleanup(api.stop)
        proc = subprocess.Popen(
            [BINARY, "consolidate", "wake", "--watch", "--interval", "1h", "--ops-listen",
             "127.0.0.1:0", "--on-wake", "exit 3", "-o", "json", "--kubeconfig",
             api.kubeconfig(self.tmp)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        lines = queue.Queue()
        stderr = []

        def pump():
            for line in proc.stderr:
                stderr.append(line)
                lines.put(line)
            lines.put(None)
        threading.Thread(target=pump, daemon=True).start()

        url = None
        deadline = time.monotonic() + 20
        while url is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            m = LISTENING.search(line)
            url = m.group(1) if m else None
        self.assertIsNotNone(url, "".join(stderr))

        # The first pass runs right after the port opens; /readyz turns ready once it ends.
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.1)
        with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
            self.assertEqual(r.status, 200)
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        self.assertIn("\npowerctl_consolidate_pending_pods 1\n", metrics)
        self.assertIn("\npowerctl_consolidate_drained_nodes 1\n", metrics)
        self.assertIn('powerctl_consolidate_wake_candidate_pods{node="off"} 1\n', metrics)
        self.assertIn('powerctl_consolidate_wakes_total{result="hook_failed"} 1\n', metrics)
        self.assertIn('powerctl_consolidate_wakes_total{result="woken"} 0\n', metrics)
        stamp = re.search(r"\npowerctl_consolidate_last_pass_timestamp_seconds (\S+)\n", metrics)
        self.assertIsNotNone(stamp, metrics)
        self.assertLess(abs(float(stamp.group(1)) - time.time()), 60)

        # The watch waits an hour for its next pass; SIGTERM ends it now, with exit 0.
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 0, "".join(stderr))
        self.assertLess(time.monotonic() - started, 5)
        report = json.loads(proc.stdout.read())
        self.assertEqual(report["nodes"][0]["node"], "off")
        self.assertFalse(report["nodes"][0]["hook"]["ok"])

    def test_ops_listen_needs_watch(self):
        r = subprocess.run([BINARY, "consolidate", "wake", "--ops-listen", "127.0.0.1:0"],
                           capture_output=True, text=True, env=clean_env(), timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--ops-listen needs --watch", r.stderr)
