"""The layers of core/ point one way (ARCHITECTURE.md, "Layers"): each directory of core/ includes
only the directories this table allows it, the table has no cycle, a new directory must be placed
in it, ARCHITECTURE.md shows the same table, and nothing in core/ includes cli/ or tests/."""
import glob
import os
import re
import unittest

ROOT = os.environ.get("POWERCTL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Each room of core/ and the rooms it may include, lowest first. A room may always include its
# own headers.
ALLOWED = {
    "common": set(),
    "config": {"common"},
    "kube": {"common"},
    "server": {"common"},
    "telemetry": {"common", "config", "kube"},
    "predict": {"common", "config", "telemetry"},
    "manifests": {"common", "config"},
    "cluster": {"common", "config", "kube", "telemetry", "predict"},
    "scoring": {"common", "config", "kube", "telemetry", "predict", "cluster"},
    "report": {"common", "config", "kube", "telemetry", "predict", "cluster", "scoring"},
    "consolidate": {"common", "config", "kube", "server", "telemetry", "predict", "cluster",
                    "scoring"},
    "simulate": {"common", "config", "kube", "telemetry", "predict", "cluster", "scoring",
                 "consolidate"},
    "lb": {"common", "config", "kube", "server", "telemetry", "predict", "cluster", "report"},
    "extender": {"common", "config", "kube", "server", "telemetry", "predict", "cluster",
                 "scoring"},
    "setup": {"common", "config", "kube", "telemetry", "predict", "manifests", "lb", "consolidate"},
    "explain": {"common", "config", "kube", "telemetry", "predict", "cluster", "scoring", "report",
                "extender", "setup", "consolidate"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def core_sources():
    for path in sorted(glob.glob(os.path.join(ROOT, "core", "**", "*"), recursive=True)):
        if path.endswith((".h", ".cpp")):
            yield os.path.relpath(path, ROOT)


def includes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def violations(sources):
    """One line per include that breaks ALLOWED, for (path under core/, its includes) pairs."""
    found = []
    for path, headers in sources:
        room = path.split(os.sep)[1]
        for header in headers:
            parts = header.split("/")
            if parts[0] in ("cli", "tests"):
                found.append(f"{path}: includes {header} (core never includes {parts[0]}/)")
            elif parts[0] == "core" and len(parts) >= 3:
                target = parts[1]
                if target != room and target not in ALLOWED.get(room, set()):
                    found.append(f"{path}: includes {header} ({room} may not use {target})")
    return found


class LayersTest(unittest.TestCase):
    def test_every_room_of_core_is_placed(self):
        rooms = {os.path.basename(d) for d in glob.glob(os.path.join(ROOT, "core", "*"))
                 if os.path.isdir(d)}
        self.assertEqual(rooms - set(ALLOWED), set(), "rooms missing from ALLOWED")
        self.assertEqual(set(ALLOWED) - rooms, set(), "ALLOWED names rooms that do not exist")

    def test_architecture_shows_the_same_table(self):
        with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
            text = f.read()
        block = text.split("## Layers", 1)[1].split("```", 2)[1]
        shown = {}
        for line in block.strip().splitlines():
            rooms, _, lower = line.partition("->")
            lower = lower.split("(")[0]  # a trailing remark in parentheses
            for room in rooms.split(","):
                shown[room.strip()] = {name.strip() for name in lower.split(",") if name.strip()}
        expected = {room: lower for room, lower in ALLOWED.items() if lower}
        self.assertEqual(shown, expected)

    def test_the_table_has_no_cycle(self):
        done, visiting = set(), []

        def visit(room):
            if room in done:
                return
            self.assertNotIn(room, visiting, "cycle: " + " -> ".join(visiting + [room]))
            visiting.append(room)
            for lower in sorted(ALLOWED[room]):
                visit(lower)
            visiting.pop()
            done.add(room)

        for room in sorted(ALLOWED):
            visit(room)

    def test_core_includes_only_lower_layers(self):
        found = violations((path, includes(path)) for path in core_sources())
        self.assertEqual(found, [], "\n".join(found))

    def test_the_check_rejects_an_include_of_a_higher_layer(self):
        sources = [(os.path.join("core", "cluster", "x.cpp"),
                    ["core/cluster/pod_info.h", "core/kube/client.h", "core/scoring/decision.h"]),
                   (os.path.join("core", "predict", "y.h"), ["cli/context.h", "core/kube/client.h"])]
        self.assertEqual(len(violations(sources)), 3, violations(sources))

if __name__ == "__main__":
    unittest.main()
