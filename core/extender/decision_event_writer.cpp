#include "core/extender/decision_event_writer.h"

#include <fmt/format.h>

#include <chrono>

namespace powerctl::extender {

DecisionEventWriter::DecisionEventWriter(std::unique_ptr<kube::Client> client,
                                         MetricsRegistry& metrics,
                                         DecisionEventWriterOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      events_(metrics.Counter("powerctl_extender_decision_events_total",
                              "Decision Events for explain, by result (written, failed, dropped "
                              "because the queue was full)",
                              {"result"})),
      random_(std::random_device{}()) {
  for (const char* result : {"written", "failed", "dropped"}) events_.Inc({result}, 0);
}

DecisionEventWriter::~DecisionEventWriter() {
  Stop(std::chrono::milliseconds(0));
}

void DecisionEventWriter::Submit(std::shared_ptr<const scoring::Decision> decision) {
  if (decision == nullptr) return;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= options_.max_queued ||
        (!queue_.empty() && queued_nodes_ + decision->nodes.size() > options_.max_queued_nodes)) {
      events_.Inc({"dropped"});
      return;
    }
    queued_nodes_ += decision->nodes.size();
    queue_.push_back(std::move(decision));
  }
  wake_.notify_one();
}

std::string DecisionEventWriter::NextSuffix() {
  return fmt::format("{:016x}", random_());
}

void DecisionEventWriter::Write(const scoring::Decision& decision) {
  DecisionEventSource source{options_.instance, NextSuffix(), options_.wall_now()};
  std::optional<nlohmann::json> event = DecisionEvent(decision, source);
  if (!event) return;
  const std::string& ns = decision.pod_namespace;
  auto created = client_->Create("/api/v1/namespaces/" + ns + "/events", *event);
  if (created.ok()) {
    events_.Inc({"written"});
    return;
  }
  events_.Inc({"failed"});
  // The first failure and then every 100th: a refusing API server must not flood the log.
  if (options_.log && failures_++ % 100 == 0) {
    options_.log->warn("decision event for pod {}/{} not written ({} so far): {}", ns,
                       decision.pod_name, failures_, created.error().message);
  }
}

void DecisionEventWriter::Flush() {
  for (;;) {
    std::shared_ptr<const scoring::Decision> next;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      queued_nodes_ -= next->nodes.size();
    }
    Write(*next);
  }
}

void DecisionEventWriter::Run() {
  for (;;) {
    std::shared_ptr<const scoring::Decision> next;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      if (stopping_ && std::chrono::steady_clock::now() >= drain_until_) {
        events_.Inc({"dropped"}, static_cast<double>(queue_.size()));
        queue_.clear();
        queued_nodes_ = 0;
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      queued_nodes_ -= next->nodes.size();
    }
    Write(*next);
  }
}

void DecisionEventWriter::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
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
  if (thread_.joinable()) thread_.join();
}

}  // namespace powerctl::extender
