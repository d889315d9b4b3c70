#include "core/simulate/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace powerctl::simulate {
namespace {

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

// A round step for an axis from 0 to `max` with about five ticks.
double TickStep(double max) {
  double raw = max / 5;
  double magnitude = std::pow(10, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string Legend(const SimulationResult& result, int x, int y) {
  std::string svg;
  for (const ScorerSummary& s : result.summary) {
    svg += fmt::format(R"svg(<rect x="{}" y="{}" width="14" height="14" fill="{}"/>)svg", x, y - 11,
                       ScorerColour(s.scorer));
    svg += fmt::format(R"svg(<text x="{}" y="{}">{}</text>)svg", x + 19, y, Escape(s.scorer));
    x += 140;
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
      left - 52, top + height / 2, Escape(label));
  return svg;
}

std::string NodeChart(const SimulationResult& result) {
  const int left = 70, top = 40, height = 320;
  const int n = static_cast<int>(result.nodes.size());
  const int groups = std::max(n, 1);
  const int scorers = static_cast<int>(result.summary.size());
  const int group_width = std::max(24, 6 * scorers + 8);
  const int width = groups * group_width;
  double max = 1;
  for (const ScorerSummary& s : result.summary)
    for (double w : s.mean_node_watts) max = std::max(max, w);
  max = std::ceil(max / TickStep(max)) * TickStep(max);
  std::string svg = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-size="12" font-family="sans-serif">)svg",
      left + width + 20, top + height + 110);
  svg += YAxis(max, left, top, width, height, "true watts per node");
  for (int i = 0; i < n; ++i) {
    int x0 = left + i * group_width + 4;
    for (int k = 0; k < scorers; ++k) {
      double w = result.summary[k].mean_node_watts[i];
      double h = w / max * height;
      svg += fmt::format(
          R"svg(<rect x="{}" y="{:.1f}" width="5" height="{:.1f}" fill="{}"><title>{} {}: {:.0f} W</title></rect>)svg",
          x0 + k * 6, top + height - h, h, ScorerColour(result.summary[k].scorer),
          Escape(result.nodes[i]), Escape(result.summary[k].scorer), w);
    }
    svg += fmt::format(
        R"svg(<text transform="translate({},{}) rotate(60)" font-size="10">{}</text>)svg", x0 + 6,
        top + height + 12, Escape(result.nodes[i]));
  }
  svg += Legend(result, left, top - 16);
  return svg + "</svg>";
}

std::string LoadChart(const SimulationResult& result) {
  const int left = 70, top = 40, width = 760, height = 320;
  int first = 101, last = -1;
  double max = 1;
  for (const ScorerSummary& s : result.summary) {
    for (int p = 0; p <= 100; ++p) {
      if (!s.mean_by_percent[p]) continue;
      first = std::min(first, p);
      last = std::max(last, p);
      max = std::max(max, *s.mean_by_percent[p]);
    }
  }
  std::string svg = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-size="12" font-family="sans-serif">)svg",
      left + width + 20, top + height + 60);
  if (last < first) return svg + "<text x=\"20\" y=\"40\">no load points</text></svg>";
  max = std::ceil(max / TickStep(max)) * TickStep(max);
  svg += YAxis(max, left, top, width, height, "cluster watts (true)");
  auto x_of = [&](int p) { return left + static_cast<double>(p) / 100.0 * width; };
  for (int p = 0; p <= 100; p += 10) {
    svg += fmt::format(R"svg(<text x="{:.1f}" y="{}" text-anchor="middle">{}%</text>)svg", x_of(p),
                       top + height + 18, p);
  }
  svg += fmt::format(
      R"svg(<text x="{}" y="{}" text-anchor="middle">cluster CPU load (requests / allocatable)</text>)svg",
      left + width / 2, top + height + 40);
  for (const ScorerSummary& s : result.summary) {
    std::string points;
    for (int p = first; p <= last; ++p) {
      if (!s.mean_by_percent[p]) continue;
      points += fmt::format("{:.1f},{:.1f} ", x_of(p),
                            top + height - *s.mean_by_percent[p] / max * height);
    }
    svg +=
        fmt::format(R"svg(<polyline fill="none" stroke-width="2.5" stroke="{}" points="{}"/>)svg",
                    ScorerColour(s.scorer), points);
  }
  svg += Legend(result, left, top - 16);
  return svg + "</svg>";
}

std::string Percent(const std::optional<double>& v) {
  return v ? fmt::format("{:+.1f}%", *v) : "-";
}

std::string SummaryTable(const SimulationResult& result) {
  std::string html = "<table><tr><th>scorer</th>";
  for (double l : result.loads) html += fmt::format("<th>watts at {:g}%</th>", l);
  for (double l : result.loads) html += fmt::format("<th>powerctl saves at {:g}%</th>", l);
  html += "</tr>";
  for (const ScorerSummary& s : result.summary) {
    html +=
        fmt::format(R"svg(<tr><td><span class="swatch" style="background:{}"></span>{}</td>)svg",
                    ScorerColour(s.scorer), Escape(s.scorer));
    for (const auto& w : s.mean_watts)
      html += w ? fmt::format("<td>{:.0f}</td>", *w) : "<td>-</td>";
    for (const auto& v : s.powerctl_saving)
      html += "<td>" + (s.scorer == "powerctl" ? std::string("-") : Percent(v)) + "</td>";
    html += "</tr>";
  }
  return html + "</table>";
}

}  // namespace

std::string ScorerColour(const std::string& scorer) {
  if (scorer == "powerctl") return "#1b9e77";
  if (scorer == "default") return "#7570b3";
  if (scorer == "minimizepower") return "#d95f02";
  if (scorer == "peaks") return "#e7298a";
  return "#666666";
}

std::string RenderHtmlReport(const SimulationResult& result) {
  std::string html = R"svg(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>powerctl simulate</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}
td:first-child,th:first-child{text-align:left}.swatch{display:inline-block;width:12px;height:12px;margin-right:6px}
.note{color:#555;max-width:900px}
</style></head><body>
<h1>powerctl simulate</h1>
)svg";
  html += fmt::format(
      "<p class=\"note\">Cluster: {} ({} nodes, {:.1f}% CPU requested before the workload). "
      "{} seed(s), prediction error &plusmn;{:.0f}% on each node's idle and max watts. Watts are "
      "the nodes' true power (their measured curves), averaged over seeds. \"powerctl saves\" is "
      "the mean of (W<sub>scorer</sub> &minus; W<sub>powerctl</sub>) / W<sub>scorer</sub>.</p>\n",
      Escape(result.snapshot_source), result.nodes.size(), result.initial_load_percent,
      result.runs.size(), result.prediction_error * 100);
  html += "<h2>Summary</h2>\n" + SummaryTable(result) + "\n";
  html += "<h2>Cluster watts as the load grows</h2>\n" + LoadChart(result) + "\n";
  html += fmt::format("<h2>Watts per node at {:.0f}% load (end of the run)</h2>\n",
                      result.runs.empty() ? 0.0 : result.runs.front().final_load_percent);
  html += NodeChart(result) + "\n</body></html>\n";
  return html;
}

}  // namespace powerctl::simulate
