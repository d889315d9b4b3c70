#pragma once
// A set of threads that help callers run the items of a parallel loop: the one way work is
// spread over threads. Starting threads per request cost a fifth of a 5,000-node prioritize,
// so hot paths keep a pool, started once; a rare fan-out of blocking requests may make one
// for the call. Callers run items themselves too, so a busy pool only makes a loop slower,
// never stuck, and loops of concurrent callers share the threads.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace powerctl {

class WorkerPool {
 public:
  // `threads` helpers besides the callers (0: every loop runs on its caller). Fewer start
  // when the system refuses more threads: loops still complete, only slower.
  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls `chunk(begin, end)` for consecutive ranges covering [0, n), each at least
  // `min_chunk` items, and returns when all have run. Each index is visited exactly once.
  void ForEachChunk(std::size_t n, std::size_t min_chunk,
                    const std::function<void(std::size_t, std::size_t)>& chunk);
  // Calls `item(i)` for each i in [0, n), each claimed on its own, and returns when all have
  // run: for blocking work (a request each), where items sharing a chunk with a slow one
  // would wait for it while other threads idle.
  void ForEach(std::size_t n, const std::function<void(std::size_t)>& item);

  std::size_t threads() const { return threads_.size(); }

 private:
  struct Loop;
  void Run(std::size_t n, std::size_t chunk_size,
           const std::function<void(std::size_t, std::size_t)>& chunk);
  void Work();
  static bool RunOne(Loop& loop);  // runs one chunk; false when none is left to start

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Loop>> loops_;  // loops with chunks not yet started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Threads a request may use for per-node work: the machine's, at most `cap`.
inline std::size_t DefaultWorkers(std::size_t cap = 4) {
  const std::size_t hardware = std::thread::hardware_concurrency();
  return std::clamp<std::size_t>(hardware, 1, cap);
}

}  // namespace powerctl
