#!/usr/bin/python3
"""kube-scheduler throughput (pods/s) with and without `powerctl schedule-server` as its extender.

    /usr/bin/python3 tests/bench/scheduler_throughput.py                     # 500 nodes, 1000 pods
    /usr/bin/python3 tests/bench/scheduler_throughput.py --nodes 50 --pods 50 --smoke   # ctest

A real kube-apiserver and kube-scheduler v1.20.2 (tests/e2e/cluster.py) with N Ready Node objects
(no kubelets: pods only bind). The scheduler configuration is the one `powerctl generate scheduler
--out-of-cluster` writes (extender over mutual TLS with the generated certificates,
nodeCacheCapable, ignorable, percentageOfNodesToScore: 100), with clientConnection qps/burst raised
(scheduler.clientQPS/clientBurst, default 5000/5000) so client-side throttling does not hide the
extender's cost, and leader election off. The baseline is the same file without `extenders`.

Each run: M pods are created (in parallel) while no scheduler runs, then the scheduler starts and a
watch records when each pod gets its node; pods/s = (M - 1) / (last bind - first bind), so start-up
and informer sync are not counted. The pods are deleted between runs. The extender reads CPU and
temperatures from a real Prometheus (bench_support.py), so every prioritize goes through the
built-in model. --floor adds, in each round, a run against tests/bench/noop_extender (the same
HTTPS server, mutual TLS and wire code with no decision): the part of the extender's per-pod cost
that any extender pays, whatever it computes. The extender's memory is reported per round: VmRSS
once it is ready, its peak while kube-scheduler calls it, VmRSS after, and the highest of samples
taken every 0.25 s with the allocator's heap figures of that moment. --perf DIR records `perf record --call-graph dwarf` of the extender during its runs.

CPU per scheduled pod, which a busy machine hardly moves: utime + stime of every thread of the
extender, kube-scheduler, kube-apiserver and etcd (/proc/PID/stat), read at the first and at the
last bind of each run and divided by the pods bound in between, beside the load averages before
and after the run. Each process also has an idle pace (CPU per second with nothing to schedule,
measured for 3 s before the scheduler starts), which a slower run accrues more of per pod; the
figures "less the idle pace" take it out, leaving what scheduling itself costs.
"""
import argparse
import copy
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import yaml

import bench_support as bs
from bench_support import cl, log

NS = "powerctl-bench"
SCHEDULER = "bench-scheduler"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=1, help="baseline/extender pairs (default 1)")
    p.add_argument("--qps", type=int, default=5000, help="scheduler clientConnection.qps (default 5000)")
    p.add_argument("--burst", type=int, default=5000, help="scheduler clientConnection.burst (default 5000)")
    p.add_argument("--threads", type=int, default=2, help="schedule-server --threads (default 2)")
    p.add_argument("--perf", metavar="DIR", help="perf record the extender during its runs, into DIR")
    p.add_argument("--server-arg", action="append", default=[], metavar="FLAG",
                   help="extra schedule-server flag, repeatable (e.g. --server-arg=--decision-events=false)")
    p.add_argument("--floor", action="store_true",
                   help="also run each round against noop_extender (no decision): the protocol's own cost")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--smoke", action="store_true", help="check that the extender was called (ctest)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def pod_manifest(i):
    """A small pod for the bench scheduler (the ServiceAccount admission needs no token)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"bench-pod-{i:05d}", "namespace": NS, "labels": {"app": "bench"}},
            "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                     "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


class BindWatcher(threading.Thread):
    """Watches the namespace's pods from a resourceVersion and records when each pod first has a
    spec.nodeName (time.monotonic() on arrival of the event). At the first and at the last bind
    it also reads the CPU seconds of the processes in `cpu_pids` (role -> PID, filled in once
    they run), so CPU per pod covers exactly the window pods/s is measured over."""

    def __init__(self, cluster, resource_version, expected):
        super().__init__(daemon=True)
        self.cluster, self.rv, self.expected = cluster, resource_version, expected
        self.bound = {}
        self.cpu_pids = {}
        self.cpu_first = self.cpu_last = None
        self.done = threading.Event()
        self.error = None
        api = bs.KeepAliveApi(cluster)
        self.conn = http.client.HTTPSConnection(api.host, api.port, context=api.context, timeout=3600)
        self.conn.request("GET", f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={self.rv}"
                                 "&timeoutSeconds=3600", headers={"Authorization": f"Bearer {cluster.token}"})
        self.resp = self.conn.getresponse()
        if self.resp.status != 200:
            raise cl.ApiError("GET", "watch pods", self.resp.status, self.resp.read())

    def run(self):
        try:
            while len(self.bound) < self.expected:
                line = self.resp.readline()
                if not line:
                    raise RuntimeError(f"the watch ended after {len(self.bound)} bound pods")
                event = json.loads(line)
                pod = event["object"]
                name, node = pod["metadata"]["name"], pod.get("spec", {}).get("nodeName")
                if event["type"] in ("ADDED", "MODIFIED") and node and name not in self.bound:
                    self.bound[name] = (time.monotonic(), node)
                    if len(self.bound) == 1:
                        self.cpu_first = self.cpu_now()
                    if len(self.bound) == self.expected:
                        self.cpu_last = self.cpu_now()
        except Exception as e:  # reported by wait()
            self.error = e
        finally:
            self.done.set()
            self.conn.close()

    def cpu_now(self):
        out = {role: bs.cpu_seconds(pid) for role, pid in dict(self.cpu_pids).items()}
        if "extender" in out:  # part of the extender's: its decision writer thread
            out["extender decision writer"] = bs.thread_cpu_seconds(self.cpu_pids["extender"], "powerctl-events")
        return out

    def cpu_ms_per_pod(self, last=None):
        """CPU milliseconds per scheduled pod of each process between the first bind and the
        last (or `last`, a later cpu_now()): (pods - 1) pods were scheduled in that window, as
        for pods/s."""
        last = last or self.cpu_last
        if not self.cpu_first or not last or self.expected < 2:
            return {}
        out = {}
        for role, first in self.cpu_first.items():
            end = last.get(role)
            if first is not None and end is not None:
                out[role] = round(1000 * (end - first) / (self.expected - 1), 3)
        return out

    def settle(self, step=0.5, idle_cores=0.1, limit=30):
        """cpu_now() once the processes are idle again after the last bind: the first moment
        that the next `step` seconds cost them all less than `idle_cores` of a core. Work
        queued during the run and done after it (the extender's decision records, the
        scheduler's Events) then counts."""
        prev = self.cpu_now()
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(step)
            cur = self.cpu_now()
            busy = sum(cur[r] - prev[r] for r in self.cpu_pids
                       if cur.get(r) is not None and prev.get(r) is not None)
            if busy < idle_cores * step:
                return prev
            prev = cur
        return prev

    def count(self):
        if self.error:
            raise cl.FatalWaitError(f"watch failed: {self.error}")
        return len(self.bound)


def create_pods(api, count):
    """Creates the pods in parallel; returns the seconds it took."""
    t0 = time.monotonic()
    api.parallel(lambda i: api.ok("POST", f"/api/v1/namespaces/{NS}/pods", pod_manifest(i)), range(count))
    return time.monotonic() - t0


def delete_pods(api):
    """Deletes every pod of the namespace at once (no kubelet: grace period 0) and waits."""
    api.ok("DELETE", f"/api/v1/namespaces/{NS}/pods", {"gracePeriodSeconds": 0})
    cl.wait_for(lambda: not api.ok("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")["items"], 120,
                "the bench pods deleted")


def start_scheduler(work, name, config_doc):
    """kube-scheduler with this configuration; returns (Popen, log path) once /healthz is ok."""
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config_doc, f)
    secure_port, = cl.free_ports(1)
    log_path = os.path.join(work, f"{name}.log")
    kubeconfig = config_doc["clientConnection"]["kubeconfig"]
    with open(log_path, "w") as out:
        proc = subprocess.Popen([os.path.join(cl.default_bin_dir(), "kube-scheduler"), f"--config={path}",
                                 "--bind-address=127.0.0.1", f"--secure-port={secure_port}",
                                 f"--authentication-kubeconfig={kubeconfig}",
                                 f"--authorization-kubeconfig={kubeconfig}", "--v=1"],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return proc, log_path


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")


def api_writes(api):
    """The API server's write requests so far by resource[/subresource] (apiserver_request_total
    on its /metrics: every write, whoever made it)."""
    conn = http.client.HTTPSConnection(api.host, api.port, context=api.context, timeout=30)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {api.token}"})
        resp = conn.getresponse()
        text = resp.read().decode()
        status = resp.status
    finally:
        conn.close()
    if status != 200:
        return {}
    out = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{"):].rpartition("} ")
        labels = dict(kv.split("=", 1) for kv in labels_text.split('",') if "=" in kv)
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("verb") not in WRITE_VERBS:
            continue
        key = labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else "")
        out[key] = out.get(key, 0) + float(value)
    return out


def control_plane_pids(cluster):
    """Role -> PID of the API server and etcd, whose CPU per pod is reported."""
    return {rec["role"]: rec["pid"] for rec in cluster.processes if rec["role"] in ("kube-apiserver", "etcd")}


def idle_pace(watcher, window=3.0):
    """CPU ms per second each process in watcher.cpu_pids spends with nothing to schedule (the
    extender's telemetry refresh and Lease, the API server's and etcd's housekeeping), over
    `window` seconds once the pods' creation has been digested. A slower run accrues more of it
    per pod, whatever the extender does per call; less_idle() takes it out."""
    watcher.settle(limit=15)
    first, t0 = watcher.cpu_now(), time.monotonic()
    time.sleep(window)
    last, elapsed = watcher.cpu_now(), time.monotonic() - t0
    return {role: round(1000 * (last[role] - first[role]) / elapsed, 1) for role in first
            if first.get(role) is not None and last.get(role) is not None}


def less_idle(per_pod, idle, span, pods):
    """CPU ms per pod less what each process would have spent idle over the bind span."""
    return {role: round(ms - idle.get(role, 0.0) * span / (pods - 1), 3) for role, ms in per_pod.items()}


def measure(cluster, api, work, name, config_doc, pods, extender=None, perf_dir=None):
    """One run: pods created with no scheduler, scheduler started, time until all are bound."""
    create_s = create_pods(api, pods)
    rv = api.ok("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")["metadata"]["resourceVersion"]
    # Every pod exists before the scheduler starts; the watch sees each bind after rv.
    watcher = BindWatcher(cluster, rv, pods)
    watcher.cpu_pids.update(control_plane_pids(cluster))
    if extender:
        watcher.cpu_pids["extender"] = extender.pid
    idle = idle_pace(watcher)
    load_before = bs.loadavgs()
    watcher.start()
    before = extender.verb_latency() if extender else {}
    perf = None
    if perf_dir and extender:
        os.makedirs(perf_dir, exist_ok=True)
        perf = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,32768", "-F", "199",
                                 "-p", str(extender.pid), "-o", os.path.join(perf_dir, f"{name}.perf.data")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    writes_before = api_writes(api)
    t_start = time.monotonic()
    proc, log_path = start_scheduler(work, name, config_doc)
    watcher.cpu_pids["kube-scheduler"] = proc.pid  # before its informers sync, so before any bind
    try:
        def all_bound():
            if proc.poll() is not None:
                raise cl.FatalWaitError(f"kube-scheduler exited {proc.returncode}:\n{cl.tail(log_path)}")
            return watcher.count() >= pods
        cl.wait_for(all_bound, 60 + pods, f"{pods} pods bound by {name}", interval=0.5,
                    diagnose=lambda: f"{watcher.count()} bound\n{cl.tail(log_path)}")
        settled = watcher.settle()
    finally:
        if perf is not None:
            cl.terminate_pid(perf.pid, popen=perf, name="perf record")
        cl.terminate_pid(proc.pid, popen=proc, name="kube-scheduler")
    times = sorted(t for t, _ in watcher.bound.values())
    span = times[-1] - times[0]
    per_pod = watcher.cpu_ms_per_pod()
    result = {"run": name, "pods": pods, "create_s": round(create_s, 2),
              "first_bind_after_start_s": round(times[0] - t_start, 2), "bind_span_s": round(span, 2),
              "pods_per_s": round((pods - 1) / span, 1) if span > 0 else None,
              "nodes_used": len({n for _, n in watcher.bound.values()}),
              "cpu_ms_per_pod": per_pod,
              "cpu_ms_per_pod_with_tail": watcher.cpu_ms_per_pod(settled),
              "idle_cpu_ms_per_s": idle,
              "cpu_ms_per_pod_busy": less_idle(per_pod, idle, span, pods),
              "api_writes_per_pod": {k: round((v - writes_before.get(k, 0)) / pods, 3)
                                     for k, v in sorted(api_writes(api).items()) if v > writes_before.get(k, 0)},
              "loadavg_before": load_before, "loadavg_after": bs.loadavgs()}
    with open(log_path) as f:
        result["scheduler_extender_errors"] = sum(1 for line in f if "extender" in line.lower()
                                                  and ("error" in line.lower() or "fail" in line.lower()))
    if extender:
        after = extender.verb_latency()
        result["decision_records"] = extender.decision_records()
        result["extender"] = {v: {"calls": s["count"] - before.get(v, {}).get("count", 0),
                                  "mean_ms_cumulative": s["mean_ms"]} for v, s in after.items()}
    log(f"{name}: {result}")
    delete_pods(api)
    return result


def main(argv=None):
    args = parse_args(argv)
    bs.require(bs.PROMETHEUS, bs.BINARY, *([bs.NOOP_EXTENDER] if args.floor else []))
    results = {"machine": bs.machine(), "loadavg_at_start": bs.loadavg(), "nodes": args.nodes, "pods": args.pods,
               "qps": args.qps, "burst": args.burst, "runs": []}
    with bs.workdir("powerctl-sched-bench-", args.keep) as work, bs.bench_cluster(work) as cluster, \
            bs.Telemetry(work, args.nodes) as telemetry:
        api = bs.KeepAliveApi(cluster)
        bs.create_nodes(api, 0, args.nodes)
        api.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        # kube-controller-manager is stopped, so the namespace's default ServiceAccount is made here.
        api.ok("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})

        healthz_port, port = cl.free_ports(2)
        config = bs.write_powerctl_config(os.path.join(work, "powerctl.yaml"), telemetry.url, f"""scheduler:
  name: {SCHEDULER}
  legacyHealthzPort: {healthz_port}
  clientQPS: {args.qps}
  clientBurst: {args.burst}
""")
        out = os.path.join(work, "generated")
        r = subprocess.run([bs.BINARY, "generate", "scheduler", "-c", config, "--kube-version", "1.20",
                            "--out-of-cluster", "--kubeconfig", cluster.kubeconfig, "--extender-url",
                            f"https://127.0.0.1:{port}/scheduler", "--output-dir", out],
                           capture_output=True, text=True, env=bs.powerctl_env(), timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"powerctl generate scheduler exited {r.returncode}:\n{r.stderr}")
        with open(os.path.join(out, "scheduler-config.yaml")) as f:
            with_extender = yaml.safe_load(f)
        with_extender["leaderElection"] = {"leaderElect": False}
        baseline = copy.deepcopy(with_extender)
        del baseline["extenders"]
        results["scheduler_config"] = with_extender
        server = bs.ScheduleServer(work, config, cluster.kubeconfig, tls_dir=os.path.join(out, "tls"),
                                   threads=args.threads, extra_args=args.server_arg)

        for rnd in range(args.rounds):
            results["runs"].append(measure(cluster, api, work, f"baseline-{rnd}", baseline, args.pods))
            server.start(port)
            try:
                server.wait_predicted(bs.node_name(args.nodes - 1))
                ready = server.memory()["VmRSS"]
                server.reset_peak()  # VmHWM from here on: the peak while kube-scheduler calls it
                with server.sample_memory() as sampler:
                    results["runs"].append(measure(cluster, api, work, f"extender-{rnd}", with_extender,
                                                   args.pods, extender=server, perf_dir=args.perf))
                after = server.memory()
                results.setdefault("extender_memory", []).append(
                    {"ready_mib": ready, "peak_during_run_mib": after["VmHWM"], "after_run_mib": after["VmRSS"],
                     "highest_sample": sampler.peak})
            finally:
                server.stop()
            if args.floor:
                noop = bs.NoopExtender(work, config, cluster.kubeconfig, tls_dir=os.path.join(out, "tls"),
                                       threads=args.threads)
                noop.start(port)  # the port the generated configuration names
                try:
                    results["runs"].append(measure(cluster, api, work, f"noop-{rnd}", with_extender,
                                                   args.pods, extender=noop))
                finally:
                    noop.stop()

    summarize(results)
    if args.smoke:
        for kind in ("extender", "noop") if args.floor else ("extender",):
            run = [r for r in results["runs"] if r["run"].startswith(kind)][0]
            calls = run["extender"].get("prioritize", {}).get("calls", 0) + \
                run["extender"].get("filter", {}).get("calls", 0)
            if calls < args.pods:
                raise RuntimeError(f"the {kind} run's extender answered only {calls} filter/prioritize calls "
                                   f"for {args.pods} pods")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def summarize(results):
    """Prints the runs and the with/without ratio (mean over rounds)."""
    print(f"machine: {results['machine']}; load average at start {results['loadavg_at_start']}; "
          f"{results['nodes']} nodes, {results['pods']} pods, qps/burst {results['qps']}/{results['burst']}")
    print("\n| run | pods/s | bind span s | nodes used | extender calls (filter / prioritize) "
          "| CPU ms/pod: extender | kube-scheduler | kube-apiserver | etcd | extender ÷ kube-scheduler "
          "| load before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results["runs"]:
        calls = "-"
        if "extender" in r:
            calls = " / ".join(str(r["extender"].get(v, {}).get("calls", 0)) for v in ("filter", "prioritize"))
        cpu = r.get("cpu_ms_per_pod", {})
        share = "-"
        if cpu.get("extender") is not None and cpu.get("kube-scheduler"):
            share = f"{cpu['extender'] / cpu['kube-scheduler']:.2f}"
        cells = " | ".join(str(cpu.get(k, "-")) for k in ("extender", "kube-scheduler", "kube-apiserver", "etcd"))
        print(f"| {r['run']} | {r['pods_per_s']} | {r['bind_span_s']} | {r['nodes_used']} | {calls} | {cells} "
              f"| {share} | {r['loadavg_before'][0]} → {r['loadavg_after'][0]} |")
    base = [r["pods_per_s"] for r in results["runs"] if r["run"].startswith("baseline") and r["pods_per_s"]]
    ext = [r["pods_per_s"] for r in results["runs"] if r["run"].startswith("extender") and r["pods_per_s"]]
    if base and ext:
        results["ratio"] = round((sum(ext) / len(ext)) / (sum(base) / len(base)), 3)
        print(f"\nratio with/without extender: {results['ratio']} (target >= 0.8)")
    for i, m in enumerate(results.get("extender_memory", [])):
        print(f"extender RSS, round {i}: {m['ready_mib']} MiB ready, peak {m['peak_during_run_mib']} MiB while "
              f"scheduling, {m['after_run_mib']} MiB after; highest 0.25 s sample: {m.get('highest_sample')}")
    noop = [r["pods_per_s"] for r in results["runs"] if r["run"].startswith("noop") and r["pods_per_s"]]
    if base and noop:
        results["floor_ratio"] = round((sum(noop) / len(noop)) / (sum(base) / len(base)), 3)
        print(f"ratio with a no-op extender/without: {results['floor_ratio']} (the protocol's own cost)")
    if ext and noop:
        results["ratio_to_floor"] = round((sum(ext) / len(ext)) / (sum(noop) / len(noop)), 3)
        print(f"ratio powerctl/no-op extender: {results['ratio_to_floor']} (target >= 0.95)")
        # The target is judged on the medians of the rounds: one round that a neighbour's load
        # slowed moves a mean far more.
        results["ratio_to_floor_median"] = round(statistics.median(ext) / statistics.median(noop), 3)
        print(f"ratio powerctl/no-op extender, medians of the rounds: "
              f"{results['ratio_to_floor_median']} (target >= 0.95)")
    for key, what in (("cpu_ms_per_pod", "ms per pod, first to last bind"),
                      ("cpu_ms_per_pod_with_tail", "ms per pod, first bind until idle again"),
                      ("cpu_ms_per_pod_busy", "ms per pod, first to last bind, less the idle pace"),
                      ("idle_cpu_ms_per_s", "ms per second with nothing to schedule (idle pace)")):
        for kind in ("baseline", "extender", "noop"):
            per_pod = {}
            for r in results["runs"]:
                if r["run"].startswith(kind):
                    for role, ms in r.get(key, {}).items():
                        per_pod.setdefault(role, []).append(ms)
            if per_pod:
                medians = {role: sorted(v)[len(v) // 2] for role, v in per_pod.items()}
                results.setdefault(key + "_median", {})[kind] = medians
                print(f"CPU {what}, {kind} (median of rounds): "
                      + ", ".join(f"{role} {ms}" for role, ms in sorted(medians.items())))
    for kind in ("baseline", "extender", "noop"):
        per_pod = {}
        for r in results["runs"]:
            if r["run"].startswith(kind):
                for resource, n in r.get("api_writes_per_pod", {}).items():
                    per_pod.setdefault(resource, []).append(n)
        if per_pod:
            medians = {k: sorted(v)[len(v) // 2] for k, v in per_pod.items()}
            results.setdefault("api_writes_per_pod_median", {})[kind] = medians
            print(f"API server writes per pod, {kind} (median of rounds): "
                  + ", ".join(f"{k} {n}" for k, n in sorted(medians.items())))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (cl.ClusterError, RuntimeError, AssertionError) as e:
        print(f"scheduler_throughput: {e}", file=sys.stderr)
        sys.exit(1)
