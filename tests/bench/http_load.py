#!/usr/bin/python3
"""HTTP load on `powerctl schedule-server`: requests/s and latency of POST /scheduler/filter and
/scheduler/prioritize over loopback, driven by wrk, at several cluster sizes and in both of
kube-scheduler's node modes, plus the server's memory after the largest size.

    /usr/bin/python3 tests/bench/http_load.py                      # 100, 1000, 5000 nodes
    /usr/bin/python3 tests/bench/http_load.py --nodes 50 --duration 1 --smoke   # ctest

The server runs against a real kube-apiserver (tests/e2e/cluster.py) holding the N Node objects,
so NodeNames mode (nodeCacheCapable: true, the generated default) resolves names from its cluster
cache as in production, and Nodes mode sends the Node objects exactly as the API server returns
them. CPU and temperatures come from a real Prometheus (see bench_support.py), so every node goes
through the built-in model rather than the unknown score. Sizes run in increasing order on one
server: nodes are added between sizes, so the memory read after the last size is the server with
the largest cluster in its cache.

For each size, mode and verb: one connection (a scheduler calls the extender once per pod at a
time: this is the latency that sits in every scheduling cycle) and --connections connections
(throughput). Results: a table on stdout, and JSON with --json FILE.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import bench_support as bs
from bench_support import cl, log

WRK_SCRIPT = r"""
-- POSTs the JSON body in $POWERCTL_BENCH_BODY; done() prints one JSON line with the results.
local f = assert(io.open(os.getenv("POWERCTL_BENCH_BODY"), "rb"))
local body = f:read("*a")
f:close()
local req = nil
function request()
  if req == nil then
    req = wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
  end
  return req
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
    '"max_us":%d,"mean_us":%.1f,"errors":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean,
    e.connect + e.read + e.write + e.timeout, e.status))
end
"""

SETTLE_SECONDS = 5  # how long after a mode's runs the settled memory is read
BODY_LIMIT = 3 * 1024 * 1024  # the server's request body limit (HttpServerLimits::body_bytes)

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "bench-pod", "namespace": "default", "uid": "5c1f9d9e-bench-0000-0000-000000000001",
                    "labels": {"app": "bench"}},
       "spec": {"schedulerName": "powerctl-scheduler", "priority": 0,
                "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                "resources": {"requests": {"cpu": "500m", "memory": "256Mi"},
                                              "limits": {"cpu": "1", "memory": "512Mi"}}}]},
       "status": {"phase": "Pending"}}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", default="100,1000,5000", help="cluster sizes, increasing (default 100,1000,5000)")
    p.add_argument("--modes", default="names,nodes", help="names (NodeNames) and/or nodes (full Nodes)")
    p.add_argument("--verbs", default="prioritize,filter")
    p.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    p.add_argument("--connections", type=int, default=4, help="connections of the throughput run (default 4)")
    p.add_argument("--threads", type=int, default=2, help="schedule-server --threads (default 2)")
    p.add_argument("--server-arg", action="append", default=[], metavar="FLAG",
                   help="extra schedule-server flag, repeatable (e.g. --server-arg=--decision-events=false)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--smoke", action="store_true", help="one connection only, and check the answers (ctest)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def body_for(mode, count, node_objects):
    """ExtenderArgs as kube-scheduler 1.20 sends them (Go field names, null for the other mode)."""
    if mode == "names":
        return {"Pod": POD, "Nodes": None, "NodeNames": [bs.node_name(i) for i in range(count)]}
    return {"Pod": POD, "Nodes": {"metadata": {}, "items": node_objects[:count]}, "NodeNames": None}


def check_answer(url, path, mode, verb, count):
    """One request by hand: 200, every node answered, and no node fell back to the unknown score
    for lack of telemetry (a prioritize list with all scores equal would hint at that). Returns
    the HTTP status; 413 (body over the server's limit) is a result, not a failure."""
    with open(path, "rb") as f:
        req = urllib.request.Request(url, data=f.read(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 413:
            return 413
        raise
    except urllib.error.URLError as e:
        # Over the limit the server answers 413 and closes at once: a client still sending the
        # body sees the connection closed instead of the answer.
        too_large = os.path.getsize(path) > BODY_LIMIT
        if too_large and isinstance(e.reason, (BrokenPipeError, ConnectionResetError)):
            return 413
        raise
    if verb == "prioritize":
        assert len(doc) == count, f"{mode} prioritize answered {len(doc)} of {count} nodes"
        scores = {h["Score"] for h in doc}
        assert len(scores) > 1 or count == 1, f"{mode} prioritize: every node scored {scores}"
    else:
        kept = doc.get("NodeNames") if mode == "names" else [n["metadata"]["name"] for n in doc["Nodes"]["items"]]
        assert not doc.get("Error") and len(kept) == count, f"{mode} filter: {str(doc)[:300]}"
    return 200


def run_wrk(url, body_path, connections, duration):
    """One wrk run; returns its done() JSON plus requests/s."""
    wrk_threads = min(connections, 2)
    env = dict(os.environ, POWERCTL_BENCH_BODY=body_path)
    r = subprocess.run(["wrk", f"-t{wrk_threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
                        "--latency", "-s", os.environ["POWERCTL_BENCH_WRK_SCRIPT"], url],
                       capture_output=True, text=True, env=env, timeout=duration + 60)
    m = re.search(r"^WRK_JSON (.*)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    res = json.loads(m.group(1))
    if res["errors"] or res["non2xx"]:
        raise RuntimeError(f"wrk saw errors: {res}\n{r.stdout}")
    res["rps"] = round(res["requests"] / (res["duration_us"] / 1e6), 1)
    return res


def main(argv=None):
    args = parse_args(argv)
    bs.require(bs.PROMETHEUS, "wrk", bs.BINARY)
    sizes = [int(n) for n in args.nodes.split(",")]
    modes = args.modes.split(",")
    verbs = args.verbs.split(",")
    results = {"machine": bs.machine(), "loadavg_at_start": bs.loadavg(), "duration_s": args.duration,
               "runs": [], "memory": []}
    with bs.workdir("powerctl-http-load-", args.keep) as work, bs.bench_cluster(work) as cluster, \
            bs.Telemetry(work, max(sizes)) as telemetry:
        script = os.path.join(work, "post.lua")
        with open(script, "w") as f:
            f.write(WRK_SCRIPT)
        os.environ["POWERCTL_BENCH_WRK_SCRIPT"] = script
        api = bs.KeepAliveApi(cluster)
        config = bs.write_powerctl_config(os.path.join(work, "powerctl.yaml"), telemetry.url)
        server = bs.ScheduleServer(work, config, cluster.kubeconfig, threads=args.threads, extra_args=args.server_arg)
        with server:
            made = 0
            for size in sizes:
                bs.create_nodes(api, made, size - made)
                made = size
                server.wait_predicted(bs.node_name(size - 1))
                node_objects = api.ok("GET", f"/api/v1/nodes?labelSelector={bs.BENCH_LABEL}%3Dtrue")["items"]
                node_objects.sort(key=lambda n: n["metadata"]["name"])
                mem = dict(server.memory(), nodes=size, after="idle")
                results["memory"].append(mem)
                log(f"schedule-server memory with {size} nodes, synced, before the runs: {mem}")
                for mode in modes:
                    path = os.path.join(work, f"body-{mode}-{size}.json")
                    with open(path, "w") as f:
                        json.dump(body_for(mode, size, node_objects), f, separators=(",", ":"))
                    for verb in verbs:
                        url = f"http://127.0.0.1:{server.port}/scheduler/{verb}"
                        body_bytes = os.path.getsize(path)
                        if check_answer(url, path, mode, verb, size) == 413:
                            log(f"{size} nodes {mode} {verb}: 413, the {body_bytes / 2**20:.1f} MiB body "
                                "is over the server's limit")
                            results["runs"].append(dict(nodes=size, mode=mode, verb=verb, status=413,
                                                        body_bytes=body_bytes))
                            continue
                        for conns in ([1] if args.smoke else [1, args.connections]):
                            server.reset_peak()
                            res = run_wrk(url, path, conns, args.duration)
                            res.update(nodes=size, mode=mode, verb=verb, connections=conns, status=200,
                                       body_bytes=body_bytes, peak_rss_mib=server.memory()["VmHWM"])
                            results["runs"].append(res)
                            log(f"{size} nodes {mode} {verb} c={conns}: {res['rps']} req/s, "
                                f"p50 {res['p50_us'] / 1000:.2f} ms, p99 {res['p99_us'] / 1000:.2f} ms, "
                                f"peak RSS {res['peak_rss_mib']} MiB")
                    mem = dict(server.memory(), nodes=size, after=mode)
                    results["memory"].append(mem)
                    log(f"schedule-server memory with {size} nodes, after the {mode} runs: {mem}")
                    if args.smoke:
                        continue
                    # What the server settles at once the load stops (the allocator returns
                    # freed pages over about a second; see cmake/Allocator.cmake).
                    time.sleep(SETTLE_SECONDS)
                    mem = dict(server.memory(), nodes=size, after=f"{mode}-settled")
                    results["memory"].append(mem)
                    log(f"schedule-server memory with {size} nodes, {SETTLE_SECONDS} s after the "
                        f"{mode} runs: {mem}")
            results["server_side"] = server.verb_latency()
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def print_table(results):
    """The results as the Markdown tables docs/benchmarks.md shows."""
    print(f"machine: {results['machine']}; load average at start {results['loadavg_at_start']}; "
          f"{results['duration_s']} s per run")
    print("\n| nodes | mode | verb | connections | req/s | p50 ms | p99 ms | request body | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results["runs"]:
        mode = "NodeNames" if r["mode"] == "names" else "Nodes"
        size = f"{r['body_bytes'] / 1024:,.0f} KiB"
        if r["status"] != 200:
            print(f"| {r['nodes']:,} | {mode} | {r['verb']} | - | HTTP {r['status']} | - | - | {size} | - |")
            continue
        print(f"| {r['nodes']:,} | {mode} | {r['verb']} | {r['connections']} | {r['rps']:,.0f} | "
              f"{r['p50_us'] / 1000:.2f} | {r['p99_us'] / 1000:.2f} | {size} | {r['peak_rss_mib']} |")
    print("\n| nodes in the cluster | when | VmRSS MiB |")
    print("|---|---|---|")
    names = {"names": "NodeNames", "nodes": "Nodes"}
    for m in results["memory"]:
        mode, _, settled = m["after"].partition("-")
        when = (f"synced and idle, before the runs (peak so far {m['VmHWM']})" if mode == "idle" else
                f"{SETTLE_SECONDS} s after the {names[mode]} runs" if settled else
                f"right after the {names[mode]} runs")
        print(f"| {m['nodes']:,} | {when} | {m['VmRSS']} |")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (cl.ClusterError, RuntimeError, AssertionError) as e:
        print(f"http_load: {e}", file=sys.stderr)
        sys.exit(1)
