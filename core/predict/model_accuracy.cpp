// Predicted against measured watts, per node and for the cluster.

#include "core/predict/model_accuracy.h"

#include "core/predict/node_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace powerctl::predict {

const NodeAccuracy* ModelAccuracy::Find(const std::string& node) const {
  auto it = std::find_if(nodes.begin(), nodes.end(),
                         [&](const NodeAccuracy& n) { return n.node == node; });
  return it == nodes.end() ? nullptr : &*it;
}

ModelAccuracy CompareModel(const std::vector<NodePower>& predicted,
                           const std::map<std::string, telemetry::MeasuredPower>& measured) {
  ModelAccuracy out;
  for (const NodePower& p : predicted) {
    auto m = measured.find(p.node);
    if (!p.watts_now || !std::isfinite(*p.watts_now)) {
      out.not_compared.push_back(
          {p.node, p.error.empty() ? "no prediction" : "no prediction: " + p.error});
    } else if (m == measured.end()) {
      out.not_compared.push_back({p.node, "not measured"});
    } else if (!m->second.watts || !std::isfinite(*m->second.watts)) {
      out.not_compared.push_back(
          {p.node, m->second.missing_reason.empty() ? "no measurement" : m->second.missing_reason});
    } else if (*m->second.watts <= 0) {
      out.not_compared.push_back({p.node, "the measured power is 0 W"});
    } else {
      NodeAccuracy a;
      a.node = p.node;
      a.predicted_watts = *p.watts_now;
      a.measured_watts = *m->second.watts;
      a.error_watts = a.predicted_watts - a.measured_watts;
      a.relative_error = std::abs(a.error_watts) / a.measured_watts;
      out.nodes.push_back(std::move(a));
    }
  }
  std::sort(out.nodes.begin(), out.nodes.end(), [](const NodeAccuracy& a, const NodeAccuracy& b) {
    if (a.relative_error != b.relative_error) return a.relative_error > b.relative_error;
    return a.node < b.node;
  });
  std::sort(out.not_compared.begin(), out.not_compared.end(),
            [](const NodeNotCompared& a, const NodeNotCompared& b) { return a.node < b.node; });
  if (!out.nodes.empty()) {
    double relative = 0, watts = 0;
    for (const NodeAccuracy& a : out.nodes) {
      relative += a.relative_error;
      watts += std::abs(a.error_watts);
    }
    const auto n = static_cast<double>(out.nodes.size());
    out.mean_absolute_percentage_error = relative / n;
    out.mean_absolute_error_watts = watts / n;
  }
  return out;
}

std::string DescribeNodeAccuracy(const NodeAccuracy& node) {
  return fmt::format("{} ({}{:.0f}%: {:.0f} W predicted, {:.0f} W measured)", node.node,
                     node.error_watts >= 0 ? "+" : "-", node.relative_error * 100,
                     node.predicted_watts, node.measured_watts);
}

std::string DescribeNodeModel(const NodeFacts& node, const config::PowerctlConfig& config) {
  auto endpoint = ModelEndpointForNode(node.labels, config);
  if (!endpoint.ok()) return "no model: " + endpoint.error().message;
  if (endpoint->backend != "builtin") {
    return fmt::format("{} model {}{} at {}:{}", endpoint->backend, endpoint->name,
                       endpoint->version.empty() ? "" : "@" + endpoint->version, endpoint->host,
                       endpoint->port);
  }
  auto params = BuiltinParamsFromAnnotations(node.annotations);
  if (!params.ok()) return "built-in model, not usable: " + params.error().message;
  if (params->points != nullptr) return "built-in model, the node's measured curve";
  return fmt::format("built-in model, exponent form (idle {:g} W, max {:g} W, exponent {:g})",
                     params->idle_watts, params->max_watts, params->curve);
}

}  // namespace powerctl::predict
