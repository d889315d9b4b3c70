#pragma once
// Writes decision records (decision_batch.h) in the background, so recording a decision never
// delays or fails the scheduler's request: the request thread only queues the decision; one
// thread of its own builds the records and creates them through the API server.
//
// Decisions are batched per namespace: a batch is written as one Event when it holds
// kMaxBatchDecisions decisions or kMaxBatchAnnotationBytes of them, or `batch_interval` after
// its first decision. A pod scheduled alone is recorded within that interval, as one Event on
// it; pods scheduled in a burst share an Event per batch, so the API server writes one object
// for up to a hundred pods instead of one each.
//
// The queue holds each decision cut to what its Event needs (DecisionForEvent) and is
// bounded (1,000 decisions and 50,000 node entries in all); when the API server is slow or
// refusing, new decisions are dropped and counted, never the request. Every replica writes the
// Events of its own decisions (no Lease: each decision is made by exactly one replica).
//
// The thread sleeps until its oldest open batch is due, and a decision submitted meanwhile does
// not wake it (only one that finds it asleep with nothing open, or a queue half full): under
// load it wakes about once per batch interval and takes the whole queue at once, instead of
// being woken for every pod. A batch counts its interval from its first decision's Submit.
//
// Stop() writes what is queued for a short while, then cancels the request in flight (each
// is also capped at `request_timeout`), so a hung API server cannot hold up a shutdown.
//
// Metrics: powerctl_extender_decision_events_total{result="written|failed|dropped"} counts
// decisions (and the TLS warnings of SubmitEvent); powerctl_extender_decision_event_writes_total
// counts the Events created.

#include "core/extender/decision_batch.h"
#include "core/extender/decision_events.h"
#include "core/kube/client.h"
#include "core/scoring/decision.h"
#include "core/server/metrics_registry.h"

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>

namespace powerctl::extender {

// The writer thread's name (at most 15 characters, Linux's limit).
inline constexpr const char* kDecisionWriterThreadName = "powerctl-events";

struct DecisionEventWriterOptions {
  std::size_t max_queued = 1000;
  std::size_t max_queued_nodes = 50000;
  std::string instance;  // reportingInstance (the replica's identity)
  // Per request: an Event is worth less than a full API timeout of a stuck writer.
  std::chrono::milliseconds request_timeout{10000};
  // How long a batch waits for more decisions of its namespace after its first.
  std::chrono::milliseconds batch_interval{1000};
  std::function<std::chrono::system_clock::time_point()> wall_now = [] {
    return std::chrono::system_clock::now();
  };
  std::shared_ptr<spdlog::logger> log;  // may be null
};

class DecisionEventWriter {
 public:
  // The writer's own client over `transport` (requests cancellable by Stop). `metrics` must
  // outlive the writer.
  DecisionEventWriter(std::unique_ptr<kube::HttpTransport> transport,
                      kube::ClientOptions client_options, server::MetricsRegistry& metrics,
                      DecisionEventWriterOptions options);
  ~DecisionEventWriter();
  DecisionEventWriter(const DecisionEventWriter&) = delete;
  DecisionEventWriter& operator=(const DecisionEventWriter&) = delete;

  // Queues what the decision's record needs; never blocks on I/O. Decisions that get no
  // record (DecisionEventReason) are not queued. Cutting a large decision down costs a pass over
  // its nodes: call it after the answer is sent.
  void Submit(std::shared_ptr<const scoring::Decision> decision);
  // Queues an Event built elsewhere (the TLS warnings, TlsFailureEvent) for `event_namespace`;
  // never blocks. Few are kept (kMaxQueuedOther): they come at most once a minute.
  void SubmitEvent(std::string event_namespace, nlohmann::json event);

  void Start();  // the writer thread; once
  // Writes what is queued for at most `drain` more, then cancels the request in flight,
  // drops the rest and joins.
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(2000));

  // Writes every queued decision and every open batch on the caller's thread (tests, with the
  // thread not started: batches belong to the thread that writes).
  void Flush();

 private:
  void Run();
  void Drain();  // the thread's loop, until stopped
  // A queued decision and when it was submitted (its batch's interval starts then).
  struct Queued {
    std::shared_ptr<const scoring::Decision> decision;
    std::chrono::steady_clock::time_point submitted;
  };
  // Adds the decision to its namespace's batch, writing the batch first if it is full.
  void Add(const Queued& queued);
  void WriteBatch(const DecisionBatch& batch);
  // Writes the batches opened at or before `opened_before` (all of them with time_point::max()).
  void WriteDue(std::chrono::steady_clock::time_point opened_before);
  // When the oldest open batch is due; time_point::max() when none is open.
  std::chrono::steady_clock::time_point NextDue() const;
  void WriteOther(const std::string& event_namespace, const nlohmann::json& event);
  // Moves both queues into the caller's (under the lock).
  void TakeAllLocked(std::deque<std::pair<std::string, nlohmann::json>>& others,
                     std::deque<Queued>& decisions);
  // Writes what was taken from the queues: the prepared Events, then the decisions into their
  // batches, then the batches now due.
  void Process(std::deque<std::pair<std::string, nlohmann::json>>& others,
               std::deque<Queued>& decisions);
  std::string NextSuffix();

  std::atomic<bool> cancel_{false};  // set by Stop when the drain time is up
  DecisionEventWriterOptions options_;
  std::unique_ptr<kube::Client> client_;
  server::CounterFamily& events_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable finished_cv_;
  bool finished_ = false;  // the thread has left Run
  std::deque<Queued> queue_;
  static constexpr std::size_t kMaxQueuedOther = 16;
  std::deque<std::pair<std::string, nlohmann::json>> other_;  // SubmitEvent's
  std::size_t queued_nodes_ = 0;
  bool stopping_ = false;
  // The thread sleeps until an open batch is due and will take the queue then: Submit need
  // not wake it.
  bool sleeping_until_due_ = false;
  std::chrono::steady_clock::time_point drain_until_{};
  struct OpenBatch {
    DecisionBatch batch;
    std::chrono::steady_clock::time_point opened;
  };
  std::map<std::string, OpenBatch> open_;  // by namespace (writer thread only)
  server::CounterFamily& writes_;
  std::uint64_t failures_ = 0;  // for log rate limiting (writer thread only)
  std::mt19937_64 random_;      // event name suffixes (writer thread only)
  std::thread thread_;
};

}  // namespace powerctl::extender
