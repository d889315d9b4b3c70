#!/usr/bin/env python3
"""Watts per scorer on every bundled snapshot, as the benchmark document shows them.

Runs `powerctl simulate -o json` on the demo and on each data/specpower/*.yaml snapshot at the
given prediction errors, seeds 1..N, loads 25/50/75 %, and prints one Markdown table per
snapshot: mean watts per scorer and the lower bound, and powerctl's saving against the
default scheduler and PEAKS and its distance to the bound.

  /usr/bin/python3 tests/bench/placement_table.py [--binary build/powerctl] [--seeds 5]
      [--errors 0,10,25] [--idle-off] [--max-pods N] [--set KEY=VALUE ...]

--max-pods N gives every node of every snapshot N pod slots (kubelet's maxPods; 110 is its
default), to see placement where many-core nodes run out of pod slots before their cores.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(binary, snapshot, error, seeds, idle_off, config):
    cmd = [binary, "simulate", "--seeds", str(seeds), "--load", "25,50,75",
           "--prediction-error", str(error), "-o", "json"]
    if snapshot != "demo":
        cmd += ["--cluster", snapshot]
    if idle_off:
        cmd.append("--idle-off")
    if config:
        cmd += ["-c", config]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "powerctl"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--errors", default="0,10,25")
    parser.add_argument("--idle-off", action="store_true")
    parser.add_argument("--max-pods", type=int, help="pod slots of every node (kubelet maxPods)")
    parser.add_argument("--set", action="append", default=[],
                        help="powerctl.yaml key=value for the run, e.g. scoring.objective=marginal")
    args = parser.parse_args()
    config = None
    if args.set:
        lines = ["apiVersion: powerctl.io/v1alpha1", "kind: PowerctlConfig"]
        tree = {}
        for item in args.set:
            key, value = item.split("=", 1)
            section, field = key.split(".", 1)
            tree.setdefault(section, []).append(f"  {field}: {value}")
        for section, fields in tree.items():
            lines.append(f"{section}:")
            lines.extend(fields)
        handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        handle.write("\n".join(lines) + "\n")
        handle.close()
        config = handle.name
    snapshots = ["demo"] + sorted(
        os.path.join("data", "specpower", f) for f in os.listdir(os.path.join(ROOT, "data", "specpower"))
        if f.endswith(".yaml"))
    os.chdir(ROOT)
    temporary = []
    for snapshot in snapshots:
        title = snapshot
        if args.max_pods:
            source = os.path.join("data", "demo-snapshot.yaml") if snapshot == "demo" else snapshot
            with open(source) as f:
                text = re.sub(r"(?m)^(\s+)pods: \d+$", rf"\g<1>pods: {args.max_pods}", f.read())
            handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
            handle.write(text)
            handle.close()
            temporary.append(handle.name)
            snapshot = handle.name
            title += f", {args.max_pods} pod slots per node"
        print(f"\n#### {title}{' (idle nodes off)' if args.idle_off else ''}\n")
        print("| error | load | powerctl | default | minimizepower | peaks | bound "
              "| vs default | vs PEAKS | above bound |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for error in args.errors.split(","):
            doc = run(args.binary, snapshot, error, args.seeds, args.idle_off, config)
            by = {s["scorer"]: s for s in doc["summary"]}
            for i, bound in enumerate(doc["lowerBound"]):
                def watts(name):
                    w = by[name]["loads"][i]["meanWatts"]
                    return "-" if w is None else f"{w:.0f}"
                p = by["powerctl"]["loads"][i]
                print(f"| {error} % | {bound['loadPercent']:g} % | {watts('powerctl')} | {watts('default')} "
                      f"| {watts('minimizepower')} | {watts('peaks')} | {bound['meanWatts']:.0f} "
                      f"| {by['default']['loads'][i]['powerctlSavingPercent']:+.1f} % "
                      f"| {by['peaks']['loads'][i]['powerctlSavingPercent']:+.1f} % "
                      f"| {p['aboveBoundPercent']:+.1f} % |")
                left = {name: by[name]["loads"][i].get("meanUnscheduled", 0) for name in by}
                if any(left.values()):
                    print(f"| | | pods left unscheduled (mean): " + ", ".join(
                        f"{name} {count:g}" for name, count in left.items() if count) + " |")
    if config:
        os.unlink(config)
    for name in temporary:
        os.unlink(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
