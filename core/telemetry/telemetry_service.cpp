#include "core/telemetry/telemetry_service.h"

#include "core/common/malloc_tuning.h"

#include <algorithm>
#include <utility>

namespace powerctl::telemetry {
namespace {

// Once a snapshot exists it is served however old (staleness is judged per reading), so a
// reader never waits for a source that went down.
constexpr auto kNeverExpires = std::chrono::hours(24 * 365 * 100);

TtlCacheOptions CacheOptions(const TelemetryServiceOptions& options) {
  TtlCacheOptions out;
  out.refresh_after = options.refresh_interval;
  out.expire_after = kNeverExpires;
  out.retry_after =
      std::min<std::chrono::milliseconds>(options.refresh_interval, std::chrono::seconds(5));
  out.refresh_threads = 1;  // one key per cache
  out.clock = options.time.clock;
  return out;
}

// The cached snapshot (or why there is none) according to `wait`.
template <typename Cache, typename Value>
Result<Value> Current(Cache& cache, Wait wait) {
  if (wait == Wait::kIfEmpty) return cache.Get(0);
  auto peek = cache.Peek(0);
  if (peek.value) return cache.Get(0);  // has a value: returns at once, refreshing if due
  cache.Refresh(0);
  if (peek.last_error) return *peek.last_error;
  return MakeError(ErrorCode::kNetwork, "not fetched yet (the first refresh is running)");
}

// Adds why a stale reading was not refreshed, when the last refresh failed.
void ExplainStale(Reading& reading, const std::optional<Error>& last_error) {
  if (reading.ok() || !last_error || !reading.missing_reason.starts_with("stale")) return;
  reading.missing_reason =
      reading.missing_reason + "; the last refresh failed: " + last_error->message;
}

}  // namespace

TelemetryService::TelemetryService(CpuSource& cpu, TemperatureSource& temperature, NodeLister nodes,
                                   TelemetryServiceOptions options)
    : cpu_(cpu),
      temperature_(temperature),
      nodes_(std::move(nodes)),
      options_(std::move(options)),
      cpu_cache_([this](int) { return FetchSnapshot<Reading>(cpu_); }, CacheOptions(options_)),
      temperature_cache_([this](int) { return FetchSnapshot<Temperatures>(temperature_); },
                         CacheOptions(options_)) {}

template <typename T, typename Source>
Result<std::shared_ptr<const TelemetryService::Snapshot<T>>> TelemetryService::FetchSnapshot(
    Source& source) {
  std::unique_lock lock(fetch_mu_, std::defer_lock);
  if (!lock.try_lock_for(options_.fetch_queue_limit) && options_.log) {
    options_.log->debug(
        "telemetry: the other source's fetch still runs after {}ms; fetching beside it",
        options_.fetch_queue_limit.count());
  }
  Result<std::vector<NodeInfo>> nodes = nodes_();
  if (!nodes.ok()) return WithContext(nodes.error(), "listing nodes");
  auto readings = source.Fetch(*nodes);
  if (!readings.ok()) {
    // The Prometheus client already names itself; say where only once.
    const std::string where = source.Describe();
    Error error = readings.error().message.compare(0, where.size(), where) == 0
                      ? readings.error()
                      : WithContext(readings.error(), where);
    if (options_.log) options_.log->warn("telemetry: {}", error.message);
    return error;
  }
  auto snapshot = std::make_shared<Snapshot<T>>();
  auto& entries = snapshot->nodes;
  const auto by_name = [](const auto& a, const auto& b) { return a.node < b.node; };
  entries.reserve(nodes->size());
  for (const NodeInfo& node : *nodes) {
    entries.push_back({node.name, true, node.cpu_capacity, std::nullopt});
  }
  std::stable_sort(entries.begin(), entries.end(), by_name);
  // Node lists have unique names; should one repeat, its first entry stands.
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const auto& a, const auto& b) { return a.node == b.node; }),
                entries.end());
  std::size_t listed = entries.size();
  for (auto& [name, reading] : *readings) {
    auto it = std::lower_bound(entries.begin(), entries.begin() + listed, name,
                               [](const auto& e, const std::string& n) { return e.node < n; });
    if (it != entries.begin() + listed && it->node == name) {
      it->reading = std::move(reading);
    } else {
      entries.push_back({name, false, std::nullopt, std::move(reading)});  // not asked about
    }
  }
  readings->clear();
  if (entries.size() > listed) std::sort(entries.begin(), entries.end(), by_name);
  std::vector<NodeInfo>().swap(*nodes);
  // A fetch parses a large response (series with all their labels) on this thread; give
  // what it freed back to the system instead of keeping it until the next fetch.
  ReleaseFreeMemory();
  return std::shared_ptr<const Snapshot<T>>(std::move(snapshot));
}

void TelemetryService::Warm() {
  cpu_cache_.Refresh(0);
  temperature_cache_.Refresh(0);
}

TelemetryView TelemetryService::View(Wait wait) {
  TelemetryView view;
  Result<CpuSnapshot> cpu = Current<decltype(cpu_cache_), CpuSnapshot>(cpu_cache_, wait);
  Result<TemperatureSnapshot> temps =
      Current<decltype(temperature_cache_), TemperatureSnapshot>(temperature_cache_, wait);
  if (cpu.ok()) {
    view.cpu_ = *cpu;
  } else {
    view.cpu_problem_ = "CPU usage unavailable: " + cpu.error().message;
    view.cpu_failure_ = cpu.error();
  }
  if (temps.ok()) {
    view.temperatures_ = *temps;
  } else {
    view.temperature_problem_ = "temperatures unavailable: " + temps.error().message;
  }
  view.cpu_error_ = cpu_cache_.Peek(0).last_error;
  view.temperature_error_ = temperature_cache_.Peek(0).last_error;
  view.now_ = options_.time.clock.now();
  view.max_age_ = options_.max_age;
  // Snapshots are immutable and kept alive by the view, so their addresses identify them;
  // whether a refresh is failing changes the reasons, so it is part of the generation too.
  auto mix = [](std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x100000001b3ULL; };
  std::uint64_t g = 0xcbf29ce484222325ULL;
  g = mix(g, reinterpret_cast<std::uintptr_t>(view.cpu_.get()));
  g = mix(g, reinterpret_cast<std::uintptr_t>(view.temperatures_.get()));
  g = mix(
      g, std::hash<std::string>{}(view.cpu_problem_.str() + "|" + view.temperature_problem_.str()));
  g = mix(g, (view.cpu_error_ ? 1U : 0U) | (view.temperature_error_ ? 2U : 0U));
  view.generation_ = g;
  return view;
}

std::vector<TelemetryService::SourceStatus> TelemetryService::Sources() const {
  const auto now = options_.time.clock.now();
  auto status = [&](const char* name, const auto& peek) {
    SourceStatus s;
    s.source = name;
    if (peek.value) {
      s.age = std::chrono::duration_cast<std::chrono::milliseconds>(now - peek.fetched_at);
    }
    s.failing = peek.last_error.has_value();
    if (peek.last_error) s.error = peek.last_error->message;
    return s;
  };
  return {status("cpu", cpu_cache_.Peek(0)), status("temperature", temperature_cache_.Peek(0))};
}

NodeReading TelemetryView::For(const std::string& name) const {
  static const SharedText kNotListed = "the node was not in the last node list";
  static const SharedText kNothing = "the source returned nothing for this node";
  NodeReading r;
  r.node = name;
  if (cpu_ == nullptr) {
    r.cpu_cores_used = MissingReading(cpu_problem_);
  } else {
    const auto* entry = cpu_->Find(name);
    if (entry != nullptr) r.cpu_capacity = entry->capacity;
    r.cpu_cores_used = entry == nullptr ? MissingReading(kNotListed)
                       : entry->reading ? *entry->reading
                                        : MissingReading(kNothing);
  }
  if (temperatures_ == nullptr) {
    r.ambient = r.cpu1 = r.cpu2 = MissingReading(temperature_problem_);
  } else {
    const auto* entry = temperatures_->Find(name);
    if (!r.cpu_capacity && entry != nullptr) r.cpu_capacity = entry->capacity;
    if (entry != nullptr && entry->reading) {
      r.ambient = entry->reading->ambient;
      r.cpu1 = entry->reading->cpu1;
      r.cpu2 = entry->reading->cpu2;
    } else {
      r.ambient = r.cpu1 = r.cpu2 = MissingReading(entry == nullptr ? kNotListed : kNothing);
    }
  }
  r = WithMaxAge(std::move(r), now_, max_age_);
  ExplainStale(r.cpu_cores_used, cpu_error_);
  for (Reading* t : {&r.ambient, &r.cpu1, &r.cpu2}) ExplainStale(*t, temperature_error_);
  return r;
}

SteadyTime TelemetryView::StaleAt(const NodeReading& reading) const {
  SteadyTime at = SteadyTime::max();
  for (const Reading* r :
       {&reading.cpu_cores_used, &reading.ambient, &reading.cpu1, &reading.cpu2}) {
    if (r->ok()) at = std::min(at, r->observed_at + max_age_);
  }
  return at;
}

Result<std::map<std::string, NodeReading>> TelemetryService::Readings(
    Wait wait, const std::vector<std::string>& only) {
  TelemetryView view = View(wait);
  // The nodes a snapshot was fetched for: its listed entries.
  const auto* cpu_nodes = view.cpu_ != nullptr ? &view.cpu_->nodes : nullptr;
  const auto* temperature_nodes =
      view.temperatures_ != nullptr ? &view.temperatures_->nodes : nullptr;
  if (only.empty() && cpu_nodes == nullptr && temperature_nodes == nullptr) {
    return *view.cpu_failure_;  // neither source has a snapshot: the CPU source's error
  }
  std::map<std::string, NodeReading> out;
  auto read_listed = [&](const auto& entries) {
    for (const auto& entry : entries) {
      if (entry.listed) out[entry.node] = view.For(entry.node);
    }
  };
  if (!only.empty()) {
    for (const std::string& name : only) out[name] = view.For(name);
  } else if (cpu_nodes != nullptr) {
    read_listed(*cpu_nodes);
  } else {
    read_listed(*temperature_nodes);
  }
  return out;
}

}  // namespace powerctl::telemetry
