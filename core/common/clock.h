#pragma once
// Time as an injectable boundary: waits and deadlines in core code go through a Clock so
// tests can run them instantly.

#include <chrono>
#include <functional>
#include <thread>

namespace powerctl {

struct Clock {
  std::function<std::chrono::steady_clock::time_point()> now = [] {
    return std::chrono::steady_clock::now();
  };
  std::function<void(std::chrono::milliseconds)> sleep = [](std::chrono::milliseconds d) {
    std::this_thread::sleep_for(d);
  };
};

}  // namespace powerctl
