#include "core/scoring/power_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::scoring {
namespace {

constexpr double kEqualWatts = 1e-6;

std::string Watts(double w) {
  return fmt::format("{:+.1f} W", w);
}

}  // namespace

std::vector<PowerScore> ScorePower(const std::vector<predict::NodePower>& nodes,
                                   const manifests::ScoringSettings& settings) {
  std::vector<PowerScore> out(nodes.size());
  std::vector<double> counted(nodes.size(), 0.0);
  std::vector<bool> ranked(nodes.size(), false);
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  std::size_t ranked_count = 0;

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const predict::NodePower& n = nodes[i];
    PowerScore& s = out[i];
    s.node = n.node;
    s.component.name = std::string(kPower);
    std::optional<double> delta = n.delta();
    if (delta && std::isfinite(*delta)) s.delta_watts = delta;
    if (n.overcommitted) {
      s.known = true;
      s.component.value = 0;
      s.component.reason = "overcommitted: node CPU usage plus the pod's CPU exceeds capacity";
      continue;
    }
    if (!s.delta_watts) {
      s.component.value = std::clamp<double>(settings.unknown_score, 0.0, kMaxComponentValue);
      s.component.reason = !n.error.empty() ? n.error
                           : delta          ? "model returned a non-finite value"
                                            : "no prediction";
      continue;
    }
    s.known = true;
    ranked[i] = true;
    ++ranked_count;
    counted[i] = std::max(0.0, *s.delta_watts);
    lowest = std::min(lowest, counted[i]);
    highest = std::max(highest, counted[i]);
  }

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!ranked[i]) continue;
    PowerScore& s = out[i];
    s.component.value = InverseMinMax(counted[i], lowest, highest, kEqualWatts);
    std::string reason = Watts(*s.delta_watts);
    if (*s.delta_watts < 0) reason += " (a decrease, counted as +0.0 W)";
    if (ranked_count == 1) {
      reason += " (the only node with a prediction)";
    } else if (!(highest - lowest > kEqualWatts)) {
      reason += " (all nodes equal)";
    } else {
      reason += fmt::format(" (lowest {}, highest {})", Watts(lowest), Watts(highest));
    }
    s.component.reason = std::move(reason);
  }
  return out;
}

double PodPowerCpuCores(const PodResources& pod, std::string* note) {
  if (pod.cpu_unspecified) {
    if (note != nullptr) {
      *note = fmt::format(
          "the pod sets no CPU request or limit; using the scheduler's default of {}m per "
          "container ({}m)",
          kDefaultMilliCpuRequest, pod.cpu_request_nonzero_millis);
    }
    return static_cast<double>(pod.cpu_request_nonzero_millis) / 1000.0;
  }
  return pod.cpu_request_cores();
}

}  // namespace powerctl::scoring
