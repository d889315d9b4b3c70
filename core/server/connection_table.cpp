// The open connections of one server and the limits on them: who is let in, and who is closed
// to make room. The rules (HttpServerLimits) keep an unauthenticated or silent peer from
// starving peers that have proved themselves, and one peer from taking every slot.
#include "core/server/http_server_internal.h"

#include <algorithm>

namespace powerctl::server::internal {

ConnectionTable::Entries::iterator ConnectionTable::Oldest(std::initializer_list<Stage> stages,
                                                           const std::string& peer) {
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (std::find(stages.begin(), stages.end(), e.stage) == stages.end()) continue;
    if (!peer.empty() && e.peer != peer) continue;
    if (oldest == entries_.end() || e.since < oldest->second.since) oldest = it;
  }
  return oldest;
}

void ConnectionTable::Forget(Entries::iterator it) {
  if (it->second.stage == Stage::kPending) --pending_;
  if (auto peer = per_peer_.find(it->second.peer); peer != per_peer_.end() && --peer->second == 0)
    per_peer_.erase(peer);
  entries_.erase(it);
  cv_.notify_all();
}

void ConnectionTable::Evict(Entries::iterator it) {
  it->second.closer(true);  // it only posts to the connection's strand: safe under the lock
  Forget(it);
  ++closed_for_room_;
}

std::optional<std::uint64_t> ConnectionTable::Admit(const std::string& peer, Closer closer) {
  std::lock_guard lock(mu_);
  if (auto count = per_peer_.find(peer);
      count != per_peer_.end() && count->second >= limits_.max_connections_per_peer) {
    auto victim = Oldest({Stage::kPending, Stage::kIdle}, peer);
    if (victim == entries_.end()) return std::nullopt;
    Evict(victim);
  }
  if (pending_ >= limits_.max_pending_connections) {
    auto victim = Oldest({Stage::kPending}, "");
    if (victim == entries_.end()) return std::nullopt;  // max_pending_connections == 0
    Evict(victim);
  }
  std::uint64_t id = next_id_++;
  entries_.emplace(id, Entry{peer, Stage::kPending, ++tick_, std::move(closer)});
  ++per_peer_[peer];
  ++pending_;
  return id;
}

bool ConnectionTable::Establish(std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;  // closed to make room meanwhile
  if (it->second.stage != Stage::kPending) return true;
  if (entries_.size() - pending_ >= limits_.max_connections) {
    auto victim = Oldest({Stage::kIdle}, "");
    if (victim == entries_.end()) return false;
    Evict(victim);
  }
  it->second.stage = Stage::kBusy;
  it->second.since = ++tick_;
  --pending_;
  return true;
}

void ConnectionTable::SetIdle(std::uint64_t id, bool idle) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.stage == Stage::kPending) return;
  it->second.stage = idle ? Stage::kIdle : Stage::kBusy;
  it->second.since = ++tick_;
}

void ConnectionTable::Unregister(std::uint64_t id) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) Forget(it);
}

void ConnectionTable::CloseConnections(bool all) {
  std::vector<Closer> closers;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, entry] : entries_) closers.push_back(entry.closer);
  }
  for (const Closer& closer : closers) closer(all);
}

bool ConnectionTable::WaitNoConnections(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return entries_.empty(); });
}

ConnectionTable::Counts ConnectionTable::counts() const {
  std::lock_guard lock(mu_);
  return {pending_, entries_.size() - pending_, closed_for_room_};
}

}  // namespace powerctl::server::internal
