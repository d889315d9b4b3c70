#pragma once
// `powerctl label nodes`: MinimizePower's temperature-range and model labels, the
// built-in model's per-node annotations, and temperature ranges derived from Prometheus.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/apply.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  std::vector<std::string> nodes;                  // by name, or:
  std::string selector;                            // -l
  bool all = false;                                // --all
  std::optional<std::string> ambient, cpu1, cpu2;  // "MIN:MAX" in degrees Celsius
  std::optional<std::string> model_host, model_port, model_name, model_version, model_signature;
  // The built-in model's parameters (predict/node_params.h annotations), plain decimal text.
  std::optional<std::string> idle_watts, max_watts, curve, temperature_factor;
  // The node's measured curve, "W0,W10,...,W100" (predict::ParsePowerCurve): replaces idle,
  // max and curve, so it does not go with --idle-watts, --max-watts or --curve.
  std::optional<std::string> power_curve;
  // --from-prometheus: ambient/cpu1/cpu2 from each node's min/max over `window`.
  bool from_prometheus = false;
  std::chrono::seconds window{std::chrono::hours(24 * 7)};
  bool skip_missing = false;  // leave nodes without history alone instead of failing
  config::SensorNames sensors;
  telemetry::NodeMappingOptions mapping;
  bool overwrite = false;
  DryRunMode dry_run = DryRunMode::kNone;
};

struct NodeChanges {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// Validates the request and returns what every selected node gets (derived ranges come
// later, per node). Pure: no cluster access.
Result<NodeChanges> DesiredNodeChanges(const LabelNodesRequest& request);
// The labels part of DesiredNodeChanges.
Result<std::map<std::string, std::string>> DesiredNodeLabels(const LabelNodesRequest& request);

// The nodes named (all must exist: a missing one is kNotFound naming it), matching
// `selector`, or all of them (`all`); never empty. Exactly one of the three ways is expected.
Result<std::vector<nlohmann::json>> SelectNodes(kube::Client& client,
                                                const std::vector<std::string>& names,
                                                const std::string& selector, bool all);

// A temperature range derived by --from-prometheus.
struct DerivedRange {
  std::string role;    // ambient | cpu1 | cpu2
  std::string sensor;  // the ipmi sensor name used
  double observed_min = 0, observed_max = 0;
  long samples = 0;
  std::string range;  // the label values written, "18:35"
};

struct NodeLabelResult {
  std::string node;
  bool changed = false;
  std::vector<std::string> keys_changed;
  std::vector<DerivedRange> derived;
  std::string skipped;  // why the node was left alone (--skip-missing); "" otherwise
  // A caveat the caller should show (e.g. idle/max/curve set on a node whose power curve
  // overrides them); "" when there is none.
  std::string warning;
};

// Checks every selected node first (exists, history when --from-prometheus, the built-in
// parameters valid together with the node's other annotations, no conflicting value without
// --overwrite, permission to patch) and only then patches them: no node is touched if any
// check fails. `prometheus` is required for request.from_prometheus and unused otherwise.
Result<std::vector<NodeLabelResult>> LabelNodes(
    kube::Client& client, const LabelNodesRequest& request,
    const telemetry::PrometheusClient* prometheus = nullptr);

}  // namespace powerctl::setup
