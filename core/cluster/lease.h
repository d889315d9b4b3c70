#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it, so
// that of several schedule-server replicas only one writes to the cluster (node labels, pod
// touches) while all of them answer kube-scheduler.
//
// The decision (DecideLease) is a pure function of what was observed and when; LeaseElector
// does one round of I/O per Step() (GET, then POST or PUT with the resourceVersion read, so
// two candidates cannot both win: the slower gets 409); LeaderElection runs the rounds on a
// thread and gives the Lease up on Stop(), so a successor takes over at once.
//
// Expiry is judged like client-go: a Lease held by another replica is free once its record
// has not changed for leaseDurationSeconds *as measured by this replica's own steady clock*
// since it first saw that record. Comparing the holder's renewTime with this machine's wall
// clock would let clock skew between nodes hand the Lease to two replicas at once.

#include "core/common/clock.h"
#include "core/kube/client.h"

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace powerctl::cluster {

// The Lease `powerctl generate rbac` lets the extender's ServiceAccount update.
inline constexpr const char* kDefaultLeaseName = "powerctl-extender";

// The fields of a Lease that leader election reads and writes.
struct LeaseRecord {
  std::string holder;        // spec.holderIdentity; "" = nobody holds it
  int duration_seconds = 0;  // spec.leaseDurationSeconds; 0 = unset
  std::string acquire_time;  // spec.acquireTime (MicroTime, RFC 3339 with microseconds)
  std::string renew_time;    // spec.renewTime
  int transitions = 0;       // spec.leaseTransitions
  std::string resource_version;
};

LeaseRecord LeaseRecordFromJson(const nlohmann::json& lease);
// A Lease object carrying `record` (its resourceVersion when set, for a conditional PUT).
nlohmann::json LeaseToJson(const std::string& ns, const std::string& name,
                           const LeaseRecord& record);
// "2024-05-01T12:00:00.123456Z", the wire form of metav1.MicroTime.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

struct LeaseTiming {
  std::chrono::seconds duration{15};               // leaseDurationSeconds we write
  std::chrono::milliseconds renew_interval{5000};  // how often the leader renews
  std::chrono::milliseconds retry_interval{2000};  // how often the others look
  // A leader that could not renew for this long stops acting as leader. Shorter than
  // `duration`, so it stops before anyone else may take the Lease over.
  std::chrono::milliseconds renew_deadline{10000};
};

// What this replica saw of the Lease, and when (its steady clock) that record first appeared.
struct LeaseObservation {
  LeaseRecord record;
  std::chrono::steady_clock::time_point since;
};

enum class LeaseAction {
  kWait,     // another replica holds it and it has not expired
  kAcquire,  // free, released or expired: take it over
  kRenew,    // this replica holds it
};

// `default_duration` applies when the Lease names no duration.
LeaseAction DecideLease(const LeaseObservation& observed, const std::string& identity,
                        std::chrono::steady_clock::time_point now,
                        std::chrono::seconds default_duration);

// "<hostname>_<pid>": unique per process, and readable in `kubectl get lease`.
std::string DefaultLeaseIdentity();

struct LeaseElectorOptions {
  std::string namespace_;
  std::string name = kDefaultLeaseName;
  std::string identity;  // required
  LeaseTiming timing;
  Clock clock;  // steady time for expiry and renew deadlines
  std::function<std::chrono::system_clock::time_point()> wall_now = [] {
    return std::chrono::system_clock::now();
  };
  std::shared_ptr<spdlog::logger> log;  // may be null
};

// One replica's view of the Lease. Not thread-safe: LeaderElection calls it from one thread.
class LeaseElector {
 public:
  // `client` must outlive the elector; its retries should be few (a round is repeated anyway).
  LeaseElector(kube::Client& client, LeaseElectorOptions options);

  // One round: read the Lease and create, take over or renew it as DecideLease says. Returns
  // whether this replica leads now. A failed request keeps a leader leading until
  // renew_deadline has passed since its last renewal; 409 (another replica won) never does.
  bool Step();
  // Clears holderIdentity when this replica holds the Lease, so a successor need not wait for
  // it to expire. Errors are logged: the Lease then simply expires.
  void Release();

  bool leader() const { return leader_; }
  std::chrono::steady_clock::time_point last_renewal() const { return last_renewal_; }
  const std::string& last_error() const { return last_error_; }
  std::string Path() const;

 private:
  bool Failed(const Error& error);
  bool Won(const kube::json& lease, std::chrono::steady_clock::time_point now);

  kube::Client& client_;
  LeaseElectorOptions options_;
  std::optional<LeaseObservation> observed_;
  bool leader_ = false;
  std::chrono::steady_clock::time_point last_renewal_{};
  std::string last_error_;
};

// Runs LeaseElector rounds on a thread: renew_interval apart while leading, retry_interval
// otherwise. `on_change` is called on that thread when leadership is gained or lost
// (including the loss on Stop()).
class LeaderElection {
 public:
  using OnChange = std::function<void(bool leader)>;

  LeaderElection(std::unique_ptr<kube::Client> client, LeaseElectorOptions options,
                 OnChange on_change);
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  void Start();  // once
  void Stop();   // joins, then releases the Lease if held; idempotent
  // True only while the last renewal is younger than renew_deadline, so a round stuck on a
  // slow API server does not leave a stale leader writing.
  bool IsLeader() const;

 private:
  void Run();
  void Set(bool leader);

  std::unique_ptr<kube::Client> client_;
  LeaseElectorOptions options_;
  LeaseElector elector_;
  OnChange on_change_;
  std::atomic<bool> leader_{false};
  std::atomic<std::int64_t> renewed_at_{0};  // steady clock, nanoseconds since its epoch
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace powerctl::cluster
