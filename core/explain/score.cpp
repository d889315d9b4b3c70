#include "core/explain/score.h"

#include "core/common/json_fields.h"
#include "core/common/names.h"
#include "core/explain/power_cost.h"
#include "core/kube/pod_resources.h"
#include "core/kube/quantity.h"

#include <algorithm>
#include <set>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

Error Invalid(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

const scoring::NodeDecision* FindNode(const scoring::Decision& d, const std::string& node) {
  for (const scoring::NodeDecision& n : d.nodes) {
    if (n.node == node) return &n;
  }
  return nullptr;
}

// 0: scored, 1: rejected by the extender, 2: rejected by kube-scheduler's checks.
int Stage(const NodeScore& n) {
  if (n.scored) return 0;
  if (n.gate) return 1;
  return 2;
}

}  // namespace

std::optional<double> NodeScore::DeltaWatts() const {
  if (!scored || !scored->watts_now || !scored->watts_after) return std::nullopt;
  return *scored->watts_after - *scored->watts_now;
}

const scoring::Component* NodeScore::Power() const {
  if (!scored) return nullptr;
  for (const scoring::Component& c : scored->components) {
    if (c.name == scoring::kPower) return &c;
  }
  return nullptr;
}

std::optional<double> NodeScore::FillWattsPerCore() const {
  const scoring::Component* power = Power();
  if (power == nullptr) return std::nullopt;
  return FillWattsPerCoreFromReason(power->reason);
}

Result<json> PodToScore(const ScoreRequest& request) {
  if (request.pod) {
    json pod = *request.pod;
    if (!pod.is_object() || StringField(pod, {"kind"}) != "Pod") {
      return Invalid("--pod: the manifest is not a Pod (kind: Pod)");
    }
    if (!request.cpu.empty() || !request.memory.empty()) {
      return Invalid("give --pod or --cpu/--memory, not both");
    }
    if (!pod["metadata"].is_object()) pod["metadata"] = json::object();
    if (StringField(pod, {"metadata", "namespace"}).empty())
      pod["metadata"]["namespace"] = "default";
    if (StringField(pod, {"metadata", "name"}).empty()) pod["metadata"]["name"] = "powerctl-score";
    if (auto resources = kube::EffectivePodResources(pod); !resources.ok()) {
      return Invalid("--pod: " + resources.error().message);
    }
    return pod;
  }
  if (request.cpu.empty()) return Invalid("give --pod FILE or --cpu QUANTITY");
  auto cores = kube::ParseCpuCores(request.cpu);
  if (!cores.ok() || *cores < 0 || *cores > 1e6) {
    return Invalid("--cpu \"" + request.cpu + "\": not a CPU quantity (e.g. 1, 2.5 or 500m)");
  }
  json requests = {{"cpu", request.cpu}};
  if (!request.memory.empty()) {
    auto bytes = kube::ParseBytes(request.memory);
    if (!bytes.ok() || *bytes < 0) {
      return Invalid("--memory \"" + request.memory + "\": not a memory quantity (e.g. 512Mi)");
    }
    requests["memory"] = request.memory;
  }
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "powerctl-score"}, {"namespace", "default"}}},
              {"spec",
               {{"containers", json::array({{{"name", "main"},
                                             {"image", "powerctl.invalid/score"},
                                             {"resources", {{"requests", requests}}}}})}}}};
}

std::vector<NodeScore> RankNodes(const std::vector<std::string>& order,
                                 const std::map<std::string, std::vector<scoring::FitFailure>>& fit,
                                 const scoring::Decision& filter,
                                 const scoring::Decision& prioritize) {
  std::vector<NodeScore> out;
  for (const std::string& name : order) {
    NodeScore row;
    row.node = name;
    if (auto it = fit.find(name); it != fit.end()) row.fit = it->second;
    if (const scoring::NodeDecision* gate = FindNode(filter, name)) row.gate = *gate;
    if (const scoring::NodeDecision* scored = FindNode(prioritize, name)) row.scored = *scored;
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeScore& a, const NodeScore& b) {
    if (Stage(a) != Stage(b)) return Stage(a) < Stage(b);
    if (Stage(a) != 0) return false;
    const std::int64_t sa = a.scored->score.value_or(0), sb = b.scored->score.value_or(0);
    if (sa != sb) return sa > sb;
    auto da = a.DeltaWatts(), db = b.DeltaWatts();
    if (da.has_value() != db.has_value()) return da.has_value();
    return da && *da < *db;
  });
  return out;
}

Result<ScoreReport> ScorePod(const ScoreRequest& request, const config::PowerctlConfig& config,
                             const LocalScoringDeps& deps) {
  if (deps.kube == nullptr) return MakeError(ErrorCode::kInternal, "ScorePod: no kube client");
  for (const std::string& node : request.nodes) {
    if (std::string why = ValidateDnsSubdomain(node); !why.empty()) {
      return Invalid("node name \"" + node + "\": " + why);
    }
  }
  POWERCTL_TRY(pod, PodToScore(request));
  POWERCTL_TRY(objects, ListClusterObjects(*deps.kube));
  std::map<std::string, const json*> by_name;
  for (const json& node : objects.nodes) by_name[StringField(node, {"metadata", "name"})] = &node;
  std::vector<std::string> order = request.nodes;
  if (order.empty()) {
    for (const auto& [name, node] : by_name) order.push_back(name);
  }
  if (order.empty()) return MakeError(ErrorCode::kNotFound, "the cluster has no nodes");
  for (const std::string& name : order) {
    if (!by_name.count(name))
      return MakeError(ErrorCode::kNotFound, "node \"" + name + "\" not found");
  }

  // kube-scheduler filters first; the extender is asked only about the nodes that fit.
  POWERCTL_TRY(resources, kube::EffectivePodResources(pod));
  const std::string key = PodKey(pod);
  std::map<std::string, scoring::NodeLoad> loads = scoring::NodeLoadsOf(objects.pods, key);
  std::map<std::string, std::vector<scoring::FitFailure>> fit;
  std::vector<std::string> candidates;
  for (const std::string& name : order) {
    fit[name] = scoring::CheckNodeFit(pod, resources, *by_name[name], loads[name]);
    if (fit[name].empty()) candidates.push_back(name);
  }
  ScoreReport report;
  report.pod = pod;
  scoring::Decision filter, prioritize;
  if (!candidates.empty()) {
    POWERCTL_TRY(decided, Decide(request.source, pod, candidates, objects, config, deps));
    filter = std::move(decided.filter);
    prioritize = std::move(decided.prioritize);
    report.answered_by = std::move(decided.answered_by);
    report.warnings = std::move(decided.warnings);
  } else {
    report.answered_by = "kube-scheduler's checks (no node fits, the extender is not asked)";
  }
  for (const auto* d : {&filter, &prioritize}) {
    report.notes.insert(report.notes.end(), d->notes.begin(), d->notes.end());
  }
  report.nodes = RankNodes(order, fit, filter, prioritize);
  report.objective = RankingObjective(report.nodes);
  if (report.objective.empty()) report.objective = config.scoring.objective;
  return report;
}

json NodeScoreToJson(const NodeScore& n) {
  json out = {{"node", n.node}};
  json fit = json::array();
  for (const scoring::FitFailure& f : n.fit) {
    fit.push_back({{"check", f.check}, {"reason", f.reason}, {"detail", f.detail}, {"fix", f.fix}});
  }
  out["fits"] = n.fit.empty();
  out["fit"] = std::move(fit);
  if (n.gate) {
    out["gate"] = {{"pass", n.gate->passed.value_or(true)}, {"reason", n.gate->reason}};
  } else {
    out["gate"] = nullptr;
  }
  if (n.scored) {
    out["score"] = n.scored->score ? json(*n.scored->score) : json(nullptr);
    out["wattsNow"] = n.scored->watts_now ? json(*n.scored->watts_now) : json(nullptr);
    out["wattsAfter"] = n.scored->watts_after ? json(*n.scored->watts_after) : json(nullptr);
    auto delta = n.DeltaWatts();
    out["deltaWatts"] = delta ? json(*delta) : json(nullptr);
    auto fill = n.FillWattsPerCore();
    out["fillWattsPerCore"] = fill ? json(*fill) : json(nullptr);
    json components = json::array();
    for (const scoring::Component& c : n.scored->components) {
      components.push_back({{"name", c.name}, {"value", c.value}, {"reason", c.reason}});
    }
    out["components"] = std::move(components);
  } else {
    out["score"] = nullptr;
  }
  return out;
}

json ScoreReportToJson(const ScoreReport& report) {
  json nodes = json::array();
  for (const NodeScore& n : report.nodes) nodes.push_back(NodeScoreToJson(n));
  auto resources = kube::EffectivePodResources(report.pod);
  json pod = {{"namespace", StringField(report.pod, {"metadata", "namespace"})},
              {"name", StringField(report.pod, {"metadata", "name"})}};
  if (resources.ok()) {
    pod["cpuRequestMillis"] = resources->cpu_request_millis;
    pod["memoryRequestBytes"] = resources->memory_request_bytes;
  }
  return {{"kind", "PowerScore"},
          {"pod", pod},
          {"answeredBy", report.answered_by},
          {"objective", report.objective},
          {"notes", report.notes},
          {"warnings", report.warnings},
          {"nodes", nodes}};
}

}  // namespace powerctl::explain
