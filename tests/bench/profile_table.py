#!/usr/bin/env python3
"""powerctl against the default scheduler for each generated scheduler profile and weight.

The tables of docs/scheduler-profile.md: for each `scheduler.resourceScoring` choice and
`extender.weight`, `powerctl simulate --scorer powerctl --scorer default` on the demo and each
data/specpower/*.yaml snapshot, seeds 1..N, loads 25/50/75 %; each cell is powerctl's watts
against the default scheduler's in percent (negative: powerctl draws less), the mean of the
loads; "homogeneous, worst load" is the highest of the loads on the homogeneous snapshot.

  /usr/bin/python3 tests/bench/profile_table.py [--binary build/powerctl] [--seeds 5]
      [--error 10] [--rows spread:1,spread:5,pack:5,none:5]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_ROWS = ("spread:1,spread:2,spread:5,spread:10,spread:100,pack:1,pack:2,pack:5,pack:10,"
                "pack:100,none:5")
SNAPSHOTS = ["demo", "data/specpower/mixed-generations.yaml", "data/specpower/modern.yaml",
             "data/specpower/homogeneous.yaml"]


def relative(binary, snapshot, choice, weight, error, seeds):
    cmd = [binary, "simulate", "--seeds", str(seeds), "--load", "25,50,75", "--prediction-error",
           str(error), "--scorer", "powerctl", "--scorer", "default", "-o", "json",
           "--set", f"scheduler.resourceScoring={choice}", "--set", f"extender.weight={weight}"]
    if snapshot != "demo":
        cmd += ["--cluster", os.path.join(ROOT, snapshot)]
    doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    by = {s["scorer"]: s["loads"] for s in doc["summary"]}
    return [100 * (p["meanWatts"] / d["meanWatts"] - 1) for p, d in zip(by["powerctl"], by["default"])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "powerctl"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--error", default="10")
    parser.add_argument("--rows", default=DEFAULT_ROWS)
    args = parser.parse_args()
    rows = [tuple(r.split(":")) for r in args.rows.split(",")]
    jobs = [(row, snap) for row in rows for snap in SNAPSHOTS]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = dict(zip(jobs, pool.map(
            lambda job: relative(args.binary, job[1], job[0][0], job[0][1], args.error, args.seeds),
            jobs)))
    print("| resourceScoring | weight | demo | mixed-generations | modern | homogeneous | mean "
          "| homogeneous, worst load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        cells = [sum(results[(row, s)]) / 3 for s in SNAPSHOTS]
        worst = max(results[(row, SNAPSHOTS[-1])])
        print(f"| {row[0]} | {row[1]} | " + " | ".join(f"{c:+.1f} %" for c in cells) +
              f" | {sum(cells) / len(cells):+.2f} % | {worst:+.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
