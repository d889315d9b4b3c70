#include "core/scoring/power_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace powerctl::scoring {
namespace {

constexpr double kEqualWatts = 1e-6;

// "+3.0 W". This runs for every node of every prioritize: watts in any plausible range are
// formatted as integer tenths, several times faster than to_chars with a precision. Ties
// round to even like printf; the product w * 10 is itself rounded, so a value just below a
// tie (0.15 is 0.1499...) can show the digit above where printf shows the one below.
void AppendWatts(std::string& out, double w) {
  char buffer[64];
  char* p = buffer;
  *p++ = std::signbit(w) ? '-' : '+';
  const double tenths = std::nearbyint(std::fabs(w) * 10.0);
  if (tenths < 1e15) {
    const auto whole = static_cast<std::uint64_t>(tenths);
    p = std::to_chars(p, buffer + sizeof buffer - 8, whole / 10).ptr;
    *p++ = '.';
    *p++ = static_cast<char>('0' + whole % 10);
  } else {
    p = std::to_chars(p, buffer + sizeof buffer - 8, std::fabs(w), std::chars_format::fixed, 1).ptr;
  }
  out.append(buffer, p);
  out += " W";
}

std::string Watts(double w) {
  std::string out;
  AppendWatts(out, w);
  return out;
}

}  // namespace

std::vector<PowerScore> ScorePower(const std::vector<predict::PowerEstimate>& nodes,
                                   const manifests::ScoringSettings& settings,
                                   std::string* summary) {
  std::vector<PowerScore> out(nodes.size());
  std::vector<double> counted(nodes.size(), 0.0);
  std::vector<bool> ranked(nodes.size(), false);
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  std::size_t ranked_count = 0;

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const predict::PowerEstimate& n = nodes[i];
    PowerScore& s = out[i];
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

  // The range is the same for every node: it is said once, in `summary`, and each node's
  // reason is its own delta only (short enough to need no allocation, and 5,000 copies of
  // the range made every large decision bigger for nothing).
  if (summary != nullptr && ranked_count > 0) {
    if (ranked_count == 1) {
      *summary = "power: only one node has a prediction";
    } else if (!(highest - lowest > kEqualWatts)) {
      *summary = "power: all " + std::to_string(ranked_count) + " nodes with a prediction add " +
                 Watts(lowest) + ", all score 10";
    } else {
      *summary = "power: " + std::to_string(ranked_count) + " nodes with a prediction add " +
                 Watts(lowest) + " (score 10) to " + Watts(highest) + " (score 0)";
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!ranked[i]) continue;
    PowerScore& s = out[i];
    s.component.value = InverseMinMax(counted[i], lowest, highest, kEqualWatts);
    AppendWatts(s.component.reason, *s.delta_watts);
    if (*s.delta_watts < 0) s.component.reason += ", a decrease counted as +0.0 W";
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
