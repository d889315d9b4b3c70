#include "core/scoring/real_usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::scoring {
namespace {

constexpr double kEqualFraction = 1e-9;

std::optional<double> Fraction(const std::optional<double>& used,
                               const std::optional<double>& allocatable) {
  if (!used || !allocatable || !std::isfinite(*used) || !std::isfinite(*allocatable)) {
    return std::nullopt;
  }
  if (*used < 0 || !(*allocatable > 0)) return std::nullopt;
  return *used / *allocatable;
}

std::string Percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

}  // namespace

std::vector<RealUsageScore> ScoreRealUsage(const std::vector<NodeUsage>& nodes,
                                           const config::ScoringSettings& settings) {
  std::vector<RealUsageScore> out(nodes.size());
  std::vector<std::string> detail(nodes.size());
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  std::size_t known = 0;

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeUsage& n = nodes[i];
    RealUsageScore& s = out[i];
    s.node = n.node;
    s.component.name = std::string(kRealUsage);
    auto memory = Fraction(n.memory_used_bytes, n.memory_allocatable_bytes);
    auto cpu = Fraction(n.cpu_used_cores, n.cpu_allocatable_cores);
    if (!memory && !cpu) {
      s.component.value = std::clamp<double>(settings.unknown_score, 0.0, kMaxComponentValue);
      s.component.reason =
          "no usage data" + (n.missing_reason.empty() ? "" : ": " + n.missing_reason);
      continue;
    }
    const double u = memory && cpu ? (*memory + *cpu) / 2.0 : memory ? *memory : *cpu;
    s.utilization = u;
    if (memory) detail[i] = "memory " + Percent(*memory);
    if (cpu) detail[i] += (detail[i].empty() ? "cpu " : ", cpu ") + Percent(*cpu);
    lowest = std::min(lowest, u);
    highest = std::max(highest, u);
    ++known;
  }

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    RealUsageScore& s = out[i];
    if (!s.utilization) continue;
    s.component.value = InverseMinMax(*s.utilization, lowest, highest, kEqualFraction);
    std::string reason = "used " + detail[i];
    if (known == 1) {
      reason += " (the only node with usage data)";
    } else if (!(highest - lowest > kEqualFraction)) {
      reason += " (all nodes equal)";
    } else {
      reason += " (lowest " + Percent(lowest) + ", highest " + Percent(highest) + ")";
    }
    s.component.reason = std::move(reason);
  }
  return out;
}

}  // namespace powerctl::scoring
