#include "core/extender/extender_service.h"

#include "core/common/json_bounds.h"
#include "core/common/malloc_tuning.h"
#include "core/extender/wire.h"
#include "core/kube/quantity.h"
#include "core/predict/node_power.h"
#include "core/predict/node_power_json.h"
#include "core/scoring/node_cpu.h"
#include "core/telemetry/telemetry_service.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>
#include <vector>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Query parameters in order ("a=1&b=2&b=3"); values are node names, quantities and numbers,
// which need no percent-decoding beyond what kube-scheduler and the API server send.
std::vector<std::pair<std::string, std::string>> QueryParams(const std::string& query) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string part = query.substr(start, end - start);
    if (!part.empty()) {
      std::size_t eq = part.find('=');
      out.emplace_back(part.substr(0, eq), eq == std::string::npos ? "" : part.substr(eq + 1));
    }
    start = end + 1;
  }
  return out;
}

// Decisions and predictions quote what others sent (node names, telemetry, model servers'
// errors): invalid UTF-8 is replaced rather than failing the answer.
std::string DumpUntrusted(const json& document) {
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

server::HttpResponse BadRequest(const std::string& message) {
  return server::HttpResponse::Text(400, message + "\n");
}

// What an older recorded decision keeps of its nodes once the budget is reached.
constexpr std::size_t kKeptScoredNodes = 20;
constexpr std::size_t kKeptRejectedNodes = 50;

}  // namespace

ExtenderService::ExtenderService(scoring::SchedulingDeps deps, server::MetricsRegistry& metrics,
                                 ExtenderServiceOptions options)
    : deps_(deps),
      core_(std::move(deps)),
      requests_(metrics.Counter("powerctl_extender_requests_total",
                                "Extender requests by verb and HTTP status", {"verb", "code"})),
      latency_(metrics.Histogram("powerctl_extender_request_duration_seconds",
                                 "Time to answer an extender request, by verb",
                                 {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
                                 {"verb"})),
      node_verdicts_(metrics.Counter("powerctl_extender_filtered_nodes_total",
                                     "Nodes the filter verb rejected", {"verb"})),
      power_estimates_(metrics.Counter(
          "powerctl_extender_power_estimates_total",
          "Nodes scored by prioritize, by whether the model predicted their power", {"result"})),
      prepared_nodes_(metrics.Counter(
          "powerctl_extender_prepared_nodes_total",
          "Per-node power inputs prioritize reused (hit) or had to prepare (miss)", {"result"})),
      telemetry_age_(metrics.Gauge("powerctl_telemetry_snapshot_age_seconds",
                                   "Age of the newest telemetry snapshot, by source", {"source"})),
      telemetry_failing_(metrics.Gauge("powerctl_telemetry_refresh_failing",
                                       "1 when the last telemetry refresh of a source failed",
                                       {"source"})),
      heap_(metrics.Gauge("powerctl_heap_bytes",
                          "The memory allocator's view of the heap: allocated (held by powerctl), "
                          "active, resident and mapped (held by the allocator); jemalloc fills "
                          "all four, glibc allocated and mapped",
                          {"state"})),
      options_(options) {}

server::HttpResponse ExtenderService::Answer(const char* verb, int status, std::string body,
                                             SteadyClock::time_point start) {
  requests_.Inc({verb, std::to_string(status)});
  latency_.Observe({verb}, std::chrono::duration<double>(SteadyClock::now() - start).count());
  return status == 200 ? server::HttpResponse::Json(200, std::move(body))
                       : server::HttpResponse::Text(status, std::move(body) + "\n");
}

std::string ExtenderService::TooManyNodes(std::size_t count) const {
  if (count <= options_.max_request_nodes) return "";
  return "the request names " + std::to_string(count) + " candidate nodes, more than " +
         std::to_string(options_.max_request_nodes) + " (extender.maxRequestNodes)";
}

std::shared_ptr<const scoring::Decision> ExtenderService::Record(scoring::Decision decision) {
  auto recorded = std::make_shared<const scoring::Decision>(std::move(decision));
  bool overdue = false;
  {
    std::lock_guard lock(mu_);
    node_entries_ += recorded->nodes.size();
    decisions_.push_back({recorded, nullptr});
    overdue = node_entries_ > 2 * options_.keep_node_entries ||
              decisions_.size() > 2 * options_.keep_decisions;
  }
  if (overdue) Trim();
  return recorded;
}

void ExtenderService::Trim() {
  std::vector<std::shared_ptr<const scoring::Decision>> freed;  // freed after the lock goes
  std::lock_guard lock(mu_);
  // Over the budget, older decisions first keep only the nodes that explain them (what the
  // decision Event keeps), oldest first; the newest decision stays whole.
  while (node_entries_ > options_.keep_node_entries && compacted_ + 1 < decisions_.size()) {
    Kept& old = decisions_[compacted_++];
    std::shared_ptr<const scoring::Decision> small = std::move(old.top);
    if (small == nullptr) {
      small = std::make_shared<const scoring::Decision>(
          scoring::TopNodes(*old.whole, kKeptScoredNodes, kKeptRejectedNodes));
    }
    node_entries_ -= old.whole->nodes.size() - small->nodes.size();
    freed.push_back(std::exchange(old.whole, std::move(small)));
  }
  // The newest decision is always kept, however large.
  while (decisions_.size() > 1 && (decisions_.size() > options_.keep_decisions ||
                                   node_entries_ > options_.keep_node_entries)) {
    node_entries_ -= decisions_.front().whole->nodes.size();
    freed.push_back(std::move(decisions_.front().whole));
    decisions_.pop_front();
    if (compacted_ > 0) --compacted_;
  }
}

server::HttpResponse ExtenderService::AfterSend(server::HttpResponse response,
                                                std::shared_ptr<const scoring::Decision> recorded) {
  response.after_send = [this, recorded = std::move(recorded)] {
    // The cut Trim will keep once this decision is old, made now and shared with the
    // observer, which needs the same one (what its Event holds) unless many were rejected.
    std::shared_ptr<const scoring::Decision> top = recorded;
    if (recorded->nodes.size() > kKeptScoredNodes) {
      top = std::make_shared<const scoring::Decision>(
          scoring::TopNodes(*recorded, kKeptScoredNodes, kKeptRejectedNodes));
      std::lock_guard lock(mu_);
      for (auto it = decisions_.rbegin(); it != decisions_.rend(); ++it) {
        if (it->whole != recorded) continue;
        it->top = top;
        break;
      }
    }
    const std::size_t rejected = static_cast<std::size_t>(
        std::count_if(recorded->nodes.begin(), recorded->nodes.end(),
                      [](const scoring::NodeDecision& n) { return n.passed == false; }));
    if (observer_) observer_(rejected > kKeptRejectedNodes ? recorded : top);
    Trim();
  };
  return response;
}

server::HttpResponse ExtenderService::Filter(const server::HttpRequest& request) {
  auto start = SteadyClock::now();
  auto args = DecodeExtenderArgs(request.body);
  if (!args.ok()) return Answer(scoring::kVerbFilter, 400, args.error().message, start);
  if (auto why = TooManyNodes(args->node_names.size()); !why.empty())
    return Answer(scoring::kVerbFilter, 400, why, start);
  scoring::Decision decision = core_.Filter(args->pod, args->node_names, args->node_items);
  FilterAnswer answer;
  for (const scoring::NodeDecision& n : decision.nodes) {
    if (n.passed == false) answer.rejected[n.node] = Rejection{n.reason, n.unresolvable};
  }
  node_verdicts_.Inc({scoring::kVerbFilter}, static_cast<double>(answer.rejected.size()));
  std::string body = EncodeFilterResult(*args, answer);
  scoring::KeepRejectedNodes(decision);
  auto recorded = Record(std::move(decision));
  return AfterSend(Answer(scoring::kVerbFilter, 200, std::move(body), start), std::move(recorded));
}

server::HttpResponse ExtenderService::Prioritize(const server::HttpRequest& request) {
  auto start = SteadyClock::now();
  auto args = DecodeExtenderArgs(request.body);
  if (!args.ok()) return Answer(scoring::kVerbPrioritize, 400, args.error().message, start);
  if (auto why = TooManyNodes(args->node_names.size()); !why.empty())
    return Answer(scoring::kVerbPrioritize, 400, why, start);
  scoring::PrioritizeStats stats;
  scoring::Decision decision =
      core_.Prioritize(args->pod, std::move(args->node_names), args->node_items, &stats);
  power_estimates_.Inc({"predicted"}, static_cast<double>(stats.predicted));
  power_estimates_.Inc({"unknown"}, static_cast<double>(stats.unknown));
  power_estimates_.Inc({"overcommitted"}, static_cast<double>(stats.overcommitted));
  prepared_nodes_.Inc({"hit"}, static_cast<double>(stats.reused));
  prepared_nodes_.Inc({"miss"}, static_cast<double>(stats.prepared));
  std::vector<HostPriority> list;
  list.reserve(decision.nodes.size());
  for (const scoring::NodeDecision& n : decision.nodes)
    list.push_back({n.node, n.score.value_or(0)});
  std::string body = EncodeHostPriorityList(list);
  auto recorded = Record(std::move(decision));
  return AfterSend(Answer(scoring::kVerbPrioritize, 200, std::move(body), start),
                   std::move(recorded));
}

server::HttpResponse ExtenderService::Preempt(const server::HttpRequest& request) {
  auto start = SteadyClock::now();
  auto args = DecodePreemptionArgs(request.body);
  if (!args.ok()) return Answer(scoring::kVerbPreempt, 400, args.error().message, start);
  if (auto why = TooManyNodes(args->node_victims.size()); !why.empty())
    return Answer(scoring::kVerbPreempt, 400, why, start);
  std::vector<std::string> nodes;
  for (const auto& [node, victims] : args->node_victims) nodes.push_back(node);
  // The same filter as the filter verb: preemption must never pick a node we would reject.
  scoring::Decision decision = core_.Filter(args->pod, nodes, json::array());
  decision.verb = scoring::kVerbPreempt;
  std::map<std::string, Rejection> rejected;
  for (const scoring::NodeDecision& n : decision.nodes) {
    if (n.passed == false) rejected[n.node] = Rejection{n.reason, n.unresolvable};
  }
  std::string body = EncodePreemptionResult(*args, rejected);
  scoring::KeepRejectedNodes(decision);
  auto recorded = Record(std::move(decision));
  return AfterSend(Answer(scoring::kVerbPreempt, 200, std::move(body), start), std::move(recorded));
}

server::HttpResponse ExtenderService::Decisions(const server::HttpRequest& request) const {
  std::string pod;
  std::size_t limit = 100;
  for (const auto& [key, value] : QueryParams(request.query)) {
    if (key == "pod") pod = value;
    if (key == "limit") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
      if (ec != std::errc() || end != value.data() + value.size())
        return BadRequest("limit: not a number");
    }
  }
  // Decisions are immutable and shared: hold the lock only to pick them.
  std::vector<std::shared_ptr<const scoring::Decision>> picked;
  {
    std::lock_guard lock(mu_);
    for (auto it = decisions_.rbegin(); it != decisions_.rend() && picked.size() < limit; ++it) {
      const scoring::Decision& d = *it->whole;
      if (!pod.empty() && d.pod_namespace + "/" + d.pod_name != pod) continue;
      picked.push_back(it->whole);
    }
  }
  json items = json::array();
  for (const auto& d : picked) items.push_back(scoring::DecisionToJson(*d));
  return server::HttpResponse::Json(
      200, DumpUntrusted(json{{"kind", "DecisionList"}, {"items", items}}));
}

server::HttpResponse ExtenderService::Predictions(const server::HttpRequest& request) const {
  std::string cpu_text = "1";
  std::vector<std::string> nodes;
  for (const auto& [key, value] : QueryParams(request.query)) {
    if (key == "cpu") cpu_text = value;
    if (key == "node") nodes.push_back(value);
  }
  auto cpu = kube::ParseCpuCores(cpu_text);
  if (!cpu.ok() || *cpu < 0) return BadRequest("cpu: not a CPU quantity");
  if (nodes.empty() && deps_.snapshot) {
    if (auto snapshot = deps_.snapshot(); snapshot != nullptr) {
      for (const cluster::NodePtr& node : snapshot->nodes) nodes.push_back(node->name);
    }
  }
  const auto now = deps_.clock.now();
  std::vector<predict::NodePower> power = PredictFor(nodes, *cpu, true, now);
  return server::HttpResponse::Json(200,
                                    DumpUntrusted(predict::PredictionDocument(power, *cpu, now)));
}

std::vector<predict::NodePower> ExtenderService::PredictNow(
    const std::vector<std::string>& nodes) const {
  return PredictFor(nodes, 0, false, deps_.clock.now());
}

std::vector<predict::NodePower> ExtenderService::PredictFor(const std::vector<std::string>& nodes,
                                                            double cpu, bool as_scored,
                                                            telemetry::SteadyTime now) const {
  if (deps_.predictor == nullptr) return {};
  auto snapshot = deps_.snapshot ? deps_.snapshot() : nullptr;
  std::optional<telemetry::TelemetryView> view;
  if (deps_.telemetry != nullptr) view = deps_.telemetry->View(telemetry::Wait::kNever);
  predict::PowerQuery query;
  query.extra_cpu_cores = cpu;
  query.deadline = deps_.deadline;
  query.now = now;
  // Each node's CPU as prioritize reads it: the reading (allocatable standing in for a missing
  // capacity) and, as scored, the pods bound but not yet in the usage metrics.
  const auto wall_now = deps_.wall_now();
  std::vector<predict::NodeFacts> facts;
  std::map<std::string, telemetry::NodeReading> readings;
  for (const std::string& name : nodes) {
    const cluster::NodeState* cached = snapshot != nullptr ? snapshot->FindNode(name) : nullptr;
    cluster::NodeState unknown;
    unknown.name = unknown.facts.name = name;
    const cluster::NodeState& node = cached != nullptr ? *cached : unknown;
    scoring::NodeCpu inputs = scoring::NodeCpuOf(node, view ? &*view : nullptr, wall_now);
    facts.push_back(node.facts);
    readings[name] = std::move(inputs.reading);
    if (as_scored) query.unmeasured.push_back(inputs.unmeasured);
  }
  // With the model's parameters and the fill cost, as `predict --source local` shows them.
  if (as_scored) {
    return predict::PredictNodePowerWithFill(facts, readings, *deps_.config, *deps_.predictor,
                                             query);
  }
  return predict::PredictNodePower(facts, readings, *deps_.config, *deps_.predictor, query);
}

server::HttpResponse ExtenderService::Score(const server::HttpRequest& request) const {
  // A pod object is a few levels deep; the limit keeps hostile nesting off the stack.
  json body = ParseJsonBounded(request.body, kKubeJsonLimits);
  if (!body.is_object()) return BadRequest("body: not a JSON object (or nested too deeply)");
  auto pod = body.find("pod");
  if (pod == body.end() || !pod->is_object()) return BadRequest("pod: not an object");
  std::vector<std::string> nodes;
  auto names = body.find("nodes");
  if (names == body.end() || !names->is_array()) return BadRequest("nodes: not a list");
  if (auto why = TooManyNodes(names->size()); !why.empty()) return BadRequest(why);
  for (const json& name : *names) {
    if (!name.is_string()) return BadRequest("nodes: holds a non-string");
    nodes.push_back(name.get<std::string>());
  }
  scoring::Decision filter = core_.Filter(*pod, nodes, json::array());
  std::vector<std::string> passed;
  for (const scoring::NodeDecision& n : filter.nodes) {
    if (n.passed != false) passed.push_back(n.node);
  }
  json prioritize = nullptr;
  if (!passed.empty()) {
    prioritize = scoring::DecisionToJson(core_.Prioritize(*pod, passed, json::array()));
  }
  return server::HttpResponse::Json(200,
                                    DumpUntrusted(json{{"kind", "ScoreResult"},
                                                       {"filter", scoring::DecisionToJson(filter)},
                                                       {"prioritize", prioritize}}));
}

void ExtenderService::CollectMetrics() {
  const HeapStats heap = ReadHeapStats();
  heap_.Set({"allocated"}, static_cast<double>(heap.allocated));
  heap_.Set({"active"}, static_cast<double>(heap.active));
  heap_.Set({"resident"}, static_cast<double>(heap.resident));
  heap_.Set({"mapped"}, static_cast<double>(heap.mapped));
  if (deps_.telemetry == nullptr) return;
  for (const auto& source : deps_.telemetry->Sources()) {
    if (source.age) {
      telemetry_age_.Set({source.source}, std::chrono::duration<double>(*source.age).count());
    }
    telemetry_failing_.Set({source.source}, source.failing ? 1 : 0);
  }
}

void ExtenderService::AddOpsRoutes(server::HttpServer& ops) {
  // Each may take a while (its work grows with the cluster or the request): on the workers.
  const server::RouteThreads workers = server::RouteThreads::kWorker;
  ops.Route(
      "GET", kDecisionsPath, [this](const server::HttpRequest& r) { return Decisions(r); },
      workers);
  ops.Route(
      "POST", kScorePath, [this](const server::HttpRequest& r) { return Score(r); }, workers);
  ops.Route(
      "GET", predict::kPredictionsPath,
      [this](const server::HttpRequest& r) { return Predictions(r); }, workers);
}

}  // namespace powerctl::extender
