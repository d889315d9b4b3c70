#pragma once
// The cluster a simulation runs on: nodes with their allocatable resources, labels and
// annotations (the power model's inputs, exactly as on a Node object), temperatures, the CPU
// existing pods use, and optionally a measured power curve (SPECpower-style watts at 0%,
// 10%, ..., 100% load) that stands for the node's true power. Read from YAML or JSON
// (data/demo-snapshot.yaml shows the format); `simulate --export-snapshot` writes the same.

#include "core/common/result.h"
#include "core/common/yaml.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::simulate {

inline constexpr const char* kSnapshotKind = "ClusterSnapshot";
inline constexpr const char* kSnapshotApiVersion = "powerctl.io/v1alpha1";
inline constexpr std::size_t kCurvePoints = 11;  // 0%, 10%, ..., 100% load

// A pod as the scheduler sees it: a v1 Pod object (metadata, spec.containers' resources).
struct SimPod {
  std::string name;
  nlohmann::json object;
};

struct SimNode {
  std::string name;
  double cpu_cores = 0;     // allocatable (also capacity: simulated nodes reserve nothing)
  double memory_bytes = 0;  // allocatable
  int max_pods = 110;       // status.allocatable.pods
  std::map<std::string, std::string> labels;       // temperature ranges, model labels
  std::map<std::string, std::string> annotations;  // built-in model parameters
  std::optional<double> ambient, cpu1, cpu2;       // degrees Celsius
  std::vector<double> power_curve;  // empty, or kCurvePoints watts: the node's true power
  std::optional<double> cpu_used;   // cores in use; default: existing pods' CPU requests
  std::vector<SimPod> pods;         // already running there
};

struct Snapshot {
  std::string source;  // file name, or "demo"
  std::vector<SimNode> nodes;
  // podDisruptionBudgets: PodDisruptionBudget objects (consolidate respects them).
  std::vector<nlohmann::json> disruption_budgets;
};

// simulate's input files are the user's own and can describe a whole large cluster (a 5,000-
// node, 150,000-pod export is about 40 MiB), so they are bounded by their size, not by the
// fixed limits that protect the servers from hostile input (YamlLimits' defaults: 8 MiB,
// 200,000 YAML nodes): at most kMaxInputFileBytes, and as many YAML nodes, aliases expanded,
// as text of the file's size can hold without aliases.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;
YamlLimits InputFileYamlLimits(std::size_t file_bytes);

// The text of a snapshot or workload file, refused above kMaxInputFileBytes (read in chunks,
// so a file too large, or a device that never ends, is told without reading all of it).
// Errors name `flag` and the path: kInvalidInput (cannot open, too large), kIo (read error).
Result<std::string> ReadInputFile(const std::string& path, std::string_view flag);

// Parses a snapshot. Errors are kInvalidInput and name `source_name`, and the line of the
// offending node where it can be found ("demo.yaml:42: node \"a\": cpu: ...").
Result<Snapshot> ParseSnapshot(std::string_view text, std::string_view source_name);

// The bundled demo (data/demo-snapshot.yaml, compiled into the binary).
std::string_view DemoSnapshotYaml();
Result<Snapshot> DemoSnapshot();

// A pod object from the shorthand the snapshot and workload files use:
// {name, cpu, memory} or {name, containers: [{name?, cpu, memory}, ...]}, and optionally what
// consolidate reads: namespace, labels, annotations, owner (the kind of its controller, e.g.
// ReplicaSet or DaemonSet) and volumes (v1 Volume objects). `where` prefixes errors.
Result<SimPod> ParsePodShorthand(const nlohmann::json& entry, const std::string& where);

// The snapshot as a document ParseSnapshot reads back.
nlohmann::ordered_json SnapshotDocument(const Snapshot& snapshot);

// The 1-based line of the first line of `text` containing `needle`, or 0.
int LineOf(std::string_view text, std::string_view needle);

}  // namespace powerctl::simulate
