#include "core/extender/decision_event_writer.h"

#include <fmt/format.h>

#include <pthread.h>

#include <algorithm>
#include <chrono>

namespace powerctl::extender {
namespace {

// Caps each request's time and makes it cancellable by the writer's Stop.
class StoppableTransport : public kube::HttpTransport {
 public:
  StoppableTransport(std::unique_ptr<kube::HttpTransport> inner, const std::atomic<bool>* cancel,
                     std::chrono::milliseconds timeout)
      : inner_(std::move(inner)), cancel_(cancel), timeout_(timeout) {}

  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    kube::HttpRequest capped = request;
    capped.cancel = cancel_;
    if (timeout_.count() > 0 && (capped.timeout.count() == 0 || capped.timeout > timeout_)) {
      capped.timeout = timeout_;
    }
    return inner_->Send(capped);
  }
  Result<long> Stream(const kube::HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) override {
    return inner_->Stream(request, on_line, error_body);  // the writer never watches
  }

 private:
  std::unique_ptr<kube::HttpTransport> inner_;
  const std::atomic<bool>* cancel_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

DecisionEventWriter::DecisionEventWriter(std::unique_ptr<kube::HttpTransport> transport,
                                         kube::ClientOptions client_options,
                                         server::MetricsRegistry& metrics,
                                         DecisionEventWriterOptions options)
    : options_(std::move(options)),
      client_(std::make_unique<kube::Client>(
          std::make_unique<StoppableTransport>(std::move(transport), &cancel_,
                                               options_.request_timeout),
          std::move(client_options))),
      events_(metrics.Counter("powerctl_extender_decision_events_total",
                              "Decision Events for explain, by result (written, failed, dropped "
                              "because the queue was full or at shutdown)",
                              {"result"})),
      writes_(metrics.Counter("powerctl_extender_decision_event_writes_total",
                              "Events created for decisions (each holds a batch of them)", {})),
      random_(std::random_device{}()) {
  writes_.Inc({}, 0);
  for (const char* result : {"written", "failed", "dropped"}) events_.Inc({result}, 0);
}

DecisionEventWriter::~DecisionEventWriter() {
  Stop(std::chrono::milliseconds(0));
}

void DecisionEventWriter::Submit(std::shared_ptr<const scoring::Decision> decision) {
  // Most filters reject no node and get no record: they take no place in the queue (where
  // kube-scheduler's two calls per pod would otherwise fill it twice as fast).
  if (decision == nullptr || DecisionEventReason(*decision) == nullptr) return;
  // Queue only what the Event needs: under load the queue holds many decisions, and a
  // 5,000-node one is 2 MiB whole (ten of them were a third of the server's memory).
  if (decision->nodes.size() > kEventScoredNodes) {
    decision = std::make_shared<const scoring::Decision>(DecisionForEvent(*decision));
  }
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= options_.max_queued ||
        (!queue_.empty() && queued_nodes_ + decision->nodes.size() > options_.max_queued_nodes)) {
      events_.Inc({"dropped"});
      return;
    }
    queued_nodes_ += decision->nodes.size();
    queue_.push_back({std::move(decision), std::chrono::steady_clock::now()});
    // A thread asleep until a batch is due takes this then; wake it early only before the
    // queue can fill. A wake per decision cost a context switch per scheduled pod.
    wake = !sleeping_until_due_ || 2 * queue_.size() >= options_.max_queued ||
           2 * queued_nodes_ >= options_.max_queued_nodes;
  }
  if (wake) wake_.notify_one();
}

void DecisionEventWriter::SubmitEvent(std::string event_namespace, nlohmann::json event) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || other_.size() >= kMaxQueuedOther) {
      events_.Inc({"dropped"});
      return;
    }
    other_.emplace_back(std::move(event_namespace), std::move(event));
  }
  wake_.notify_one();
}

void DecisionEventWriter::TakeAllLocked(std::deque<std::pair<std::string, nlohmann::json>>& others,
                                        std::deque<Queued>& decisions) {
  others.swap(other_);
  decisions.swap(queue_);
  queued_nodes_ = 0;
}

void DecisionEventWriter::Process(std::deque<std::pair<std::string, nlohmann::json>>& others,
                                  std::deque<Queued>& decisions) {
  for (const auto& [event_namespace, event] : others) WriteOther(event_namespace, event);
  for (const Queued& queued : decisions) Add(queued);
  others.clear();
  decisions.clear();
}

void DecisionEventWriter::WriteOther(const std::string& event_namespace,
                                     const nlohmann::json& event) {
  Status created = client_->CreateOnly("/api/v1/namespaces/" + event_namespace + "/events", event);
  if (created.ok()) {
    events_.Inc({"written"});
  } else if (kube::IsCancelled(created.error())) {
    events_.Inc({"dropped"});
  } else {
    events_.Inc({"failed"});
    if (options_.log) {
      options_.log->warn("event in {} not written: {}", event_namespace, created.error().message);
    }
  }
}

std::string DecisionEventWriter::NextSuffix() {
  return fmt::format("{:016x}", random_());
}

void DecisionEventWriter::Add(const Queued& queued) {
  const scoring::Decision& decision = *queued.decision;
  auto at = open_.find(decision.pod_namespace);
  std::optional<BatchedDecision> entry = BatchEntry(decision, at == open_.end());
  if (!entry) return;
  if (at != open_.end() && !at->second.batch.Fits(*entry)) {
    WriteBatch(at->second.batch);
    open_.erase(at);
    at = open_.end();
    entry->message = DecisionEventMessage(decision);  // now the first of a new batch
  }
  if (at == open_.end()) {
    at = open_
             .emplace(decision.pod_namespace,
                      OpenBatch{DecisionBatch(decision.pod_namespace), queued.submitted})
             .first;
  }
  at->second.batch.Add(std::move(*entry));
  if (at->second.batch.size() >= kMaxBatchDecisions) {
    WriteBatch(at->second.batch);
    open_.erase(at);
  }
}

void DecisionEventWriter::WriteBatch(const DecisionBatch& batch) {
  const double decisions = static_cast<double>(batch.size());
  if (cancel_) {  // Stop ran out of drain time
    events_.Inc({"dropped"}, decisions);
    return;
  }
  DecisionEventSource source{options_.instance, NextSuffix(), options_.wall_now()};
  const std::string& ns = batch.pod_namespace();
  Status created =
      client_->CreateOnly("/api/v1/namespaces/" + ns + "/events", batch.ToEvent(source));
  if (created.ok()) {
    events_.Inc({"written"}, decisions);
    writes_.Inc({});
    return;
  }
  if (kube::IsCancelled(created.error())) {
    events_.Inc({"dropped"}, decisions);
    return;
  }
  events_.Inc({"failed"}, decisions);
  // The first failure and then every 100th: a refusing API server must not flood the log.
  if (options_.log && failures_++ % 100 == 0) {
    options_.log->warn("decision event for {} pods in {} not written ({} so far): {}", batch.size(),
                       ns, failures_, created.error().message);
  }
}

void DecisionEventWriter::WriteDue(std::chrono::steady_clock::time_point opened_before) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.opened <= opened_before) {
      WriteBatch(it->second.batch);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

std::chrono::steady_clock::time_point DecisionEventWriter::NextDue() const {
  auto due = std::chrono::steady_clock::time_point::max();
  for (const auto& [ns, open] : open_) due = std::min(due, open.opened + options_.batch_interval);
  return due;
}

void DecisionEventWriter::Flush() {
  std::deque<std::pair<std::string, nlohmann::json>> others;
  std::deque<Queued> decisions;
  {
    std::lock_guard lock(mu_);
    TakeAllLocked(others, decisions);
  }
  Process(others, decisions);
  WriteDue(std::chrono::steady_clock::time_point::max());
}

void DecisionEventWriter::Run() {
  Drain();
  std::lock_guard lock(mu_);
  finished_ = true;
  finished_cv_.notify_all();
}

void DecisionEventWriter::Drain() {
  std::deque<std::pair<std::string, nlohmann::json>> others;
  std::deque<Queued> decisions;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stopping_ || !queue_.empty() || !other_.empty(); };
      if (const auto due = NextDue(); due == std::chrono::steady_clock::time_point::max()) {
        wake_.wait(lock, ready);
      } else {
        sleeping_until_due_ = true;
        wake_.wait_until(lock, due, ready);
        sleeping_until_due_ = false;
      }
      stopping = stopping_;
      if (stopping_ && std::chrono::steady_clock::now() >= drain_until_) {
        std::size_t open_decisions = 0;
        for (const auto& [ns, open] : open_) open_decisions += open.batch.size();
        events_.Inc({"dropped"},
                    static_cast<double>(queue_.size() + other_.size() + open_decisions));
        queue_.clear();
        other_.clear();
        open_.clear();
        queued_nodes_ = 0;
        return;
      }
      // All of it at once: one lock, and batches filled in one go.
      TakeAllLocked(others, decisions);
    }
    const bool idle = others.empty() && decisions.empty();
    Process(others, decisions);
    if (stopping && idle) {  // nothing queued: write the open batches and leave
      WriteDue(std::chrono::steady_clock::time_point::max());
      return;
    }
    WriteDue(std::chrono::steady_clock::now() - options_.batch_interval);
  }
}

void DecisionEventWriter::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] {
    // Named, so its CPU can be told from the request threads' (top -H, /proc/PID/task).
    pthread_setname_np(pthread_self(), kDecisionWriterThreadName);
    Run();
  });
}

void DecisionEventWriter::Stop(std::chrono::milliseconds drain) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      drain_until_ = std::chrono::steady_clock::now() + drain;
    }
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mu_);
    // A request still in flight when the drain time is up is cancelled: the API server may
    // hang, and a shutdown must not wait for its timeout.
    if (!finished_cv_.wait_until(lock, drain_until_, [&] { return finished_; })) {
      cancel_ = true;
    }
  }
  thread_.join();
}

}  // namespace powerctl::extender
