#include "cli/score_format.h"

#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ostream>

namespace powerctl::cli {
namespace {

std::string Fixed(std::optional<double> value) {
  return value ? fmt::format("{:.1f}", *value) : "-";
}

// Component names in the order first seen (power, policy, realUsage).
std::vector<std::string> ComponentNames(const std::vector<explain::NodeScore>& nodes) {
  std::vector<std::string> names;
  for (const explain::NodeScore& n : nodes) {
    if (!n.scored) continue;
    for (const scoring::Component& c : n.scored->components) {
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
    }
  }
  return names;
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string Verdict(const explain::NodeScore& n) {
  if (!n.fit.empty()) return "no: " + n.fit.front().check;
  if (n.gate && n.gate->passed == false) return "rejected";
  return "yes";
}

std::string Reasons(const explain::NodeScore& n) {
  std::string out;
  auto add = [&out](const std::string& text) {
    if (!text.empty()) out += (out.empty() ? "" : "; ") + text;
  };
  for (const scoring::FitFailure& f : n.fit) add(f.reason + " (" + f.detail + ")");
  if (n.gate) add(n.gate->reason);
  if (n.scored) {
    for (const scoring::Component& c : n.scored->components) add(c.name + ": " + c.reason);
  }
  return out.empty() ? "-" : out;
}

}  // namespace

void PrintNodeScores(std::ostream& out, const std::vector<explain::NodeScore>& nodes, bool wide,
                     const std::string& chosen) {
  std::vector<std::string> components = ComponentNames(nodes);
  std::vector<std::string> headers = {"NODE", "FITS"};
  if (wide) headers.insert(headers.end(), {"WATTS", "AFTER"});
  headers.push_back("DELTA");
  // The fill cost ranks the nodes when scoring.objective=fill: shown beside the watts it
  // explains (a pod's own watts favour the node that is cheapest for this pod only).
  const bool fill = std::any_of(nodes.begin(), nodes.end(), [](const explain::NodeScore& n) {
    return n.FillWattsPerCore().has_value();
  });
  if (fill) headers.push_back("FILL");
  for (const std::string& c : components) headers.push_back(Upper(c));
  headers.push_back("SCORE");
  if (wide) headers.push_back("REASONS");
  Table table(headers);
  for (const explain::NodeScore& n : nodes) {
    std::vector<std::string> row = {(n.node == chosen ? "* " : "") + n.node, Verdict(n)};
    if (wide) {
      row.push_back(Fixed(n.scored ? n.scored->watts_now : std::nullopt));
      row.push_back(Fixed(n.scored ? n.scored->watts_after : std::nullopt));
    }
    auto delta = n.DeltaWatts();
    row.push_back(delta ? fmt::format("{:+.1f} W", *delta) : "-");
    if (fill) {
      auto cost = n.FillWattsPerCore();
      row.push_back(cost ? fmt::format("{:.2f} W/core", *cost) : "-");
    }
    for (const std::string& name : components) {
      std::string cell = "-";
      if (n.scored) {
        for (const scoring::Component& c : n.scored->components) {
          if (c.name == name) cell = fmt::format("{:.1f}", c.value);
        }
      }
      row.push_back(cell);
    }
    row.push_back(n.scored && n.scored->score ? std::to_string(*n.scored->score) : "-");
    if (wide) row.push_back(Reasons(n));
    table.AddRow(std::move(row));
  }
  table.Print(out);
}

void PrintNotScored(std::ostream& out, const std::vector<explain::NodeScore>& nodes) {
  bool header = false;
  for (const explain::NodeScore& n : nodes) {
    std::string why;
    if (!n.fit.empty()) {
      why = n.fit.front().reason + " (" + n.fit.front().detail + ")";
    } else if (n.gate && n.gate->passed == false) {
      why = n.gate->reason;
    } else {
      continue;
    }
    if (!header) out << "\nNot scored:\n";
    header = true;
    out << "  " << n.node << ": " << why << "\n";
  }
}

}  // namespace powerctl::cli
