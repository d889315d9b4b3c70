#include "core/predict/endpoint_breaker.h"

#include <algorithm>

namespace powerctl::predict {

std::optional<std::string> EndpointBreaker::Skip(const std::string& endpoint,
                                                 Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = states_.find(endpoint);
  if (it == states_.end() || it->second.failures == 0) return std::nullopt;
  State& s = it->second;
  if (now >= s.open_until && !s.probing) {
    s.probing = true;  // this caller tries the endpoint again; the others keep failing fast
    return std::nullopt;
  }
  // Stable wording (reasons are compared across requests): no counts, no times.
  return s.last_error +
         " (model server skipped after failing; retried in the background of "
         "later requests)";
}

void EndpointBreaker::Record(const std::string& endpoint, const std::string& failure,
                             Clock::time_point now, const std::string& display) {
  std::lock_guard lock(mu_);
  if (failure.empty()) {
    states_.erase(endpoint);
    return;
  }
  State& s = states_[endpoint];
  s.probing = false;
  s.last_error = failure;
  s.display = display.empty() ? endpoint : display;
  ++s.failures;
  auto backoff = options_.initial;
  for (int i = 1; i < s.failures && backoff < options_.max; ++i) backoff *= 2;
  s.open_until = now + std::min(backoff, options_.max);
}

std::vector<EndpointBreaker::Failure> EndpointBreaker::Failing() const {
  std::lock_guard lock(mu_);
  std::vector<Failure> out;
  for (const auto& [endpoint, state] : states_) out.push_back({state.display, state.last_error});
  std::sort(out.begin(), out.end(),
            [](const Failure& a, const Failure& b) { return a.endpoint < b.endpoint; });
  return out;
}

}  // namespace powerctl::predict
