#include "core/predict/routing_predictor.h"

#include "core/common/worker_pool.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <unordered_map>

namespace powerctl::predict {
namespace {

bool SameEndpoint(const ModelEndpoint& a, const ModelEndpoint& b) {
  return a.port == b.port && a.backend == b.backend && a.host == b.host && a.name == b.name &&
         a.version == b.version && a.signature == b.signature;
}

std::string DisplayName(const ModelEndpoint& e) {
  std::string out = e.backend + " " + e.host + ":" + std::to_string(e.port) + " " + e.name;
  if (!e.version.empty()) out += " version " + e.version;
  return out;
}

struct Group {
  std::string key;  // ModelEndpoint::Key()
  std::string display;
  std::string backend;
  std::vector<std::size_t> indices;
};

}  // namespace

RoutingPredictor::RoutingPredictor(std::map<std::string, std::shared_ptr<Predictor>> backends,
                                   int max_parallel_endpoints, BreakerOptions breaker)
    : backends_(std::move(backends)),
      max_parallel_endpoints_(std::max(1, max_parallel_endpoints)),
      breaker_(breaker) {}

bool RoutingPredictor::RepeatsAnswers(const ModelEndpoint& endpoint) const {
  auto backend = backends_.find(endpoint.backend);
  return backend != backends_.end() && backend->second != nullptr &&
         backend->second->RepeatsAnswers(endpoint);
}

std::vector<Prediction> RoutingPredictor::Predict(PredictionRows rows,
                                                  std::chrono::milliseconds deadline) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + deadline;
  std::vector<Prediction> out(rows.size());

  std::unordered_map<std::string, std::size_t> group_of;
  std::vector<Group> groups;
  std::size_t current = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Rows mostly share one endpoint: only build a key when the endpoint differs from the
    // previous row's (Key() per row was a tenth of a 5,000-node prioritize).
    if (i == 0 || !SameEndpoint(rows[i].endpoint(), rows[i - 1].endpoint())) {
      auto [it, added] = group_of.emplace(rows[i].endpoint().Key(), groups.size());
      if (added)
        groups.push_back(
            Group{it->first, DisplayName(rows[i].endpoint()), rows[i].endpoint().backend, {}});
      current = it->second;
    }
    groups[current].indices.push_back(i);
  }

  // Each group writes only its own rows of `out`, so workers need no lock.
  auto run = [&](const Group& group) {
    auto fail = [&](const std::string& reason) {
      for (std::size_t i : group.indices) out[i].error = reason;
    };
    auto backend = backends_.find(group.backend);
    if (backend == backends_.end() || backend->second == nullptr) {
      fail("unknown predictor backend \"" + group.backend + "\"");
      return;
    }
    const bool remote = group.backend != "builtin";
    if (remote) {
      if (auto reason = breaker_.Skip(group.key, Clock::now())) {
        fail(*reason);
        return;
      }
    }
    // One group of every row (the usual case) is passed as is, not copied.
    std::vector<PredictionRow> copied;
    const bool all_rows = group.indices.size() == rows.size();
    if (!all_rows) {
      copied.reserve(group.indices.size());
      for (std::size_t i : group.indices) copied.push_back(rows[i]);
    }
    PredictionRows subset = all_rows ? rows : PredictionRows(copied);
    // Each endpoint gets what is left of the caller's deadline when its turn comes.
    const auto left =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
    std::vector<Prediction> results;
    try {
      results = backend->second->Predict(subset, left);
    } catch (const std::exception& e) {  // the interface forbids it; a worker must not die
      fail(group.backend + ": internal error: " + e.what());
      if (remote)
        breaker_.Record(group.key, group.backend + ": internal error", Clock::now(), group.display);
      return;
    } catch (...) {
      fail(group.backend + ": internal error");
      if (remote)
        breaker_.Record(group.key, group.backend + ": internal error", Clock::now(), group.display);
      return;
    }
    if (results.size() != subset.size()) {
      fail(group.backend + ": predictor returned the wrong number of results");
      if (remote)
        breaker_.Record(group.key, group.backend + ": wrong number of results", Clock::now(),
                        group.display);
      return;
    }
    if (remote) {
      bool all_failed = std::none_of(results.begin(), results.end(),
                                     [](const Prediction& p) { return p.watts.has_value(); });
      breaker_.Record(group.key,
                      !all_failed || results.empty()  ? std::string()
                      : results.front().error.empty() ? group.backend + ": no prediction"
                                                      : results.front().error,
                      Clock::now(), group.display);
    }
    for (std::size_t k = 0; k < group.indices.size(); ++k) {
      Prediction& p = out[group.indices[k]];
      p = std::move(results[k]);
      if (!p.watts && p.error.empty()) p.error = group.backend + ": no prediction and no reason";
    }
  };

  if (groups.size() == 1) {
    run(groups.front());
    return out;
  }
  // Endpoints answer independently: threads for this call, the caller one of them.
  const std::size_t threads =
      std::min<std::size_t>(groups.size(), static_cast<std::size_t>(max_parallel_endpoints_));
  WorkerPool pool(threads > 0 ? threads - 1 : 0);
  pool.ForEach(groups.size(), [&](std::size_t g) { run(groups[g]); });
  return out;
}

}  // namespace powerctl::predict
