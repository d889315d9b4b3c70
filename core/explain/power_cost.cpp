#include "core/explain/power_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace powerctl::explain {
namespace {

// Power values are 0..10 with fractions; these count as the same score.
constexpr double kSameValue = 1e-9;

struct Cost {
  const NodeScore* node = nullptr;
  double rank = 0;   // what the power score compared (a decrease counts as 0)
  double shown = 0;  // as predicted
  double power = 0;  // the power component's 0..10
};

std::optional<Cost> CostOf(const NodeScore& n, bool fill) {
  if (!n.scored) return std::nullopt;
  const scoring::Component* power = n.Power();
  if (power == nullptr) return std::nullopt;
  std::optional<double> value = fill ? n.FillWattsPerCore() : n.DeltaWatts();
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return Cost{&n, std::max(0.0, *value), *value, power->value};
}

std::string Text(double value, bool fill) {
  return fill ? fmt::format("{:.2f} W/core", value) : fmt::format("{:+.1f} W", value);
}

}  // namespace

std::optional<double> FillWattsPerCoreFromReason(std::string_view reason) {
  constexpr std::string_view kUnit = " W/core to fill";
  const std::size_t unit = reason.rfind(kUnit);
  if (unit == std::string_view::npos) return std::nullopt;
  std::size_t begin = unit;
  while (begin > 0 && (std::isdigit(static_cast<unsigned char>(reason[begin - 1])) != 0 ||
                       reason[begin - 1] == '.')) {
    --begin;
  }
  double value = 0;
  auto [end, error] = std::from_chars(reason.data() + begin, reason.data() + unit, value);
  if (error != std::errc() || end != reason.data() + unit || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::string RankingObjective(const std::vector<NodeScore>& nodes) {
  bool watts = false;
  for (const NodeScore& n : nodes) {
    if (n.FillWattsPerCore()) return config::kObjectiveFill;
    if (n.DeltaWatts() && n.Power() != nullptr) watts = true;
  }
  return watts ? config::kObjectiveMarginal : "";
}

std::string WhyChosen(const std::vector<NodeScore>& nodes, const std::string& chosen) {
  const NodeScore* winner = nullptr;
  std::size_t scored = 0;
  for (const NodeScore& n : nodes) {
    if (!n.scored) continue;
    ++scored;
    if (n.node == chosen) winner = &n;
  }
  if (winner == nullptr || chosen.empty()) return "";
  if (scored == 1) return chosen + " won: the only node the extender scored";
  const bool fill = RankingObjective(nodes) == config::kObjectiveFill;
  std::optional<Cost> mine = CostOf(*winner, fill);
  if (!mine) {
    const scoring::Component* power = winner->Power();
    const std::string why = power != nullptr ? power->reason : "no power score";
    if (RankingObjective(nodes).empty()) {
      return fmt::format(
          "{} won: no node had a power prediction ({} on {}), so kube-scheduler's other scores "
          "decided",
          chosen, why, chosen);
    }
    return fmt::format(
        "{} won without a power prediction ({}): kube-scheduler's other scores chose it", chosen,
        why);
  }
  // The cheapest other node: what the winner is measured against.
  std::optional<Cost> next;
  for (const NodeScore& n : nodes) {
    if (&n == winner) continue;
    std::optional<Cost> c = CostOf(n, fill);
    if (c && (!next || c->rank < next->rank)) next = c;
  }
  if (!next) return chosen + " won: the only node with a power prediction";
  const std::string& other = next->node->node;
  const std::string mine_text = Text(mine->shown, fill);
  const std::string next_text = Text(next->shown, fill);
  const std::string cheaper = fill ? "cheaper to fill" : "adds less power";
  if (std::fabs(mine->power - next->power) <= kSameValue) {
    // Costs within scoring.tieTolerance of the cheapest all score 10.
    const bool tie = mine->power >= scoring::kMaxComponentValue - kSameValue;
    return fmt::format(
        "{} won a tie on power: {} vs {} on {} ({}), both score {:.1f}{}, so kube-scheduler's "
        "other scores decided",
        chosen, mine_text, next_text, other, mine->rank <= next->rank ? "next best" : "cheapest",
        mine->power, tie ? " (within the tie tolerance)" : "");
  }
  if (mine->power > next->power) {
    return fmt::format("{} won: {}, {} vs {} on {} (next best)", chosen,
                       fill ? "cheapest to fill" : "adds the least power", mine_text, next_text,
                       other);
  }
  const std::int64_t my_score = winner->scored->score.value_or(0);
  const std::int64_t next_score = next->node->scored->score.value_or(0);
  if (my_score >= next_score) {
    return fmt::format("{} won on its other scores, though {} is {}: {} vs {}", chosen, other,
                       cheaper, next_text, mine_text);
  }
  return fmt::format(
      "{} won though {} is {} ({} vs {}) and the extender scored it higher ({} vs {}): "
      "kube-scheduler's own scores outweighed the extender's",
      chosen, other, cheaper, next_text, mine_text, next_score, my_score);
}

}  // namespace powerctl::explain
