#include "core/scoring/power_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>

namespace powerctl::scoring {
namespace {

constexpr double kEqualWatts = 1e-6;

// |w| with one or two decimals, written as integer tenths or hundredths: this runs for every
// node of every prioritize, and is several times faster than to_chars with a precision. Ties
// round to even like printf; the product w * 10 is itself rounded, so a value just below a tie
// (0.15 is 0.1499...) can show the digit above where printf shows the one below.
// Whether WriteUnsignedFixed can write |w| (at most 19 characters): not for NaN or beyond 1e13.
bool FitsUnsignedFixed(double w, int decimals) {
  return std::nearbyint(std::fabs(w) * (decimals == 1 ? 10.0 : 100.0)) < 1e15;
}

char* WriteUnsignedFixed(char* p, double w, int decimals) {
  const double scale = decimals == 1 ? 10.0 : 100.0;
  const auto whole = static_cast<std::uint64_t>(std::nearbyint(std::fabs(w) * scale));
  p = std::to_chars(p, p + 20, whole / static_cast<std::uint64_t>(scale)).ptr;
  *p++ = '.';
  if (decimals == 2) *p++ = static_cast<char>('0' + whole / 10 % 10);
  *p++ = static_cast<char>('0' + whole % 10);
  return p;
}

void AppendUnsignedFixed(std::string& out, double w, int decimals) {
  char buffer[64];
  char* p = buffer;
  if (FitsUnsignedFixed(w, decimals)) {
    p = WriteUnsignedFixed(p, w, decimals);
  } else {
    p = std::to_chars(p, buffer + sizeof buffer - 8, std::fabs(w), std::chars_format::fixed,
                      decimals)
            .ptr;
  }
  out.append(buffer, p);
}

// "+3.0 W".
void AppendWatts(std::string& out, double w) {
  out += std::signbit(w) ? '-' : '+';
  AppendUnsignedFixed(out, w, 1);
  out += " W";
}

std::string Watts(double w) {
  std::string out;
  AppendWatts(out, w);
  return out;
}

// Fill costs spread over an order of magnitude across server generations (1 to 15 W/core): on
// a linear scale every efficient node would round to 10 and kube-scheduler's own scores
// (spreading) would pick among them. On a log scale a score point is a constant ratio of
// cost, and the scale ends at kFillScoreSpan times the cheapest: one point is 7 % of cost, so
// the 0..10 protocol keeps the resolution where the choice is made. `lowest` -> 10,
// `highest` -> 0.
constexpr double kFillScoreSpan = 2.0;  // twice the cheapest cost or more scores 0

// `log_span`: std::log(highest / lowest), the same for every node of a call, so computed once.
double InverseLogScale(double value, double lowest, double highest, double log_span) {
  if (!(highest > lowest) || !(lowest > 0)) return kMaxComponentValue;
  const double v = kMaxComponentValue * std::log(highest / value) / log_span;
  return std::clamp(v, 0.0, kMaxComponentValue);
}

// "2.41 W/core".
void AppendWattsPerCore(std::string& out, double w) {
  AppendUnsignedFixed(out, w, 2);
  out += " W/core";
}

std::string WattsPerCore(double w) {
  std::string out;
  AppendWattsPerCore(out, w);
  return out;
}

// Which nodes are ranked by cost, the costs, and the scale they are scored on: what every
// node's value depends on, shared by ScorePower and PowerScoreValues.
struct PowerRanking {
  enum Kind : std::uint8_t { kRanked, kOvercommitted, kUnknown };
  std::vector<Kind> kind;
  std::vector<double> cost;
  std::size_t ranked_count = 0;
  bool fill = false;
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  double tie_edge = 0;
  // The fill objective's log scale: its top end, and std::log(fill_top / tie_edge).
  double fill_top = 0;
  double fill_log_span = 0;
};

// `at(i)`: the estimate of node i of `count`.
template <typename At>
PowerRanking RankPower(std::size_t count, const At& at, const config::ScoringSettings& settings) {
  PowerRanking r;
  r.kind.assign(count, PowerRanking::kUnknown);
  r.cost.assign(count, 0.0);
  bool every_fill = true;  // every ranked node has a fill cost
  for (std::size_t i = 0; i < count; ++i) {
    const predict::PowerEstimate& n = at(i);
    if (n.overcommitted) {
      r.kind[i] = PowerRanking::kOvercommitted;
      continue;
    }
    std::optional<double> delta = n.delta();
    if (!delta || !std::isfinite(*delta)) continue;
    r.kind[i] = PowerRanking::kRanked;
    ++r.ranked_count;
    if (!n.fill_watts_per_core || !std::isfinite(*n.fill_watts_per_core)) every_fill = false;
  }
  // What ranks the nodes: the fill cost (W per core) when every node has one and the
  // objective asks for it, else the pod's own watts (a pod without CPU has no fill cost).
  r.fill = settings.objective == config::kObjectiveFill && every_fill && r.ranked_count > 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (r.kind[i] != PowerRanking::kRanked) continue;
    r.cost[i] = std::max(0.0, r.fill ? *at(i).fill_watts_per_core : *at(i).delta());
    r.lowest = std::min(r.lowest, r.cost[i]);
    r.highest = std::max(r.highest, r.cost[i]);
  }
  // Costs within the tolerance of the cheapest are ties (all score 10): smaller differences
  // are within what the model can tell apart, and kube-scheduler's own scores then decide.
  r.tie_edge = r.lowest * (1 + settings.tie_tolerance);
  r.fill_top = std::min(r.highest, r.tie_edge * kFillScoreSpan);
  r.fill_log_span = std::log(r.fill_top / r.tie_edge);
  return r;
}

// The value of a ranked node i.
double RankedValue(const PowerRanking& r, std::size_t i) {
  return r.fill
             ? InverseLogScale(std::max(r.cost[i], r.tie_edge), r.tie_edge, r.fill_top,
                               r.fill_log_span)
             : InverseMinMax(std::max(r.cost[i], r.tie_edge), r.tie_edge, r.highest, kEqualWatts);
}

double UnknownValue(const config::ScoringSettings& settings) {
  return std::clamp<double>(settings.unknown_score, 0.0, kMaxComponentValue);
}

}  // namespace

std::vector<double> PowerScoreValues(const std::vector<const predict::PowerEstimate*>& nodes,
                                     const config::ScoringSettings& settings) {
  const PowerRanking r = RankPower(
      nodes.size(), [&](std::size_t i) -> const auto& { return *nodes[i]; }, settings);
  std::vector<double> out(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    switch (r.kind[i]) {
      case PowerRanking::kRanked:
        out[i] = RankedValue(r, i);
        break;
      case PowerRanking::kOvercommitted:
        out[i] = 0;
        break;
      case PowerRanking::kUnknown:
        out[i] = UnknownValue(settings);
        break;
    }
  }
  return out;
}

std::vector<PowerScore> ScorePower(const std::vector<predict::PowerEstimate>& nodes,
                                   const config::ScoringSettings& settings, std::string* summary) {
  std::vector<PowerScore> out(nodes.size());
  const PowerRanking r = RankPower(
      nodes.size(), [&](std::size_t i) -> const auto& { return nodes[i]; }, settings);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const predict::PowerEstimate& n = nodes[i];
    PowerScore& s = out[i];
    s.component.name = std::string(kPower);
    std::optional<double> delta = n.delta();
    if (delta && std::isfinite(*delta)) s.delta_watts = delta;
    if (r.kind[i] == PowerRanking::kOvercommitted) {
      s.known = true;
      s.component.value = 0;
      s.component.reason = "overcommitted: node CPU usage plus the pod's CPU exceeds capacity";
      continue;
    }
    if (r.kind[i] == PowerRanking::kUnknown) {
      s.component.value = UnknownValue(settings);
      s.component.reason = !n.error.empty() ? n.error
                           : delta          ? "model returned a non-finite value"
                                            : "no prediction";
      continue;
    }
    s.known = true;
  }
  const bool fill = r.fill;
  const std::size_t ranked_count = r.ranked_count;
  const double lowest = r.lowest, highest = r.highest, tie_edge = r.tie_edge;
  const std::vector<double>& cost = r.cost;

  // The range is the same for every node: it is said once, in `summary`, and each node's
  // reason is its own cost only (short enough to need no allocation, and 5,000 copies of
  // the range made every large decision bigger for nothing).
  if (summary != nullptr && ranked_count > 0) {
    const auto text = [fill](double v) { return fill ? WattsPerCore(v) : Watts(v); };
    const std::string verb = fill ? "cost" : "add";
    const std::string to_fill = fill ? " to fill" : "";
    const std::string ties =
        settings.tie_tolerance > 0
            ? fmt::format("; within {:g} % of the cheapest is a tie", settings.tie_tolerance * 100)
            : "";
    if (ranked_count == 1) {
      *summary = "power: only one node has a prediction";
    } else if (!(highest - lowest > kEqualWatts)) {
      *summary = fmt::format("power: all {} nodes with a prediction {} {}{}, all score 10",
                             ranked_count, verb, text(lowest), to_fill);
    } else if (!(highest - tie_edge > kEqualWatts)) {
      *summary = fmt::format(
          "power: all {} nodes with a prediction {} {} to {}{}, within {:g} % of the cheapest: "
          "all score 10",
          ranked_count, verb, text(lowest), text(highest), to_fill, settings.tie_tolerance * 100);
    } else {
      *summary =
          fmt::format("power: {} nodes with a prediction {} {} (score 10) to {} (score 0){}{}",
                      ranked_count, verb, text(lowest), text(highest), to_fill, ties);
    }
  }
  // Each reason is written into one scratch buffer and copied once, at its final size: built
  // in place, most reasons outgrow the inline buffer and are allocated twice.
  constexpr std::string_view kDecrease = ", a decrease counted as +0.0 W";
  std::string reason;
  reason.reserve(128);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (r.kind[i] != PowerRanking::kRanked) continue;
    PowerScore& s = out[i];
    s.component.value = RankedValue(r, i);
    const double delta = *s.delta_watts;
    // The usual reason, "+30.0 W, 15.00 W/core to fill", in a buffer of its own (at most 89
    // characters); a pod-slot factor or an out-of-range value takes the general path below.
    if (FitsUnsignedFixed(delta, 1) &&
        (!fill || (FitsUnsignedFixed(cost[i], 2) && !(nodes[i].fill_slot_factor > 1.0)))) {
      char buffer[96];
      char* p = buffer;
      *p++ = std::signbit(delta) ? '-' : '+';
      p = WriteUnsignedFixed(p, delta, 1);
      *p++ = ' ';
      *p++ = 'W';
      if (delta < 0) p = std::copy(kDecrease.begin(), kDecrease.end(), p);
      if (fill) {
        *p++ = ',';
        *p++ = ' ';
        p = WriteUnsignedFixed(p, cost[i], 2);
        constexpr std::string_view kToFill = " W/core to fill";
        p = std::copy(kToFill.begin(), kToFill.end(), p);
      }
      s.component.reason.assign(buffer, p);
      continue;
    }
    reason.clear();
    AppendWatts(reason, *s.delta_watts);
    if (*s.delta_watts < 0) reason += kDecrease;
    if (fill) {
      reason += ", ";
      AppendWattsPerCore(reason, cost[i]);
      reason += " to fill";
      if (nodes[i].fill_slot_factor > 1.0) {
        fmt::format_to(std::back_inserter(reason), " (x{:.2f} for the pod slot it takes)",
                       nodes[i].fill_slot_factor);
      }
    }
    s.component.reason = reason;
  }
  return out;
}

double PodPowerCpuCores(const kube::PodResources& pod, std::string* note) {
  if (pod.cpu_unspecified) {
    if (note != nullptr) {
      *note = fmt::format(
          "the pod sets no CPU request or limit; using the scheduler's default of {}m per "
          "container ({}m)",
          kube::kDefaultMilliCpuRequest, pod.cpu_request_nonzero_millis);
    }
    return static_cast<double>(pod.cpu_request_nonzero_millis) / 1000.0;
  }
  return pod.cpu_request_cores();
}

}  // namespace powerctl::scoring
