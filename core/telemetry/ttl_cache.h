#pragma once
// A cache of fetched values with two ages and single flight per key:
//   * younger than refresh_after: served as is;
//   * older, but younger than expire_after: served at once, and one background refresh
//     starts, so readers on the scoring path never wait on the network;
//   * no value, or older than expire_after: callers wait for the one fetch in flight.
// However many threads ask for a key, at most one fetch of it runs at a time, and every
// waiter gets that fetch's result (a failed fetch hands its error to its waiters, never an
// empty value). A failed refresh keeps the previous value until it expires. Ages are
// measured with the injectable Clock; waits are on a condition variable, not on the clock.
//
// Use a cheap-to-copy Value (e.g. std::shared_ptr<const T>): Get returns copies.

#include "core/common/clock.h"
#include "core/common/result.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace powerctl::telemetry {

struct TtlCacheOptions {
  std::chrono::milliseconds refresh_after{15000};
  std::chrono::milliseconds expire_after{std::chrono::minutes(10)};
  // After a failed fetch, Get waits this long before fetching again (answering with the
  // error, or the previous value), so a dead origin is not hammered by every reader.
  std::chrono::milliseconds retry_after{1000};
  int refresh_threads = 2;  // background refreshes run on these, started on first use
  Clock clock;
};

template <typename Key, typename Value>
class TtlCache {
 public:
  using Fetcher = std::function<Result<Value>(const Key&)>;

  struct Snapshot {
    std::optional<Value> value;                          // the last good value, if any
    std::chrono::steady_clock::time_point fetched_at{};  // when the fetch of `value` began
    std::optional<Error> last_error;                     // of the latest fetch, when it failed
    bool refreshing = false;
  };

  TtlCache(Fetcher fetch, TtlCacheOptions options)
      : fetch_(std::move(fetch)), options_(std::move(options)) {}
  TtlCache(const TtlCache&) = delete;
  TtlCache& operator=(const TtlCache&) = delete;

  // Stops the refresh threads after the refreshes that already run; queued ones are dropped.
  ~TtlCache() {
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      workers.swap(workers_);
    }
    work_cv_.notify_all();
    for (std::thread& t : workers) t.join();
  }

  Result<Value> Get(const Key& key) {
    std::unique_lock lock(mu_);
    Slot& slot = slots_[key];
    auto now = options_.clock.now();
    if (slot.value) {
      auto age = now - slot.fetched_at;
      if (age < options_.refresh_after) return *slot.value;
      if (age < options_.expire_after) {
        // After a failed refresh, the next waits retry_after: a dead origin is not hammered.
        if (!slot.error || now - slot.error_at >= options_.retry_after) {
          StartBackgroundLocked(key, slot);
        }
        return *slot.value;
      }
    } else if (slot.error && !slot.flight && now - slot.error_at < options_.retry_after) {
      return *slot.error;
    }
    return JoinOrFetchLocked(key, slot, lock);
  }

  // A fetch that began after this call (or the one in flight), waited for.
  Result<Value> Fetch(const Key& key) {
    std::unique_lock lock(mu_);
    return JoinOrFetchLocked(key, slots_[key], lock);
  }

  // Starts a background refresh unless one is running. For warming the cache at start.
  void Refresh(const Key& key) {
    std::lock_guard lock(mu_);
    StartBackgroundLocked(key, slots_[key]);
  }

  // What the cache holds, without waiting or fetching.
  Snapshot Peek(const Key& key) const {
    std::lock_guard lock(mu_);
    Snapshot out;
    auto it = slots_.find(key);
    if (it == slots_.end()) return out;
    out.value = it->second.value;
    out.fetched_at = it->second.fetched_at;
    out.last_error = it->second.error;
    out.refreshing = it->second.flight != nullptr;
    return out;
  }

  // Waits until no fetch is in flight (tests, and orderly shutdown).
  void WaitIdle() {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return in_flight_ == 0; });
  }

 private:
  struct Flight {
    bool done = false;
    std::optional<Result<Value>> result;
  };
  struct Slot {
    std::optional<Value> value;
    std::chrono::steady_clock::time_point fetched_at{};
    std::optional<Error> error;
    std::chrono::steady_clock::time_point error_at{};
    std::shared_ptr<Flight> flight;  // set while a fetch runs
  };
  struct Task {
    Key key;
    Slot* slot;
    std::shared_ptr<Flight> flight;
  };

  Result<Value> JoinOrFetchLocked(const Key& key, Slot& slot, std::unique_lock<std::mutex>& lock) {
    if (std::shared_ptr<Flight> flight = slot.flight) {
      done_cv_.wait(lock, [&] { return flight->done; });
      return *flight->result;
    }
    std::shared_ptr<Flight> flight = BeginLocked(slot);
    lock.unlock();
    auto started = options_.clock.now();
    Result<Value> result = SafeFetch(key);
    lock.lock();
    FinishLocked(slot, flight, result, started);
    return result;
  }

  std::shared_ptr<Flight> BeginLocked(Slot& slot) {
    slot.flight = std::make_shared<Flight>();
    ++in_flight_;
    return slot.flight;
  }

  void FinishLocked(Slot& slot, const std::shared_ptr<Flight>& flight, const Result<Value>& result,
                    std::chrono::steady_clock::time_point started) {
    if (result.ok()) {
      slot.value = result.value();
      slot.fetched_at = started;
      slot.error.reset();
    } else {
      slot.error = result.error();
      slot.error_at = options_.clock.now();
    }
    slot.flight.reset();
    flight->result = result;
    flight->done = true;
    --in_flight_;
    done_cv_.notify_all();
  }

  void StartBackgroundLocked(const Key& key, Slot& slot) {
    if (slot.flight || stopping_) return;
    // std::map nodes never move, so &slot stays valid while the task waits.
    queue_.push_back(Task{key, &slot, BeginLocked(slot)});
    if (workers_.empty()) {
      for (int i = 0; i < std::max(1, options_.refresh_threads); ++i) {
        try {
          workers_.emplace_back([this] { WorkLoop(); });
        } catch (const std::system_error&) {
          break;
        }
      }
    }
    if (workers_.empty()) {  // no thread at all: fail this refresh rather than leave it pending
      Task task = std::move(queue_.back());
      queue_.pop_back();
      FinishLocked(*task.slot, task.flight,
                   Error{ErrorCode::kInternal, "cannot start a refresh thread"},
                   options_.clock.now());
      return;
    }
    work_cv_.notify_one();
  }

  void WorkLoop() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        // Dropped refreshes still end their flights, so no waiter is left behind.
        while (!queue_.empty()) {
          Task task = std::move(queue_.front());
          queue_.pop_front();
          FinishLocked(*task.slot, task.flight,
                       Error{ErrorCode::kInterrupted, "the cache is shutting down"},
                       options_.clock.now());
        }
        return;
      }
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto started = options_.clock.now();
      Result<Value> result = SafeFetch(task.key);
      lock.lock();
      FinishLocked(*task.slot, task.flight, result, started);
    }
  }

  // The fetcher should not throw; if it does, the exception becomes this key's error.
  Result<Value> SafeFetch(const Key& key) {
    try {
      return fetch_(key);
    } catch (const std::exception& e) {
      return Error{ErrorCode::kInternal, std::string("fetch failed: ") + e.what()};
    } catch (...) {
      return Error{ErrorCode::kInternal, "fetch failed"};
    }
  }

  const Fetcher fetch_;
  const TtlCacheOptions options_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;  // a flight finished
  std::condition_variable work_cv_;  // a refresh was queued, or stopping
  std::map<Key, Slot> slots_;
  std::deque<Task> queue_;
  std::vector<std::thread> workers_;
  int in_flight_ = 0;
  bool stopping_ = false;
};

}  // namespace powerctl::telemetry
