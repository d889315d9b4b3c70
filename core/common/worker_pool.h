#pragma once
// A fixed set of threads that help callers run the chunks of a parallel loop. Starting
// threads per request cost a fifth of a 5,000-node prioritize; these are started once.
// Callers run chunks themselves too, so a busy pool only makes a loop slower, never stuck,
// and loops of concurrent callers share the threads.

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
  // `threads` helpers besides the callers (0: every loop runs on its caller).
  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls `chunk(begin, end)` for consecutive ranges covering [0, n), each at least
  // `min_chunk` items, and returns when all have run. Each index is visited exactly once.
  void ForEachChunk(std::size_t n, std::size_t min_chunk,
                    const std::function<void(std::size_t, std::size_t)>& chunk);

  std::size_t threads() const { return threads_.size(); }

 private:
  struct Loop;
  void Work();
  static bool RunOne(Loop& loop);  // runs one chunk; false when none is left to start

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Loop>> loops_;  // loops with chunks not yet started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace powerctl
