#pragma once
// `simulate --report FILE.html`: one self-contained page (inline CSS and SVG, no scripts, no
// network) that leads with the outcome (what powerctl saves against kube-scheduler's default
// and PEAKS, and how far it is above the lower bound, at each load), then every scorer, the
// cluster's watts as the load grows and each node's watts grouped by server type. Every figure
// carries its spread across seeds (min, median, max). The page ends with the command line and
// the powerctl version that produced it. It fits an 800 px wide window without scrolling
// sideways and its charts grow with wider ones.

#include "core/simulate/simulate.h"
#include "core/simulate/snapshot.h"

#include <string>
#include <vector>

namespace powerctl::simulate {

// What produced the report, printed at its end.
struct ReportProvenance {
  std::vector<std::string> command_line;  // argv as given
  std::string version;                    // "1.4.0 (commit 1a2b3c4, built 2026-11-27)"
};

// `snapshot` is the one `result` was simulated on (its nodes in the same order).
std::string RenderHtmlReport(const SimulationResult& result, const Snapshot& snapshot,
                             const ReportProvenance& provenance);

// The chart colour of a scorer (also used by the page's legend).
std::string ScorerColour(const std::string& scorer);

// Nodes of one server type. A node's type is its `node.kubernetes.io/instance-type` label (or
// the beta label), else its hardware: nodes with the same CPU, memory, power curve and model
// annotations are one type, named after their names' common stem ("gen2007" for gen2007-1..6).
struct ServerType {
  std::string name;
  std::vector<std::size_t> nodes;  // positions in the snapshot, in its order
};
std::vector<ServerType> ServerTypes(const Snapshot& snapshot);

// The spread of one figure across seeds.
struct Spread {
  double mean = 0, min = 0, median = 0, max = 0;
  std::size_t seeds = 0;
};
// nullopt when `values` is empty or any value is missing (a seed that never reached the load).
std::optional<Spread> SpreadOf(const std::vector<std::optional<double>>& values);

// Shell-quoted for display: `powerctl simulate --report 'my report.html'`.
std::string ShellQuoted(const std::vector<std::string>& argv);

}  // namespace powerctl::simulate
