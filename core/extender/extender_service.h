#pragma once
// The extender's verbs on top of the scheduling core: decode kube-scheduler's JSON, decide,
// encode the answer, count and time it, and keep the recent decisions for the ops port's
// read-only JSON (GET /v1/decisions, /v1/predictions), which `powerctl explain` and
// `powerctl predict` read through the API server's service proxy.

#include "core/extender/extender_handler.h"
#include "core/scoring/decision.h"
#include "core/scoring/scheduling_core.h"
#include "core/server/metrics_registry.h"

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace powerctl::extender {

inline constexpr const char* kDecisionsPath = "/v1/decisions";
inline constexpr const char* kScorePath = "/v1/score";

struct ExtenderServiceOptions {
  // Keeps the last `keep_decisions` decisions, and fewer when they hold more than
  // `keep_node_entries` per-node verdicts in all. Before dropping any, older decisions keep
  // only the nodes that explain them (the 20 best scored, the first 50 rejected; TopNodes): a
  // verdict is about 350 bytes (its components inline), so a whole 5,000-node decision is
  // about 1.7 MiB and 10,000 verdicts about 3.5 MiB. At 5,000 nodes that is the newest
  // decision whole and 250 older ones by their top nodes; the Decision Events keep the same
  // top nodes for longer, in the API server.
  std::size_t keep_decisions = 1000;
  std::size_t keep_node_entries = 10000;
  // A request naming more candidate nodes gets 400 (extender.maxRequestNodes): the work and
  // memory of every verb grow with the nodes it names.
  std::size_t max_request_nodes = 15000;
};

class ExtenderService : public ExtenderHandler {
 public:
  // `metrics` must outlive the service.
  ExtenderService(scoring::SchedulingDeps deps, server::MetricsRegistry& metrics,
                  ExtenderServiceOptions options = {});

  server::HttpResponse Filter(const server::HttpRequest& request) override;
  server::HttpResponse Prioritize(const server::HttpRequest& request) override;
  server::HttpResponse Preempt(const server::HttpRequest& request) override;

  // GET /v1/decisions[?pod=NAMESPACE/NAME][&limit=N]: newest first. The decisions are
  // serialised after the lock is let go, so reading them never holds up scheduling.
  server::HttpResponse Decisions(const server::HttpRequest& request) const;
  // GET /v1/predictions?cpu=Q[&node=N...]: the PowerPrediction document `powerctl predict`
  // prints, computed from this server's caches (all known nodes when none are named).
  server::HttpResponse Predictions(const server::HttpRequest& request) const;
  // POST /v1/score {"pod": POD, "nodes": [NAME...]}: what filter and then prioritize (over the
  // nodes the filter passed) would answer for that pod now, from this server's caches, as
  // {"kind":"ScoreResult","filter":DECISION,"prioritize":DECISION|null}. Not recorded: it is
  // a question (`powerctl score` and `explain` ask it), not a scheduling decision.
  server::HttpResponse Score(const server::HttpRequest& request) const;
  // Each node's power now at the CPU its usage metrics measure (nothing added, pods not yet
  // measured left out: measured power cannot show them either), from this server's caches:
  // what the model is compared with measured power by (model_accuracy_monitor.h).
  std::vector<predict::NodePower> PredictNow(const std::vector<std::string>& nodes) const;
  void AddOpsRoutes(server::HttpServer& ops);
  // Called with every decision after its answer is sent, on the request's thread (keep it
  // cheap: queue, do not write). Set before serving. A decision of more than 20 nodes comes
  // cut to the nodes that explain it (scoring::TopNodes: the 20 best-scored, the first 50
  // rejected), unless it rejected more than 50: the cut the record keeps, made once for both.
  using DecisionObserver = std::function<void(std::shared_ptr<const scoring::Decision>)>;
  void SetDecisionObserver(DecisionObserver observer) { observer_ = std::move(observer); }
  // Sets the gauges that describe state rather than requests (telemetry age per source).
  void CollectMetrics();

 private:
  server::HttpResponse Answer(const char* verb, int status, std::string body,
                              std::chrono::steady_clock::time_point start);
  // "" when `count` candidates are within max_request_nodes, else why the request is refused.
  std::string TooManyNodes(std::size_t count) const;
  // Keeps a decision for the ops port; AfterSend hands it to the observer.
  std::shared_ptr<const scoring::Decision> Record(scoring::Decision decision);
  // Brings the kept decisions back within their budget: older ones keep only their top nodes,
  // the oldest go. Run after the answer is sent (HttpResponse::after_send): compacting and
  // freeing a 5,000-node decision was a tenth of a prioritize. Record runs it itself when
  // nobody has for a while.
  void Trim();
  // The answer, set to pass `recorded` to the observer and Trim once it is sent. A filter's
  // (or preempt's) decision is recorded with its rejections only (KeepRejectedNodes).
  server::HttpResponse AfterSend(server::HttpResponse response,
                                 std::shared_ptr<const scoring::Decision> recorded);
  // `nodes`' power with `cpu` cores added; with `as_scored`, each node's CPU counts the pods
  // not yet measured and the fill cost is computed, as prioritize and `predict` see them.
  std::vector<predict::NodePower> PredictFor(const std::vector<std::string>& nodes, double cpu,
                                             bool as_scored, telemetry::SteadyTime now) const;

  scoring::SchedulingDeps deps_;
  scoring::SchedulingCore core_;
  server::CounterFamily& requests_;
  server::HistogramFamily& latency_;
  server::CounterFamily& node_verdicts_;
  server::CounterFamily& power_estimates_;
  server::CounterFamily& prepared_nodes_;
  server::GaugeFamily& telemetry_age_;
  server::GaugeFamily& telemetry_failing_;
  server::GaugeFamily& heap_;
  const ExtenderServiceOptions options_;
  mutable std::mutex mu_;
  DecisionObserver observer_;
  // A recorded decision, and its TopNodes cut once AfterSend has made it (what Trim keeps).
  struct Kept {
    std::shared_ptr<const scoring::Decision> whole;
    std::shared_ptr<const scoring::Decision> top;
  };
  // Shared with the observer (the Event writer), so recording never copies a decision.
  std::deque<Kept> decisions_;    // newest at the back
  std::size_t node_entries_ = 0;  // the sum of decisions_[i].whole->nodes.size()
  std::size_t compacted_ = 0;     // decisions_[0..compacted_) hold TopNodes only
};

}  // namespace powerctl::extender
