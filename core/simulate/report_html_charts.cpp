#include "core/simulate/report_html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace powerctl::simulate::report {
namespace {

// A round step for an axis from 0 to `max` with about five ticks.
double TickStep(double max) {
  double raw = max / 5;
  double magnitude = std::pow(10, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

double RoundUp(double max) {
  return std::ceil(max / TickStep(max)) * TickStep(max);
}

// The opening tag: drawn as wide as its container (CSS), as tall as the width allows.
std::string SvgOpen(int width, int height, const std::string& label) {
  return fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" role="img" aria-label="{}" font-size="12" font-family="sans-serif">)svg",
      width, height, Escape(label));
}

std::string Legend(const SimulationResult& result, int x, int y, bool with_bound) {
  std::string svg;
  for (const ScorerSummary& s : result.summary) {
    svg += fmt::format(R"svg(<rect x="{}" y="{}" width="14" height="14" fill="{}"/>)svg", x, y - 11,
                       ScorerColour(s.scorer));
    svg += fmt::format(R"svg(<text x="{}" y="{}">{}</text>)svg", x + 19, y, Escape(s.scorer));
    x += 130;
  }
  if (with_bound) {
    svg += fmt::format(
        R"svg(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#222" stroke-width="2" stroke-dasharray="5 3"/><text x="{}" y="{}">lower bound</text>)svg",
        x, x + 22, y - 4, y - 4, x + 27, y);
  }
  return svg;
}

std::string YAxis(double max, int left, int top, int width, int height, const std::string& label) {
  std::string svg;
  double step = TickStep(max);
  for (double v = 0; v <= max + 1e-9; v += step) {
    double y = top + height - v / max * height;
    svg += fmt::format(R"svg(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#ddd"/>)svg",
                       left, left + width, y, y);
    svg += fmt::format(R"svg(<text x="{}" y="{:.1f}" text-anchor="end">{:g}</text>)svg", left - 6,
                       y + 4, v);
  }
  svg += fmt::format(
      R"svg(<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>)svg",
      left - 48, top + height / 2, Escape(label));
  return svg;
}

// The per-seed values of one scorer at one whole percent of load; empty when a seed lacks it.
std::vector<double> SeedsAtPercent(const SimulationResult& result, std::size_t k, int p) {
  std::vector<double> values;
  for (const SeedRun& run : result.runs) {
    const auto& v = run.scorers[k].by_percent[p];
    if (!v) return {};
    values.push_back(*v);
  }
  return values;
}

}  // namespace

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string LoadChart(const SimulationResult& result) {
  const int left = 64, top = 36, width = 900, height = 340;
  const std::string label = "Cluster watts per scorer as the load grows";
  int first = 101, last = -1;
  double max = 1;
  for (std::size_t k = 0; k < result.summary.size(); ++k) {
    for (int p = 0; p <= 100; ++p) {
      for (double v : SeedsAtPercent(result, k, p)) {
        first = std::min(first, p);
        last = std::max(last, p);
        max = std::max(max, v);
      }
    }
  }
  std::string svg = SvgOpen(left + width + 16, top + height + 50, label);
  if (last < first) return svg + "<text x=\"20\" y=\"40\">no load points</text></svg>";
  for (const auto& b : result.mean_bound)
    if (b) max = std::max(max, *b);
  max = RoundUp(max);
  svg += YAxis(max, left, top, width, height, "cluster watts (true)");
  // The x axis covers the loads reached, in whole tens.
  const int x_from = first / 10 * 10;
  const int x_to = std::min(100, (last + 9) / 10 * 10);
  const double span = std::max(1, x_to - x_from);
  auto x_of = [&](double p) { return left + (p - x_from) / span * width; };
  auto y_of = [&](double w) { return top + height - w / max * height; };
  for (int p = x_from; p <= x_to; p += 10) {
    svg += fmt::format(R"svg(<text x="{:.1f}" y="{}" text-anchor="middle">{}%</text>)svg", x_of(p),
                       top + height + 18, p);
  }
  svg += fmt::format(
      R"svg(<text x="{}" y="{}" text-anchor="middle">cluster CPU load (requests / allocatable)</text>)svg",
      left + width / 2, top + height + 40);
  for (std::size_t k = 0; k < result.summary.size(); ++k) {
    std::string upper, lower, mean;
    for (int p = first; p <= last; ++p) {
      std::vector<double> v = SeedsAtPercent(result, k, p);
      if (v.empty()) continue;
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      double sum = 0;
      for (double w : v) sum += w;
      upper += fmt::format("{:.1f},{:.1f} ", x_of(p), y_of(*hi));
      lower = fmt::format("{:.1f},{:.1f} ", x_of(p), y_of(*lo)) + lower;
      mean += fmt::format("{:.1f},{:.1f} ", x_of(p), y_of(sum / static_cast<double>(v.size())));
    }
    const std::string colour = ScorerColour(result.summary[k].scorer);
    if (result.runs.size() > 1) {
      svg += fmt::format(R"svg(<polygon fill="{}" fill-opacity="0.18" points="{}{}"/>)svg", colour,
                         upper, lower);
    }
    svg +=
        fmt::format(R"svg(<polyline fill="none" stroke-width="2.5" stroke="{}" points="{}"/>)svg",
                    colour, mean);
  }
  std::string bound;
  for (std::size_t l = 0; l < result.loads.size(); ++l) {
    if (result.mean_bound[l])
      bound += fmt::format("{:.1f},{:.1f} ", x_of(result.loads[l]), y_of(*result.mean_bound[l]));
  }
  if (!bound.empty()) {
    svg += fmt::format(
        R"svg(<polyline fill="none" stroke="#222" stroke-width="2" stroke-dasharray="5 3" points="{}"/>)svg",
        bound);
  }
  svg += Legend(result, left, top - 16, !bound.empty());
  return svg + "</svg>";
}

std::string NodeChart(const SimulationResult& result, const std::vector<ServerType>& types) {
  const int left = 64, top = 60, height = 300, gap = 18;
  const int scorers = static_cast<int>(result.summary.size());
  const int slot = std::max(24, 6 * scorers + 10);
  int width = 0;
  for (const ServerType& t : types) width += static_cast<int>(t.nodes.size()) * slot + gap;
  width = std::max(width, 200);
  double max = 1;
  for (const SeedRun& run : result.runs)
    for (const ScorerRun& s : run.scorers)
      for (double w : s.node_watts) max = std::max(max, w);
  max = RoundUp(max);
  std::string svg = SvgOpen(left + width + 16, top + height + 80,
                            "True watts per node at the end of the run, by server type");
  svg += YAxis(max, left, top, width, height, "true watts per node");
  int x = left + gap / 2;
  for (const ServerType& type : types) {
    const int group_width = static_cast<int>(type.nodes.size()) * slot;
    // The type's name over its nodes, cut to the room it has (the full name on hover).
    const std::size_t room = static_cast<std::size_t>(std::max(3, group_width / 7));
    std::string shown = type.name;
    if (shown.size() > room) {
      std::size_t cut = room - 1;
      while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
      shown = shown.substr(0, cut) + "…";
    }
    svg += fmt::format(
        R"svg(<g><title>{}</title><line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#555"/><text x="{}" y="{}" font-weight="bold">{}</text></g>)svg",
        Escape(type.name), x, x + group_width - 4, top - 14, top - 14, x, top - 19, Escape(shown));
    for (std::size_t i : type.nodes) {
      for (int k = 0; k < scorers; ++k) {
        double sum = 0, lo = 1e300, hi = 0;
        for (const SeedRun& run : result.runs) {
          double w = run.scorers[static_cast<std::size_t>(k)].node_watts[i];
          sum += w;
          lo = std::min(lo, w);
          hi = std::max(hi, w);
        }
        const double mean = sum / static_cast<double>(std::max<std::size_t>(1, result.runs.size()));
        const double h = mean / max * height;
        const int bx = x + 4 + k * 6;
        const bool spread = hi - lo >= 0.5;
        svg += fmt::format(
            R"svg(<rect x="{}" y="{:.1f}" width="5" height="{:.1f}" fill="{}"><title>{} {}: {:.0f} W{}</title></rect>)svg",
            bx, top + height - h, h, ScorerColour(result.summary[k].scorer),
            Escape(result.nodes[i]), Escape(result.summary[k].scorer), mean,
            spread ? fmt::format(" (seeds: {:.0f} to {:.0f})", lo, hi) : "");
        if (spread) {
          svg += fmt::format(
              R"svg(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#333" stroke-width="1"/>)svg",
              bx + 2.5, bx + 2.5, top + height - lo / max * height,
              top + height - hi / max * height);
        }
      }
      svg += fmt::format(
          R"svg(<text transform="translate({},{}) rotate(60)" font-size="10">{}</text>)svg", x + 6,
          top + height + 12, Escape(result.nodes[i]));
      x += slot;
    }
    x += gap;
  }
  svg += Legend(result, left, 16, false);
  return svg + "</svg>";
}

}  // namespace powerctl::simulate::report
