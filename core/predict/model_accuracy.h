#pragma once
// How far the power model is from the watts the nodes really draw: each node's prediction now
// (at its current CPU usage) against its measured power (telemetry.powerSource over
// telemetry.powerRateWindow), and a summary of the cluster. The extender exports it on
// /metrics, `doctor` judges it (model-accuracy), `explain pod` shows it for the chosen node.
// Pure: the caller predicts and measures.
//
// The measured power is the mean of a window and the prediction uses the CPU of the last
// telemetry refresh, so a node whose load just changed shows an error it does not have: the
// summary is meant to be read over time, and thresholds set above a few per cent.

#include "core/predict/node_power.h"
#include "core/telemetry/power_sources.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::predict {

struct NodeAccuracy {
  std::string node;
  double predicted_watts = 0;
  double measured_watts = 0;
  double error_watts = 0;     // predicted - measured: positive when the model reads high
  double relative_error = 0;  // |error_watts| / measured_watts (a fraction, 0.3 = 30 %)
};

// A node that could not be compared, and why (no prediction, no measurement).
struct NodeNotCompared {
  std::string node;
  std::string reason;
};

struct ModelAccuracy {
  std::vector<NodeAccuracy> nodes;            // largest relative error first, then by name
  std::vector<NodeNotCompared> not_compared;  // by name
  // Over `nodes`; nullopt when none could be compared.
  std::optional<double> mean_absolute_percentage_error;  // mean relative_error, as a fraction
  std::optional<double> mean_absolute_error_watts;

  const NodeAccuracy* Worst() const { return nodes.empty() ? nullptr : &nodes.front(); }
  const NodeAccuracy* Find(const std::string& node) const;
};

// Compares each node of `predicted` that has watts_now with its entry in `measured`. A
// measured power of zero is not compared (a relative error is undefined; an unpowered or
// unmeasured node reads zero on some exporters).
ModelAccuracy CompareModel(const std::vector<NodePower>& predicted,
                           const std::map<std::string, telemetry::MeasuredPower>& measured);

// "node-b (+31%: 262 W predicted, 200 W measured)": for messages.
std::string DescribeNodeAccuracy(const NodeAccuracy& node);

// Which model predicts `node`'s power, in words: "built-in model, the node's measured curve",
// "built-in model, exponent form (idle 110 W, max 380 W, exponent 0.9)", or the model
// server's model and endpoint; what is wrong when it cannot be resolved.
std::string DescribeNodeModel(const NodeFacts& node, const config::PowerctlConfig& config);

}  // namespace powerctl::predict
