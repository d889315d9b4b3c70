#pragma once
// Power per node now and after adding some CPU: telemetry readings and the node's labels
// and annotations turned into model inputs, one batched prediction for every node (two rows
// each: now and after), and every step's reason kept for the output. Shared by
// `powerctl predict`, the extender's ops JSON and, later, scoring and `explain`, so they
// all show the same numbers.

#include "core/common/worker_pool.h"
#include "core/config/config.h"
#include "core/predict/predictor.h"
#include "core/telemetry/readings.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::predict {

// What a Node object says about its power model.
struct NodeFacts {
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};
NodeFacts NodeFactsFromJson(const nlohmann::json& node);

struct TemperatureRange {
  double min = 0;
  double max = 0;
};

// One temperature input: the reading, the node's labelled range and the normalised value
// (clamped to 0..1; MinimizePower does not clamp, see builtin_model.h). `note` says why
// `normalized` is missing.
struct ModelTemperature {
  telemetry::Reading reading;
  std::optional<TemperatureRange> range;
  std::optional<double> normalized;
  std::string note;
};

// The range from `<prefix>/min` and `<prefix>/max` labels (e.g. "ambient"): nullopt when
// either is missing; an error message when present but not decimal numbers with max > min.
std::optional<TemperatureRange> TemperatureRangeFromLabels(
    const std::map<std::string, std::string>& labels, const std::string& prefix,
    std::string* error);

// CPU requested by pods bound to a node that its usage metrics cannot show yet (just bound, or
// not started): added to the measured usage. Which pods count is the scoring's rule
// (scoring/node_cpu.h); models only add the cores.
struct UnmeasuredCpu {
  double cores = 0;
  int pods = 0;
};

struct NodePower {
  std::string node;
  telemetry::NodeReading reading;  // as read, staleness applied
  UnmeasuredCpu unmeasured;        // added to reading.cpu_cores_used (fractions include it)
  std::optional<double> cpu_fraction_now;
  std::optional<double> cpu_fraction_after;
  bool overcommitted = false;  // usage + the added CPU exceeds capacity
  ModelTemperature ambient, cpu1, cpu2;
  ModelEndpoint model;
  std::optional<double> watts_now;
  std::optional<double> watts_after;
  std::string error;                                       // why there are no watts: stable wording
  std::vector<std::string> notes;                          // caveats of a prediction that was made
  std::optional<std::chrono::milliseconds> telemetry_age;  // of the oldest input used

  std::optional<double> delta() const {
    if (!watts_now || !watts_after) return std::nullopt;
    return *watts_after - *watts_now;
  }
  // The CPU the prediction counts as in use: measured plus unmeasured; nullopt when unmeasured.
  std::optional<double> cpu_cores_used() const {
    if (!reading.cpu_cores_used.value) return std::nullopt;
    return *reading.cpu_cores_used.value + unmeasured.cores;
  }

  // What `predict` shows beyond the watts (set with PowerQuery::fill_cost):
  // the built-in model's parameters (its measured curve, or idle, max and exponent) when the
  // node's model is the built-in one, and the fill cost of adding the CPU in W per core, the
  // number the fill objective ranks nodes by.
  std::optional<BuiltinParams> builtin;
  std::optional<double> fill_watts_per_core;
};

// A temperature input as prepared: the labelled range and the normalised value, without the
// reading itself (the PreparedNode's `reading` holds it once; at 5,000 nodes a second copy
// of each was 2.5 MiB).
struct PreparedTemperature {
  std::optional<TemperatureRange> range;
  std::optional<double> normalized;
  std::string note;
};

// Everything about one node's prediction that does not depend on the CPU being added: the
// reading, the model, its parameters and the normalised temperatures. The extender prepares
// a node once per change of its Node object or of telemetry and reuses it for every pod.
struct PreparedNode {
  std::string node;
  telemetry::NodeReading reading;              // as read, staleness applied
  PreparedTemperature ambient, cpu1, cpu2;     // of reading.ambient, reading.cpu1, reading.cpu2
  std::shared_ptr<const ModelEndpoint> model;  // null when it cannot be resolved (see error)
  BuiltinParams builtin;
  ModelInputs inputs;              // temperatures set; the CPU fraction is per query
  std::string error;               // set when the node cannot be predicted at all
  std::vector<std::string> notes;  // caveats of any prediction made from it
  std::optional<std::chrono::milliseconds> telemetry_age;  // as of preparation
};
// `usual_model`, when given, is the endpoint most nodes resolve to (the configuration's
// default): a node whose endpoint equals it shares it instead of holding a copy (168 bytes
// and an allocation per node).
PreparedNode PrepareNode(const NodeFacts& node, telemetry::NodeReading reading,
                         const config::PowerctlConfig& config, telemetry::SteadyTime now,
                         const std::shared_ptr<const ModelEndpoint>& usual_model = nullptr);

// What one query predicts for a prepared node: the scoring path needs no more.
struct PowerEstimate {
  std::optional<double> cpu_fraction_now;
  std::optional<double> cpu_fraction_after;
  bool overcommitted = false;
  std::optional<double> watts_now;
  std::optional<double> watts_after;
  // Asked for (fill_cost): the cheapest average watts per core of raising the node's load
  // from now to `after` or beyond, as far as it can be filled (the slope of its lower convex
  // hull from where it stands).
  std::optional<double> fill_watts_per_core;
  // How much fill_watts_per_core was raised for the pod slot the pod takes (1: not at all);
  // set by the scoring's pod-slot rule, which the reason shows.
  double fill_slot_factor = 1.0;
  std::string error;  // why there are no watts (the prepared error, or the model's)

  std::optional<double> delta() const {
    if (!watts_now || !watts_after) return std::nullopt;
    return *watts_after - *watts_now;
  }
};

// One estimate per node, in order, from one batched prediction. `unseen_cpu[i]` (cores) is
// added to node i's measured usage: CPU of pods the usage metrics cannot show yet; empty
// means none. Rows are built and read back on `pool`'s threads, when given, for large
// inputs; the predictor is called once. With `fill_cost`, each estimate also gets
// fill_watts_per_core: exact for the built-in model, from one more row per node (the highest
// load it can reach) for a model server. `fill_reachable_cpu[i]` (cores) caps how far node i
// can still be filled (e.g. its free pod slots times the pod's CPU); absent or infinite: to
// its capacity.
// The highest load fraction filling a node can reach, as EstimatePower computes it: `reachable`
// cores above `used` cores, of `capacity` (infinite: 1). An estimate depends on its reachable
// CPU through this number only (and, with the pod-slot share, through whether it is below the
// node's free CPU).
double FillLimitFraction(double used, double capacity, double reachable);

std::vector<PowerEstimate> EstimatePower(const std::vector<const PreparedNode*>& nodes,
                                         const std::vector<double>& unseen_cpu,
                                         double extra_cpu_cores, Predictor& predictor,
                                         std::chrono::milliseconds deadline,
                                         WorkerPool* pool = nullptr, bool fill_cost = false,
                                         const std::vector<double>& fill_reachable_cpu = {});

struct PowerQuery {
  double extra_cpu_cores = 1.0;  // the CPU added for watts_after
  std::chrono::milliseconds deadline{1000};
  telemetry::SteadyTime now{};  // for telemetry ages
  // Also each node's fill cost and built-in model (NodePower::fill_watts_per_core, builtin):
  // what `predict` shows; one more row per node on a model server.
  bool fill_cost = false;
  // By node of the call's `nodes`: CPU of pods the usage metrics cannot show yet, added to
  // the measured usage as scoring adds it (scoring::UnmeasuredCpuOf). Empty: none.
  std::vector<UnmeasuredCpu> unmeasured;
};

// One result per node of `nodes`, in order. Readings missing from `readings` count as "no
// telemetry". Nodes that lack usable inputs get an error and are not sent to the model.
// Temperatures: model servers need all three normalised inputs; the built-in model treats a
// missing one as nominal (0) and says so in `notes`.
std::vector<NodePower> PredictNodePower(
    const std::vector<NodeFacts>& nodes,
    const std::map<std::string, telemetry::NodeReading>& readings,
    const config::PowerctlConfig& config, Predictor& predictor, const PowerQuery& query);

// PredictNodePower, plus what `predict` shows of each node's model: the built-in model's
// parameters and the fill cost of adding query.extra_cpu_cores (NodePower::builtin and
// fill_watts_per_core). The fill cost comes from EstimatePower with fill_cost, the estimate the
// power score ranks by, so `predict` and `score` show the same number (one more row per node on
// a model server). `predict --source local` and the extender's GET /v1/predictions both answer
// with this, so both sources show the same.
std::vector<NodePower> PredictNodePowerWithFill(
    const std::vector<NodeFacts>& nodes,
    const std::map<std::string, telemetry::NodeReading>& readings,
    const config::PowerctlConfig& config, Predictor& predictor, PowerQuery query);

}  // namespace powerctl::predict
