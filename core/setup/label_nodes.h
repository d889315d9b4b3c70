#pragma once
// `powerctl label nodes`: the seed-compatible temperature-range and model labels.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/kube/client.h"
#include "core/setup/apply.h"

namespace powerctl::setup {

// The label keys, exactly as the MinimizePower plugin reads them.
inline constexpr const char* kAmbientMax = "ambient/max";
inline constexpr const char* kAmbientMin = "ambient/min";
inline constexpr const char* kCpu1Max = "cpu1/max";
inline constexpr const char* kCpu1Min = "cpu1/min";
inline constexpr const char* kCpu2Max = "cpu2/max";
inline constexpr const char* kCpu2Min = "cpu2/min";
inline constexpr const char* kModelHost = "tensorflow/host";
inline constexpr const char* kModelPort = "tensorflow/port";
inline constexpr const char* kModelName = "tensorflow/name";
inline constexpr const char* kModelVersion = "tensorflow/version";
inline constexpr const char* kModelSignature = "tensorflow/signature";

struct LabelNodesRequest {
  std::vector<std::string> nodes;  // by name, or:
  std::string selector;            // -l
  bool all = false;                // --all
  std::optional<std::string> ambient, cpu1, cpu2;  // "MIN:MAX" in degrees Celsius
  std::optional<std::string> model_host, model_port, model_name, model_version, model_signature;
  bool overwrite = false;
  DryRunMode dry_run = DryRunMode::kNone;
};

// Validates the request and returns the labels to set. Pure: no cluster access.
Result<std::map<std::string, std::string>> DesiredNodeLabels(const LabelNodesRequest& request);

struct NodeLabelResult {
  std::string node;
  bool changed = false;
  std::vector<std::string> keys_changed;
};

// Checks every selected node first (exists, no conflicting value without --overwrite,
// permission to patch) and only then patches them: no node is touched if any check fails.
Result<std::vector<NodeLabelResult>> LabelNodes(kube::Client& client, const LabelNodesRequest& request);

}  // namespace powerctl::setup
