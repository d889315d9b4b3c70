#!/usr/bin/python3
"""Soak: prioritize at the highest rate the machine sustains, for a minute, against one
`powerctl schedule-server` holding N nodes (default 1,000) in its cluster cache, with zero errors
allowed; its memory sampled all along.

    /usr/bin/python3 tests/bench/soak.py                     # 1,000 nodes, 10 s warm-up, 60 s
    /usr/bin/python3 tests/bench/soak.py --nodes 50 --warmup 1 --duration 3   # ctest

Same setting as http_load.py: a real kube-apiserver with the Node objects, a real Prometheus
for CPU and temperatures, NodeNames mode as kube-scheduler sends it with nodeCacheCapable, wrk
with --connections connections (the rate the machine sustains: with 2 cores, more connections
only queue). The warm-up fills what the server keeps by design (its bounded decision history,
prepared per-node inputs, malloc's per-thread arenas); RSS is read after it and after the
measured run, and every --sample seconds in between. A leak shows as growth between the two;
the issue's bar is under 10 %. Exit 1 on any request error or non-2xx answer."""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

import bench_support as bs
import http_load


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--duration", type=int, default=60, help="seconds of the measured run (default 60)")
    p.add_argument("--warmup", type=int, default=10, help="seconds of load before the first RSS reading")
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--threads", type=int, default=2, help="schedule-server --threads")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between RSS samples")
    p.add_argument("--server-arg", action="append", default=[], metavar="FLAG")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    bs.require(bs.PROMETHEUS, "wrk", bs.BINARY)
    results = {"machine": bs.machine(), "loadavg_at_start": bs.loadavg(), "nodes": args.nodes,
               "connections": args.connections, "warmup_s": args.warmup, "duration_s": args.duration}
    with bs.workdir("powerctl-soak-", args.keep) as work, bs.bench_cluster(work) as cluster, \
            bs.Telemetry(work, args.nodes) as telemetry:
        script = os.path.join(work, "post.lua")
        with open(script, "w") as f:
            f.write(http_load.WRK_SCRIPT)
        os.environ["POWERCTL_BENCH_WRK_SCRIPT"] = script
        api = bs.KeepAliveApi(cluster)
        config = bs.write_powerctl_config(os.path.join(work, "powerctl.yaml"), telemetry.url)
        server = bs.ScheduleServer(work, config, cluster.kubeconfig, threads=args.threads,
                                   extra_args=args.server_arg)
        with server:
            bs.create_nodes(api, 0, args.nodes)
            server.wait_predicted(bs.node_name(args.nodes - 1))
            body = os.path.join(work, "body.json")
            with open(body, "w") as f:
                json.dump(http_load.body_for("names", args.nodes, []), f, separators=(",", ":"))
            url = f"http://127.0.0.1:{server.port}/scheduler/prioritize"
            http_load.check_answer(url, body, "names", "prioritize", args.nodes)
            results["rss_idle_mib"] = server.memory()["VmRSS"]

            warm = http_load.run_wrk(url, body, args.connections, args.warmup)
            results["warmup"] = warm
            before = server.memory()["VmRSS"]
            samples = [(0.0, before)]
            stop = threading.Event()

            def sample():
                start = time.monotonic()
                while not stop.wait(args.sample):
                    samples.append((round(time.monotonic() - start, 1), server.memory()["VmRSS"]))
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            run = http_load.run_wrk(url, body, args.connections, args.duration)  # raises on errors
            stop.set()
            sampler.join()
            after = server.memory()["VmRSS"]
            samples.append((float(args.duration), after))
            results.update(run=run, rss_before_mib=before, rss_after_mib=after, rss_samples=samples,
                           rss_growth_pct=round(100 * (after - before) / before, 1),
                           server_side=server.verb_latency())
    print_report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def print_report(r):
    run = r["run"]
    print(f"machine: {r['machine']}; load average at start {r['loadavg_at_start']}")
    print(f"{r['nodes']:,} nodes, NodeNames prioritize, {r['connections']} connections, "
          f"{r['warmup_s']} s warm-up then {r['duration_s']} s measured\n")
    print("| requests | req/s | errors | p50 ms | p99 ms | max ms | RSS idle MiB | RSS after warm-up MiB "
          "| RSS after the run MiB | growth |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {run['requests']:,} | {run['rps']} | {run['errors'] + run['non2xx']} | "
          f"{run['p50_us'] / 1000:.2f} | {run['p99_us'] / 1000:.2f} | {run['max_us'] / 1000:.1f} | "
          f"{r['rss_idle_mib']:.1f} | {r['rss_before_mib']:.1f} | {r['rss_after_mib']:.1f} | "
          f"{r['rss_growth_pct']:+.1f} % |")
    print("\nRSS during the run (s: MiB): " + ", ".join(f"{t:g}: {m:.1f}" for t, m in r["rss_samples"]))


if __name__ == "__main__":
    sys.exit(main())
