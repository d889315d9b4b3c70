#pragma once
// The Prometheus metrics of powerctl's servers: counters, gauges and fixed-bucket histograms
// with labels, kept in prometheus-cpp's prometheus::Registry and rendered by its
// TextSerializer in the text exposition format 0.0.4 for GET /metrics. Only prometheus-cpp's
// core library is used: /metrics is served by our own HTTP server.
//
//   MetricsRegistry registry;
//   auto& requests = registry.Counter("powerctl_http_requests_total", "HTTP requests",
//                                     {"path", "code"});
//   requests.Inc({"/scheduler/filter", "200"});
//   std::string text = registry.Render();
//
// Label values must come from small fixed sets (routes, verbs, codes, results): every distinct
// combination is a series kept for the life of the registry (or until Clear), so a value taken
// from a request would grow memory and the scrape without bound.
//
// Families live as long as the registry and their references stay valid. Passing the wrong
// number of label values or registering one name as two kinds is a programming error and
// throws std::invalid_argument. Every call is safe from any thread, also while Render runs.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::server {

using LabelValues = std::vector<std::string>;  // in the order of the family's label names

class MetricFamily {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };
  virtual ~MetricFamily() = default;
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& labels() const { return labels_; }

 protected:
  MetricFamily(Kind kind, std::string name, std::vector<std::string> labels);
  void CheckLabels(const LabelValues& values) const;  // throws on a wrong count
  prometheus::Labels LabelsOf(const LabelValues& values) const;

 private:
  Kind kind_;
  std::string name_;
  std::vector<std::string> labels_;
};

// One prometheus-cpp family and its series by label values. Keeping them here lets an update
// find its series with one map lookup and no allocation (prometheus::Family::Add builds a new
// metric on every call, even for a series it has), and lets Clear remove them all. An update
// holds mu_ so that Clear never frees a series while it is being updated.
template <typename Metric>
class SeriesFamily : public MetricFamily {
 protected:
  SeriesFamily(Kind kind, prometheus::Family<Metric>& family, std::string name,
               std::vector<std::string> labels)
      : MetricFamily(kind, std::move(name), std::move(labels)), family_(family) {}

  // The series of `values`, added on first use; `args` construct it. Call with mu_ held.
  template <typename... Args>
  Metric& SeriesLocked(const LabelValues& values, Args&&... args) {
    auto it = series_.find(values);
    if (it != series_.end()) return *it->second;
    Metric& added = family_.Add(LabelsOf(values), std::forward<Args>(args)...);
    series_.emplace(values, &added);
    return added;
  }
  const Metric* FindLocked(const LabelValues& values) const {
    auto it = series_.find(values);
    return it == series_.end() ? nullptr : it->second;
  }
  void ClearLocked() {
    for (const auto& [values, metric] : series_) family_.Remove(metric);
    series_.clear();
  }
  mutable std::mutex mu_;  // series_, and every update of a series found in it

 private:
  prometheus::Family<Metric>& family_;
  std::map<LabelValues, Metric*> series_;
};

class CounterFamily : public SeriesFamily<prometheus::Counter> {
 public:
  CounterFamily(prometheus::Family<prometheus::Counter>& family, std::string name,
                std::vector<std::string> labels);
  void Inc(const LabelValues& values = {}, double by = 1);  // negative or NaN `by` is ignored
  double Value(const LabelValues& values = {}) const;
};

class GaugeFamily : public SeriesFamily<prometheus::Gauge> {
 public:
  GaugeFamily(prometheus::Family<prometheus::Gauge>& family, std::string name,
              std::vector<std::string> labels);
  void Set(const LabelValues& values, double value);
  void Set(double value) { Set({}, value); }
  void Add(const LabelValues& values, double by);
  double Value(const LabelValues& values = {}) const;
  void Clear();  // drops every series (e.g. before re-publishing per-node values)
};

class HistogramFamily : public SeriesFamily<prometheus::Histogram> {
 public:
  // `buckets`: upper bounds, strictly increasing (+Inf is implicit).
  HistogramFamily(prometheus::Family<prometheus::Histogram>& family, std::string name,
                  std::vector<double> buckets, std::vector<std::string> labels);
  void Observe(const LabelValues& values, double value);  // NaN is ignored
  void Observe(double value) { Observe({}, value); }
  std::uint64_t Count(const LabelValues& values = {}) const;

 private:
  prometheus::Histogram::BucketBoundaries buckets_;
};

class MetricsRegistry {
 public:
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // Registering an existing name again returns the existing family of that kind (its help,
  // labels and buckets stay those of the first registration).
  CounterFamily& Counter(const std::string& name, const std::string& help,
                         std::vector<std::string> labels = {});
  GaugeFamily& Gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> labels = {});
  HistogramFamily& Histogram(const std::string& name, const std::string& help,
                             std::vector<double> buckets, std::vector<std::string> labels = {});

  // Counters, then gauges, then histograms, each in registration order; a family without
  // series is left out. Labels appear in their declared order, series sorted by label values.
  std::string Render() const;

 private:
  template <typename T>
  T* Find(const std::string& name, MetricFamily::Kind kind) const;  // call with mu_ held

  prometheus::Registry registry_;
  mutable std::mutex mu_;                                          // families_
  std::map<std::string, std::unique_ptr<MetricFamily>> families_;  // by name
};

}  // namespace powerctl::server
