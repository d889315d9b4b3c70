#include "core/extender/decision_event_writer.h"

#include <fmt/format.h>

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
      random_(std::random_device{}()) {
  for (const char* result : {"written", "failed", "dropped"}) events_.Inc({result}, 0);
}

DecisionEventWriter::~DecisionEventWriter() {
  Stop(std::chrono::milliseconds(0));
}

void DecisionEventWriter::Submit(std::shared_ptr<const scoring::Decision> decision) {
  if (decision == nullptr) return;
  // Queue only what the Event needs: under load the queue holds many decisions, and a
  // 5,000-node one is 2 MiB whole (ten of them were a third of the server's memory).
  if (decision->nodes.size() > kEventScoredNodes) {
    decision = std::make_shared<const scoring::Decision>(DecisionForEvent(*decision));
  }
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

bool DecisionEventWriter::PopLocked(std::pair<std::string, nlohmann::json>& other,
                                    std::shared_ptr<const scoring::Decision>& decision) {
  if (!other_.empty()) {
    other = std::move(other_.front());
    other_.pop_front();
    return true;
  }
  if (queue_.empty()) return false;
  decision = std::move(queue_.front());
  queue_.pop_front();
  queued_nodes_ -= decision->nodes.size();
  return true;
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

void DecisionEventWriter::Write(const scoring::Decision& decision) {
  DecisionEventSource source{options_.instance, NextSuffix(), options_.wall_now()};
  std::optional<nlohmann::json> event = DecisionEvent(decision, source);
  if (!event) return;
  const std::string& ns = decision.pod_namespace;
  Status created = client_->CreateOnly("/api/v1/namespaces/" + ns + "/events", *event);
  if (created.ok()) {
    events_.Inc({"written"});
    return;
  }
  if (kube::IsCancelled(created.error())) {  // Stop ran out of drain time
    events_.Inc({"dropped"});
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
    std::pair<std::string, nlohmann::json> other;
    std::shared_ptr<const scoring::Decision> next;
    {
      std::lock_guard lock(mu_);
      if (!PopLocked(other, next)) return;
    }
    if (next) {
      Write(*next);
    } else {
      WriteOther(other.first, other.second);
    }
  }
}

void DecisionEventWriter::Run() {
  Drain();
  std::lock_guard lock(mu_);
  finished_ = true;
  finished_cv_.notify_all();
}

void DecisionEventWriter::Drain() {
  for (;;) {
    std::pair<std::string, nlohmann::json> other;
    std::shared_ptr<const scoring::Decision> next;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !other_.empty(); });
      if (queue_.empty() && other_.empty()) return;  // stopping, nothing left
      if (stopping_ && std::chrono::steady_clock::now() >= drain_until_) {
        events_.Inc({"dropped"}, static_cast<double>(queue_.size() + other_.size()));
        queue_.clear();
        other_.clear();
        queued_nodes_ = 0;
        return;
      }
      PopLocked(other, next);
    }
    if (next) {
      Write(*next);
    } else {
      WriteOther(other.first, other.second);
    }
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
