#include "core/simulate/report_html.h"

#include "core/simulate/report_html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>

namespace powerctl::simulate {
namespace {

using report::Escape;

// One seed's value of a figure, or nullopt when that seed has none.
using PerSeed = std::function<std::optional<double>(const SeedRun&)>;

std::optional<Spread> Across(const SimulationResult& result, const PerSeed& figure) {
  std::vector<std::optional<double>> values;
  for (const SeedRun& run : result.runs) values.push_back(figure(run));
  return SpreadOf(values);
}

std::optional<std::size_t> ScorerIndex(const SimulationResult& result, std::string_view name) {
  for (std::size_t k = 0; k < result.summary.size(); ++k)
    if (result.summary[k].scorer == name) return k;
  return std::nullopt;
}

PerSeed Watts(std::size_t k, std::size_t l) {
  return [k, l](const SeedRun& run) { return run.scorers[k].at_loads[l].watts; };
}

PerSeed BoundWatts(std::size_t l) {
  return [l](const SeedRun& run) { return run.bound[l]; };
}

// What powerctl (scorer p) saves against scorer k, percent of k's watts.
PerSeed Saving(std::size_t p, std::size_t k, std::size_t l) {
  return [p, k, l](const SeedRun& run) -> std::optional<double> {
    const auto& theirs = run.scorers[k].at_loads[l].watts;
    const auto& ours = run.scorers[p].at_loads[l].watts;
    if (!theirs || !ours || *theirs <= 0) return std::nullopt;
    return 100 * (*theirs - *ours) / *theirs;
  };
}

// How far scorer k is above the lower bound, percent of the bound.
PerSeed AboveBound(std::size_t k, std::size_t l) {
  return [k, l](const SeedRun& run) -> std::optional<double> {
    const auto& watts = run.scorers[k].at_loads[l].watts;
    if (!watts || !run.bound[l] || *run.bound[l] <= 0) return std::nullopt;
    return 100 * (*watts - *run.bound[l]) / *run.bound[l];
  };
}

enum class Unit { kWatts, kPercent, kSaving, kCount };

std::string Number(double v, Unit unit) {
  switch (unit) {
    case Unit::kWatts:
      return fmt::format("{:.0f}", v);
    case Unit::kPercent:
      return fmt::format("{:+.1f}", v);
    case Unit::kSaving:
      return fmt::format("{:.1f}", v);
    case Unit::kCount:
      return fmt::format("{:g}", std::round(v * 10) / 10);
  }
  return "";
}

// A table cell's content: the mean over seeds, and under it min to max and the median.
std::string Figure(const std::optional<Spread>& s, Unit unit) {
  if (!s) return "-";
  const char* suffix = unit == Unit::kWatts ? " W" : unit == Unit::kCount ? "" : "%";
  const char* tone = unit == Unit::kSaving ? (s->mean > 0.05    ? " good"
                                              : s->mean < -0.05 ? " bad"
                                                                : "")
                                           : "";
  std::string html =
      fmt::format(R"(<span class="v{}">{}{}</span>)", tone, Number(s->mean, unit), suffix);
  if (s->seeds > 1 && s->max - s->min > 1e-9) {
    html += fmt::format(R"(<span class="spread">{} to {}, median {}</span>)", Number(s->min, unit),
                        Number(s->max, unit), Number(s->median, unit));
  }
  return html;
}

std::string Cell(const std::optional<Spread>& s, Unit unit) {
  return "<td>" + Figure(s, unit) + "</td>";
}

std::string LoadLabel(double load) {
  return fmt::format("{:g}%", load);
}

std::string Swatch(const std::string& scorer) {
  return fmt::format(R"(<span class="swatch" style="background:{}"></span>{})",
                     ScorerColour(scorer), Escape(scorer));
}

std::string Outcome(const SimulationResult& result) {
  const auto powerctl = ScorerIndex(result, "powerctl");
  if (!powerctl) {
    return "<p>powerctl was not among the scorers (<code>--scorer</code>), so there is no "
           "saving to show; every scorer's watts are below.</p>\n";
  }
  const auto fallback = ScorerIndex(result, "default");
  const auto peaks = ScorerIndex(result, "peaks");
  std::string html = R"(<table class="outcome"><thead><tr><th>load</th><th>powerctl</th>)";
  html += "<th>saves vs kube-scheduler's default</th>";
  if (peaks) html += "<th>saves vs PEAKS</th>";
  html += "<th>lower bound</th><th>powerctl above the bound</th></tr></thead><tbody>\n";
  for (std::size_t l = 0; l < result.loads.size(); ++l) {
    html += "<tr><th>" + LoadLabel(result.loads[l]) + "</th>";
    html += Cell(Across(result, Watts(*powerctl, l)), Unit::kWatts);
    html += Cell(Across(result, Saving(*powerctl, *fallback, l)), Unit::kSaving);
    if (peaks) html += Cell(Across(result, Saving(*powerctl, *peaks, l)), Unit::kSaving);
    html += Cell(Across(result, BoundWatts(l)), Unit::kWatts);
    html += Cell(Across(result, AboveBound(*powerctl, l)), Unit::kPercent);
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  html += fmt::format(
      "<p class=\"note\">Savings are (W<sub>scorer</sub> &minus; W<sub>powerctl</sub>) / "
      "W<sub>scorer</sub> in each seed. The lower bound: no placement of the same pods can draw "
      "less ({}, true curves, pods split freely across nodes). {}</p>\n",
      result.idle_off ? "nodes without new work switched off" : "every node on",
      result.runs.size() > 1
          ? fmt::format("Each figure is the mean of {} seeds; below it, the lowest to the "
                        "highest seed and the median.",
                        result.runs.size())
          : std::string("One seed: run more (--seeds) to see how much the figures vary."));
  return html;
}

std::string EveryScorer(const SimulationResult& result) {
  const auto powerctl = ScorerIndex(result, "powerctl");
  std::string html =
      "<table><thead><tr><th>load</th><th>scorer</th><th>true watts</th><th>powerctl "
      "saves</th><th>above the bound</th><th>unscheduled pods</th></tr></thead><tbody>\n";
  for (std::size_t l = 0; l < result.loads.size(); ++l) {
    for (std::size_t k = 0; k < result.summary.size(); ++k) {
      const std::string& name = result.summary[k].scorer;
      html += "<tr><td>" + LoadLabel(result.loads[l]) + "</td><td>" + Swatch(name) + "</td>";
      html += Cell(Across(result, Watts(k, l)), Unit::kWatts);
      if (powerctl && *powerctl != k) {
        html += Cell(Across(result, Saving(*powerctl, k, l)), Unit::kSaving);
      } else {
        html += "<td>-</td>";
      }
      html += Cell(Across(result, AboveBound(k, l)), Unit::kPercent);
      html += Cell(Across(result,
                          [k, l](const SeedRun& run) -> std::optional<double> {
                            if (!run.scorers[k].at_loads[l].watts) return std::nullopt;
                            return run.scorers[k].at_loads[l].unscheduled;
                          }),
                   Unit::kCount);
      html += "</tr>\n";
    }
  }
  return html + "</tbody></table>\n";
}

std::string Gib(double bytes) {
  return fmt::format("{:g} GiB", std::round(bytes / (1024.0 * 1024 * 1024) * 10) / 10);
}

// "min" or "min–max" of a figure over a type's nodes.
std::string Range(double lo, double hi, const char* unit) {
  if (hi - lo < 1e-9) return fmt::format("{:g}{}", lo, unit);
  return fmt::format("{:g}&ndash;{:g}{}", lo, hi, unit);
}

// What the nodes of a type are: cores, memory and, with measured curves, idle and full watts.
std::string TypeHardware(const Snapshot& snapshot, const ServerType& type) {
  double cores_lo = 1e300, cores_hi = 0, idle_lo = 1e300, idle_hi = 0, full_lo = 1e300, full_hi = 0;
  bool curves = true;
  for (std::size_t i : type.nodes) {
    const SimNode& n = snapshot.nodes[i];
    cores_lo = std::min(cores_lo, n.cpu_cores);
    cores_hi = std::max(cores_hi, n.cpu_cores);
    curves = curves && !n.power_curve.empty();
    if (!curves) continue;
    idle_lo = std::min(idle_lo, n.power_curve.front());
    idle_hi = std::max(idle_hi, n.power_curve.front());
    full_lo = std::min(full_lo, n.power_curve.back());
    full_hi = std::max(full_hi, n.power_curve.back());
  }
  const SimNode& first = snapshot.nodes[type.nodes.front()];
  std::string text = Range(cores_lo, cores_hi, " cores") + ", " + Gib(first.memory_bytes);
  if (curves) {
    text +=
        "; idle " + Range(idle_lo, idle_hi, " W") + ", full load " + Range(full_lo, full_hi, " W");
  }
  return text;
}

std::string ByServerType(const SimulationResult& result, const Snapshot& snapshot,
                         const std::vector<ServerType>& types) {
  std::string html = "<table><thead><tr><th>server type</th><th>nodes</th>";
  for (const ScorerSummary& s : result.summary) html += "<th>" + Swatch(s.scorer) + "</th>";
  html += "</tr></thead><tbody>\n";
  for (const ServerType& type : types) {
    html += fmt::format(R"(<tr><td><b>{}</b><span class="spread">{}</span></td><td>{}</td>)",
                        Escape(type.name), TypeHardware(snapshot, type), type.nodes.size());
    for (std::size_t k = 0; k < result.summary.size(); ++k) {
      std::string cell = Figure(Across(result,
                                       [&](const SeedRun& run) -> std::optional<double> {
                                         double watts = 0;
                                         for (std::size_t i : type.nodes)
                                           watts += run.scorers[k].node_watts[i];
                                         return watts;
                                       }),
                                Unit::kWatts);
      double pods = 0;
      for (const SeedRun& run : result.runs)
        for (std::size_t i : type.nodes) pods += run.scorers[k].node_pods[i];
      pods /= static_cast<double>(std::max<std::size_t>(1, result.runs.size()));
      html += fmt::format(R"(<td>{}<span class="spread">{} pods placed</span></td>)", cell,
                          Number(pods, Unit::kCount));
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table>\n";
}

std::string Provenance(const SimulationResult& result, const ReportProvenance& provenance) {
  std::string scorers;
  for (const ScorerSummary& s : result.summary)
    scorers += (scorers.empty() ? "" : ", ") + Escape(s.scorer);
  std::string loads;
  for (double l : result.loads) loads += (loads.empty() ? "" : ", ") + LoadLabel(l);
  std::string seeds = result.runs.empty() ? "none"
                      : result.runs.size() == 1
                          ? fmt::format("seed {}", result.runs.front().seed)
                          : fmt::format("{} seeds, {} to {}", result.runs.size(),
                                        result.runs.front().seed, result.runs.back().seed);
  return fmt::format(
      "<h2 id=\"provenance\">How this report was made</h2>\n"
      "<pre class=\"command\"><code>{}</code></pre>\n"
      "<p class=\"note\">powerctl {}. Snapshot {}; {}; loads {}; scorers {}; prediction error "
      "&plusmn;{:g}% on each node's idle and max watts{}{}. Watts are the nodes' true power (their "
      "measured curves).</p>\n",
      Escape(ShellQuoted(provenance.command_line)), Escape(provenance.version),
      Escape(result.snapshot_source), seeds, loads, scorers, result.prediction_error * 100,
      result.idle_off ? "; nodes without new work switched off" : "",
      result.unrounded_extender_scores ? "; extender scores unrounded (diagnostic)" : "");
}

constexpr const char* kStyle = R"css(
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;background:#fff;
  margin:0 auto;padding:12px clamp(10px,2.5vw,40px);max-width:2000px}
h1{font-size:1.5em;margin:.3em 0}h2{font-size:1.2em;margin:1.4em 0 .4em}
.lead{margin:.2em 0 .6em;color:#444}
.note{color:#555;font-size:.9em;max-width:75em}
table{border-collapse:collapse;width:100%;margin:6px 0 10px}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top}
thead th{background:#f3f3f3;font-weight:600}
td:first-child,th:first-child{text-align:left}
table.outcome .v{font-size:1.2em;font-weight:600}
.spread{display:block;color:#666;font-size:.78em;font-weight:normal}
.good{color:#17692a}.bad{color:#a11}
.swatch{display:inline-block;width:11px;height:11px;margin-right:5px}
svg{display:block;width:100%;height:auto;max-width:100%}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));gap:0 28px}
pre.command{background:#f6f6f6;padding:8px;white-space:pre-wrap;overflow-wrap:anywhere}
)css";

}  // namespace

std::string ScorerColour(const std::string& scorer) {
  if (scorer == "powerctl") return "#1b9e77";
  if (scorer == "default") return "#7570b3";
  if (scorer == "minimizepower") return "#d95f02";
  if (scorer == "peaks") return "#e7298a";
  return "#666666";
}

std::string RenderHtmlReport(const SimulationResult& result, const Snapshot& snapshot,
                             const ReportProvenance& provenance) {
  const std::vector<ServerType> types = ServerTypes(snapshot);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
      "<title>powerctl simulate</title><style>";
  html += kStyle;
  html += "</style></head><body>\n<h1>powerctl simulate</h1>\n";
  html += fmt::format(
      "<p class=\"lead\">{}: {} nodes of {} server type(s), {:.1f}% of its CPU requested before "
      "the workload; {} seed(s); prediction error &plusmn;{:g}%.</p>\n",
      Escape(result.snapshot_source), result.nodes.size(), types.size(),
      result.initial_load_percent, result.runs.size(), result.prediction_error * 100);
  html += "<h2 id=\"outcome\">Outcome</h2>\n" + Outcome(result);
  // Side by side from about 1,150 px on, one above the other below.
  const bool seeds = result.runs.size() > 1;
  html += "<div class=\"grid\"><section>\n<h2 id=\"load\">Cluster watts as the load grows</h2>\n" +
          report::LoadChart(result) +
          (seeds ? "<p class=\"note\">Lines: the mean of the seeds; bands: the lowest to the "
                   "highest seed.</p>\n"
                 : "") +
          "</section>\n";
  const double end_load = result.runs.empty() ? 0.0 : result.runs.front().final_load_percent;
  html += fmt::format(
      "<section>\n<h2 id=\"types\">By server type at {:.0f}% load (the end of the run)</h2>\n",
      end_load);
  html += ByServerType(result, snapshot, types) + "</section></div>\n";
  html += "<h2 id=\"nodes\">Watts per node</h2>\n" + report::NodeChart(result, types);
  if (seeds) {
    html +=
        "<p class=\"note\">Bars: the mean of the seeds; whiskers: the lowest to the highest "
        "seed.</p>\n";
  }
  html += "<h2 id=\"scorers\">Every scorer</h2>\n" + EveryScorer(result);
  html += Provenance(result, provenance);
  return html + "</body></html>\n";
}

std::optional<Spread> SpreadOf(const std::vector<std::optional<double>>& values) {
  if (values.empty()) return std::nullopt;
  std::vector<double> v;
  for (const auto& value : values) {
    if (!value) return std::nullopt;
    v.push_back(*value);
  }
  std::sort(v.begin(), v.end());
  Spread s;
  s.seeds = v.size();
  s.min = v.front();
  s.max = v.back();
  const std::size_t mid = v.size() / 2;
  s.median = v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

namespace {

// "gen2007" for gen2007-1 and gen2007-12: a name without its trailing number and separators.
std::string Stem(const std::string& name) {
  std::string stem = name;
  while (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem.back()))) stem.pop_back();
  while (!stem.empty() && (stem.back() == '-' || stem.back() == '_' || stem.back() == '.'))
    stem.pop_back();
  return stem.empty() ? name : stem;
}

std::string InstanceType(const SimNode& node) {
  for (const char* key : {"node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"}) {
    if (auto it = node.labels.find(key); it != node.labels.end() && !it->second.empty())
      return it->second;
  }
  return "";
}

std::string Hardware(const SimNode& node) {
  return fmt::format("{:g} cores, {}", node.cpu_cores, Gib(node.memory_bytes));
}

// Nodes grouped by `key` (in the order each key first appears), each group named `name(node)`.
std::vector<ServerType> GroupBy(const Snapshot& snapshot,
                                const std::function<std::string(const SimNode&)>& key,
                                const std::function<std::string(const SimNode&)>& name) {
  std::vector<ServerType> types;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < snapshot.nodes.size(); ++i) {
    auto [it, inserted] = index.try_emplace(key(snapshot.nodes[i]), types.size());
    if (inserted) types.push_back({name(snapshot.nodes[i]), {}});
    types[it->second].nodes.push_back(i);
  }
  return types;
}

}  // namespace

std::vector<ServerType> ServerTypes(const Snapshot& snapshot) {
  // Servers of one model usually share a name but for a number ("gen2007-1", "sr650-3"); the
  // cores and memory split a name shared by different machines.
  auto key = [](const SimNode& n) {
    const std::string type = InstanceType(n);
    return type.empty() ? fmt::format("{}|{}|{}", Stem(n.name), n.cpu_cores, n.memory_bytes)
                        : "label|" + type;
  };
  auto name = [](const SimNode& n) {
    const std::string type = InstanceType(n);
    return type.empty() ? Stem(n.name) : type;
  };
  std::vector<ServerType> types = GroupBy(snapshot, key, name);
  // Names that say nothing of the hardware ("node-a", "ip-10-0-3-7"): group by cores and memory.
  if (types.size() > 1 && types.size() * 2 > snapshot.nodes.size()) {
    types = GroupBy(
        snapshot,
        [](const SimNode& n) {
          const std::string type = InstanceType(n);
          return type.empty() ? fmt::format("{}|{}", n.cpu_cores, n.memory_bytes) : "label|" + type;
        },
        [](const SimNode& n) {
          const std::string type = InstanceType(n);
          return type.empty() ? Hardware(n) : type;
        });
  }
  // The same name for different hardware: say which is which.
  std::map<std::string, int> uses;
  for (const ServerType& t : types) ++uses[t.name];
  for (ServerType& t : types) {
    if (uses[t.name] > 1) t.name += " (" + Hardware(snapshot.nodes[t.nodes.front()]) + ")";
  }
  return types;
}

std::string ShellQuoted(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string word = argv[i];
    // The program as `powerctl`, not the path it was started by.
    if (i == 0) word = word.substr(word.find_last_of('/') + 1);
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("-_./=,:@%+").find(c) != std::string_view::npos;
    });
    if (!out.empty()) out += ' ';
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace powerctl::simulate
