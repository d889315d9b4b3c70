#pragma once
// Runs `work` on up to `workers` threads (the caller's thread being one of them) and waits
// for all. `work` pulls its own items (e.g. from an atomic index), so fewer threads than asked
// — when the system refuses to start more — only makes it slower, never incomplete.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace powerctl {

inline void RunOnWorkers(std::size_t workers, const std::function<void()>& work) {
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // out of threads: the workers already started (and this one) do the rest
    }
  }
  work();
  for (auto& thread : threads) thread.join();
}

}  // namespace powerctl

namespace powerctl {

// Threads a request may use for per-node work: the machine's, at most `cap`.
inline std::size_t DefaultWorkers(std::size_t cap = 4) {
  const std::size_t hardware = std::thread::hardware_concurrency();
  return std::clamp<std::size_t>(hardware, 1, cap);
}

}  // namespace powerctl
