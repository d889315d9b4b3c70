"""powerctl consolidate plan --cluster as a user runs it: the table, JSON, and the rules that
keep a node on."""
import json

from support import TempDirTest, run

# Two costly old nodes with a little work each, one efficient node with room; a node whose pod
# has no controller, and one whose pod a PodDisruptionBudget protects.
SNAPSHOT = """kind: ClusterSnapshot
nodes:
- name: efficient
  cpu: 32
  memory: 128Gi
  powerCurve: [60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160]
  existingPods:
  - {name: node-exporter, cpu: 100m, owner: DaemonSet}
- name: old-1
  cpu: 8
  memory: 32Gi
  powerCurve: [150, 170, 190, 210, 230, 250, 270, 290, 310, 330, 350]
  existingPods:
  - {name: web-1, namespace: shop, cpu: 1, owner: ReplicaSet, labels: {app: web}}
  - {name: node-exporter-2, cpu: 100m, owner: DaemonSet}
- name: old-2
  cpu: 8
  memory: 32Gi
  powerCurve: [140, 160, 180, 200, 220, 240, 260, 280, 300, 320, 340]
  existingPods:
  - {name: batch-1, cpu: 4, owner: Job}
- name: pinned
  cpu: 8
  memory: 32Gi
  powerCurve: [150, 170, 190, 210, 230, 250, 270, 290, 310, 330, 350]
  existingPods:
  - {name: bare, cpu: 1}
- name: guarded
  cpu: 8
  memory: 32Gi
  powerCurve: [150, 170, 190, 210, 230, 250, 270, 290, 310, 330, 350]
  existingPods:
  - {name: db-0, namespace: shop, cpu: 1, owner: StatefulSet, labels: {app: db}}
podDisruptionBudgets:
- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata: {name: db, namespace: shop}
  spec: {selector: {matchLabels: {app: db}}}
  status: {disruptionsAllowed: 0}
"""


class ConsolidatePlanTest(TempDirTest):
    def plan(self, *args):
        r = run("consolidate", "plan", "--cluster", self.write("c.yaml", SNAPSHOT), *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_the_table_names_drained_nodes_and_why_others_stay(self):
        r = self.plan()
        for column in ("NODE", "PODS TO MOVE", "WATTS NOW", "WATTS SAVED", "WHY NOT"):
            self.assertIn(column, r.stdout)
        self.assertIn("not owned by a controller", r.stdout)
        self.assertIn("PodDisruptionBudget shop/db", r.stdout)
        self.assertIn("shop/web-1 -> efficient", r.stdout)

    def test_json_plan(self):
        doc = json.loads(self.plan("-o", "json").stdout)
        nodes = {n["node"]: n for n in doc["nodes"]}
        self.assertTrue(nodes["old-1"]["drain"])
        self.assertTrue(nodes["old-2"]["drain"])
        self.assertEqual(nodes["old-1"]["moves"], [{"pod": "shop/web-1", "to": "efficient"}])
        self.assertEqual(nodes["old-1"]["stayingPods"], 1)
        self.assertFalse(nodes["pinned"]["drain"])
        self.assertFalse(nodes["guarded"]["drain"])
        self.assertFalse(nodes["efficient"]["drain"])
        self.assertIn("receives pods", nodes["efficient"]["reason"])
        self.assertEqual(doc["drained"], 2)
        self.assertLess(doc["wattsAfter"], doc["wattsBefore"])
        self.assertEqual(doc["headroomPercent"], 20)

    def test_max_nodes_exclude_and_selector(self):
        doc = json.loads(self.plan("-o", "json", "--max-nodes", "1").stdout)
        self.assertEqual(doc["drained"], 1)
        doc = json.loads(self.plan("-o", "json", "--exclude", "old-1,old-2").stdout)
        # Left with only its DaemonSet pod and receiving nothing, efficient can go off.
        self.assertEqual([n["node"] for n in doc["nodes"] if n["drain"]], ["efficient"])
        reasons = {n["node"]: n.get("reason") for n in doc["nodes"]}
        self.assertEqual(reasons["old-1"], "excluded (--exclude)")
        doc = json.loads(self.plan("-o", "json", "-l", "missing-label").stdout)
        self.assertEqual(doc["drained"], 0)
        self.assertEqual({n["reason"] for n in doc["nodes"]}, {"not selected (-l)"})

    def test_headroom_setting(self):
        # With 90 % of every node's CPU kept free, batch-1 (4 cores) fits nowhere.
        r = run("consolidate", "plan", "--cluster", self.write("c.yaml", SNAPSHOT),
                "--set", "consolidate.headroom=0.9", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        nodes = {n["node"]: n for n in doc["nodes"]}
        self.assertFalse(nodes["old-2"]["drain"])
        self.assertIn("headroom", nodes["old-2"]["reason"])

    def test_bad_flags_are_usage_errors(self):
        r = run("consolidate", "plan", "--cluster", self.write("c.yaml", SNAPSHOT),
                "--max-nodes", "0")
        self.assertEqual(r.returncode, 2, r.stderr)
        r = run("consolidate", "plan", "--cluster", self.write("c.yaml", SNAPSHOT),
                "-l", "a in b")
        self.assertEqual(r.returncode, 2, r.stderr)
