#pragma once
// A small thread-safe Prometheus registry: counters, gauges and fixed-bucket histograms with
// labels, rendered in the text exposition format 0.0.4 for GET /metrics.
//
//   MetricsRegistry registry;
//   auto& requests = registry.Counter("powerctl_http_requests_total", "HTTP requests",
//                                     {"path", "code"});
//   requests.Inc({"/scheduler/filter", "200"});
//   std::string text = registry.Render();
//
// Families live as long as the registry and their references stay valid. Passing the wrong
// number of label values or registering one name as two kinds is a programming error and
// throws std::invalid_argument.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace powerctl::server {

using LabelValues = std::vector<std::string>;  // in the order of the family's label names

class MetricFamily {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };
  MetricFamily(Kind kind, std::string name, std::string help, std::vector<std::string> labels);
  virtual ~MetricFamily() = default;
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  void Render(std::string& out) const;  // # HELP, # TYPE and every series

 protected:
  void CheckLabels(const LabelValues& values) const;
  // `suffix` and `extra` (one more label such as le="0.5") build each sample line.
  std::string Sample(const std::string& suffix, const LabelValues& values, const std::string& extra,
                     double value) const;
  virtual void RenderSeries(std::string& out) const = 0;
  mutable std::mutex mu_;

 private:
  Kind kind_;
  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
};

class CounterFamily : public MetricFamily {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> labels);
  void Inc(const LabelValues& values = {}, double by = 1);  // negative `by` is ignored
  double Value(const LabelValues& values = {}) const;

 private:
  void RenderSeries(std::string& out) const override;
  std::map<LabelValues, double> series_;
};

class GaugeFamily : public MetricFamily {
 public:
  GaugeFamily(std::string name, std::string help, std::vector<std::string> labels);
  void Set(const LabelValues& values, double value);
  void Set(double value) { Set({}, value); }
  void Add(const LabelValues& values, double by);
  double Value(const LabelValues& values = {}) const;
  void Clear();  // drops every series (e.g. before re-publishing per-node values)

 private:
  void RenderSeries(std::string& out) const override;
  std::map<LabelValues, double> series_;
};

class HistogramFamily : public MetricFamily {
 public:
  // `buckets`: upper bounds, sorted ascending (+Inf is implicit).
  HistogramFamily(std::string name, std::string help, std::vector<double> buckets,
                  std::vector<std::string> labels);
  void Observe(const LabelValues& values, double value);
  void Observe(double value) { Observe({}, value); }
  std::uint64_t Count(const LabelValues& values = {}) const;

 private:
  struct Series {
    std::vector<std::uint64_t> counts;  // per bucket, not cumulative
    std::uint64_t count = 0;
    double sum = 0;
  };
  void RenderSeries(std::string& out) const override;
  std::vector<double> buckets_;
  std::map<LabelValues, Series> series_;
};

class MetricsRegistry {
 public:
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // Registering an existing name again returns the existing family of that kind.
  CounterFamily& Counter(const std::string& name, const std::string& help,
                         std::vector<std::string> labels = {});
  GaugeFamily& Gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> labels = {});
  HistogramFamily& Histogram(const std::string& name, const std::string& help,
                             std::vector<double> buckets, std::vector<std::string> labels = {});

  // Every family in registration order.
  std::string Render() const;

 private:
  template <typename T, typename... Args>
  T& Add(const std::string& name, MetricFamily::Kind kind, Args&&... args);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

}  // namespace powerctl::server
