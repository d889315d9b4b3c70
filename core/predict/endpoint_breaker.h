#pragma once
// Remembers which model servers just failed, so that a dead or hanging server costs one
// timeout per back-off period instead of one per scheduling request: while an endpoint's
// breaker is open, its rows fail at once with the last error; when the back-off ends, one
// caller probes it (the others still fail fast) and a success closes the breaker. Back-off
// doubles from `initial` to `max`. Thread-safe.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace powerctl::predict {

struct BreakerOptions {
  std::chrono::milliseconds initial{1'000};
  std::chrono::milliseconds max{30'000};
};

class EndpointBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit EndpointBreaker(BreakerOptions options = {}) : options_(options) {}

  // nullopt: call the endpoint (closed breaker, or this caller is the probe). Otherwise the
  // reason its rows fail without a call.
  std::optional<std::string> Skip(const std::string& endpoint, Clock::time_point now);
  // The outcome of a call that Skip let through: `failure` is the error when every row
  // failed, "" when the endpoint answered. `display` names the endpoint for Failing().
  void Record(const std::string& endpoint, const std::string& failure, Clock::time_point now,
              const std::string& display = "");

  struct Failure {
    std::string endpoint;  // the display name given to Record
    std::string error;     // the last one
  };
  // Endpoints whose last call failed, for /readyz.
  std::vector<Failure> Failing() const;

 private:
  struct State {
    int failures = 0;
    Clock::time_point open_until{};
    bool probing = false;
    std::string last_error;
    std::string display;
  };
  BreakerOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, State> states_;
};

}  // namespace powerctl::predict
