// Leader election on a Lease: the pure decision, one round of I/O, and the thread running them.

#include "core/cluster/lease.h"

#include "core/common/host_name.h"
#include "core/common/json_fields.h"

#include <fmt/format.h>

#include <unistd.h>

#include <ctime>

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;

std::int64_t Ticks(SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

LeaseRecord LeaseRecordFromJson(const json& lease) {
  LeaseRecord r;
  r.holder = StringField(lease, {"spec", "holderIdentity"});
  r.duration_seconds = static_cast<int>(IntField(lease, {"spec", "leaseDurationSeconds"}));
  r.acquire_time = StringField(lease, {"spec", "acquireTime"});
  r.renew_time = StringField(lease, {"spec", "renewTime"});
  r.transitions = static_cast<int>(IntField(lease, {"spec", "leaseTransitions"}));
  r.resource_version = StringField(lease, {"metadata", "resourceVersion"});
  return r;
}

json LeaseToJson(const std::string& ns, const std::string& name, const LeaseRecord& record) {
  json spec = json::object();
  // An absent holder is how client-go writes a released Lease.
  if (!record.holder.empty()) spec["holderIdentity"] = record.holder;
  if (record.duration_seconds > 0) spec["leaseDurationSeconds"] = record.duration_seconds;
  if (!record.acquire_time.empty()) spec["acquireTime"] = record.acquire_time;
  if (!record.renew_time.empty()) spec["renewTime"] = record.renew_time;
  spec["leaseTransitions"] = record.transitions;
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!record.resource_version.empty()) metadata["resourceVersion"] = record.resource_version;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", metadata},
          {"spec", spec}};
}

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  std::time_t seconds = static_cast<std::time_t>(micros.count() / 1000000);
  long fraction = static_cast<long>(micros.count() % 1000000);
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, fraction);
}

LeaseAction DecideLease(const LeaseObservation& observed, const std::string& identity,
                        SteadyTime now, std::chrono::seconds default_duration) {
  const LeaseRecord& r = observed.record;
  if (r.holder.empty()) return LeaseAction::kAcquire;
  if (r.holder == identity) return LeaseAction::kRenew;
  std::chrono::seconds duration =
      r.duration_seconds > 0 ? std::chrono::seconds(r.duration_seconds) : default_duration;
  return now - observed.since >= duration ? LeaseAction::kAcquire : LeaseAction::kWait;
}

std::string DefaultLeaseIdentity() {
  std::string host = HostName();
  if (host.empty()) host = "powerctl";
  return fmt::format("{}_{}", host, static_cast<long>(::getpid()));
}

// ---- LeaseElector -------------------------------------------------------------------------

LeaseElector::LeaseElector(kube::Client& client, LeaseElectorOptions options)
    : client_(client), options_(std::move(options)) {}

std::string LeaseElector::Path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_ + "/leases/" +
         options_.name;
}

bool LeaseElector::Won(const json& lease, SteadyTime now) {
  observed_ = LeaseObservation{LeaseRecordFromJson(lease), now};
  leader_ = true;
  last_renewal_ = now;
  last_error_.clear();
  return true;
}

bool LeaseElector::Failed(const Error& error) {
  last_error_ = error.message;
  if (error.code == ErrorCode::kConflict) {
    // Another replica wrote the Lease between our GET and our write: it won this round.
    leader_ = false;
    observed_.reset();
    return false;
  }
  if (options_.log) options_.log->warn("lease {}: {}", Path(), error.message);
  if (leader_ && options_.clock.now() - last_renewal_ >= options_.timing.renew_deadline) {
    leader_ = false;
  }
  return leader_;
}

bool LeaseElector::Step() {
  SteadyTime now = options_.clock.now();
  std::string wall = FormatMicroTime(options_.wall_now());
  LeaseRecord mine;
  mine.holder = options_.identity;
  mine.duration_seconds = static_cast<int>(options_.timing.duration.count());
  mine.renew_time = wall;

  Result<json> got = client_.Get(Path());
  if (!got.ok() && got.error().code == ErrorCode::kNotFound) {
    mine.acquire_time = wall;
    Result<json> created =
        client_.Create("/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_ + "/leases",
                       LeaseToJson(options_.namespace_, options_.name, mine));
    return created.ok() ? Won(*created, now) : Failed(created.error());
  }
  if (!got.ok()) return Failed(got.error());

  LeaseRecord current = LeaseRecordFromJson(*got);
  if (!observed_ || observed_->record.resource_version != current.resource_version ||
      observed_->record.holder != current.holder) {
    observed_ = LeaseObservation{current, now};
  }
  LeaseAction action = DecideLease(*observed_, options_.identity, now, options_.timing.duration);
  if (action == LeaseAction::kWait) {
    leader_ = false;
    last_error_.clear();
    return false;
  }
  mine.resource_version = current.resource_version;
  mine.transitions = current.transitions;
  if (action == LeaseAction::kRenew) {
    mine.acquire_time = current.acquire_time;
  } else {
    mine.acquire_time = wall;
    // Counted like client-go: a change of holder, not the first acquisition of a free Lease.
    if (!current.holder.empty()) ++mine.transitions;
  }
  Result<json> written =
      client_.Replace(Path(), LeaseToJson(options_.namespace_, options_.name, mine));
  return written.ok() ? Won(*written, now) : Failed(written.error());
}

void LeaseElector::Release() {
  if (!leader_) return;
  leader_ = false;
  Result<json> got = client_.Get(Path());
  if (!got.ok()) {
    if (options_.log) options_.log->warn("lease {}: release: {}", Path(), got.error().message);
    return;
  }
  LeaseRecord record = LeaseRecordFromJson(*got);
  if (record.holder != options_.identity) return;  // already taken over
  record.holder.clear();
  record.duration_seconds = 1;
  record.renew_time = FormatMicroTime(options_.wall_now());
  Result<json> written =
      client_.Replace(Path(), LeaseToJson(options_.namespace_, options_.name, record));
  if (!written.ok() && options_.log) {
    options_.log->warn("lease {}: release: {}", Path(), written.error().message);
  }
}

// ---- LeaderElection -----------------------------------------------------------------------

LeaderElection::LeaderElection(std::unique_ptr<kube::Client> client, LeaseElectorOptions options,
                               OnChange on_change)
    : client_(std::move(client)),
      options_(options),
      elector_(*client_, std::move(options)),
      on_change_(std::move(on_change)) {}

LeaderElection::~LeaderElection() {
  Stop();
}

void LeaderElection::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElection::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (elector_.leader()) {
    elector_.Release();
    if (options_.log) options_.log->info("released lease {}", elector_.Path());
  }
  Set(false);
}

bool LeaderElection::IsLeader() const {
  if (!leader_.load()) return false;
  SteadyTime renewed{std::chrono::nanoseconds(renewed_at_.load())};
  return options_.clock.now() - renewed < options_.timing.renew_deadline;
}

void LeaderElection::Set(bool leader) {
  renewed_at_.store(Ticks(elector_.last_renewal()));
  if (leader_.exchange(leader) == leader) return;
  if (options_.log) {
    if (leader) {
      options_.log->info("leading: holding lease {} as {}", elector_.Path(), options_.identity);
    } else {
      options_.log->info("not leading any more (lease {}){}", elector_.Path(),
                         elector_.last_error().empty() ? "" : ": " + elector_.last_error());
    }
  }
  if (on_change_) on_change_(leader);
}

void LeaderElection::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    bool leader = elector_.Step();
    Set(leader);
    lock.lock();
    auto wait = leader ? options_.timing.renew_interval : options_.timing.retry_interval;
    wake_.wait_for(lock, wait, [this] { return stopping_; });
  }
}

}  // namespace powerctl::cluster
