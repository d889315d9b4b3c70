#!/usr/bin/env python3
"""A large cluster snapshot for `powerctl simulate`: a bundled snapshot's nodes repeated.

Writes a ClusterSnapshot of NODES nodes made by cycling through the nodes of SOURCE
(data/specpower/mixed-generations.yaml by default: 9 server generations, 2008-2021), each copy
renamed with a "-rN" suffix (its pods too), so the fleet keeps the source's mix of
generations. This is the snapshot docs/benchmarks.md times simulate on:

  /usr/bin/python3 tests/bench/big_snapshot.py --nodes 5000 > /tmp/big.yaml
  /usr/bin/time -v build/powerctl simulate --cluster /tmp/big.yaml --pods 50000 --seeds 1
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def node_blocks(text):
    """The text of each `  - name:` entry under `nodes:`, as written in the source."""
    body = text.split("\nnodes:\n", 1)[1]
    blocks, current = [], []
    for line in body.splitlines():
        if line.startswith("  - name: "):
            if current:
                blocks.append(current)
            current = [line]
        elif line.startswith("    ") and current:
            current.append(line)
        elif line.strip().startswith("#") or not line.strip():
            continue
        else:
            break  # the end of the node list
    if current:
        blocks.append(current)
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--source",
                        default=os.path.join(ROOT, "data", "specpower", "mixed-generations.yaml"))
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        blocks = node_blocks(f.read())
    out = sys.stdout
    out.write("apiVersion: powerctl.io/v1alpha1\nkind: ClusterSnapshot\n")
    out.write(f"# {args.nodes} nodes: {os.path.basename(args.source)}'s {len(blocks)} repeated\n")
    out.write("nodes:\n")
    for i in range(args.nodes):
        block = blocks[i % len(blocks)]
        name = re.match(r"  - name: (\S+)", block[0]).group(1)
        renamed = f"{name}-r{i // len(blocks)}"
        for line in block:
            out.write(re.sub(re.escape(name) + r"\b", renamed, line) + "\n")


if __name__ == "__main__":
    main()
