#include "core/server/metrics_registry.h"

#include <fmt/format.h>

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace powerctl::server {
namespace {

// prometheus-cpp 1.0 writes HELP text as given; the format wants '\' and newlines escaped.
std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// prometheus-cpp keeps a series' labels in a std::map, so they come out sorted by name, and
// its series in a hash map. Put the labels back in the order the family declared them (the
// order scrapers matching a line and people reading /metrics have always seen) and the series
// in the order of their values, so the page reads the same from one scrape to the next.
void InDeclaredOrder(prometheus::MetricFamily& family, const std::vector<std::string>& names) {
  for (prometheus::ClientMetric& metric : family.metric) {
    std::vector<prometheus::ClientMetric::Label> ordered;
    ordered.reserve(metric.label.size());
    for (const std::string& name : names) {
      auto it = std::find_if(metric.label.begin(), metric.label.end(),
                             [&](const auto& label) { return label.name == name; });
      if (it != metric.label.end()) ordered.push_back(std::move(*it));
    }
    metric.label = std::move(ordered);
  }
  std::sort(family.metric.begin(), family.metric.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(
        a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
        [](const auto& x, const auto& y) { return x.value < y.value; });
  });
}

// prometheus-cpp checks a metric name when the family is registered, but label names and
// buckets only when the first series is added. Checking them before registering means a bad call
// throws at once and leaves nothing registered.
void CheckLabelNames(const std::string& name, const std::vector<std::string>& labels) {
  for (const std::string& label : labels)
    if (!prometheus::CheckLabelName(label))
      throw std::invalid_argument(fmt::format("metric {}: invalid label name \"{}\"", name, label));
}

void CheckBuckets(const std::string& name, const std::vector<double>& buckets) {
  if (std::adjacent_find(buckets.begin(), buckets.end(), std::greater_equal<>()) != buckets.end())
    throw std::invalid_argument("histogram " + name + ": buckets must increase");
}

}  // namespace

MetricFamily::MetricFamily(Kind kind, std::string name, std::vector<std::string> labels)
    : kind_(kind), name_(std::move(name)), labels_(std::move(labels)) {}

void MetricFamily::CheckLabels(const LabelValues& values) const {
  if (values.size() != labels_.size())
    throw std::invalid_argument(fmt::format("metric {}: {} label values for {} labels", name_,
                                            values.size(), labels_.size()));
}

prometheus::Labels MetricFamily::LabelsOf(const LabelValues& values) const {
  CheckLabels(values);
  prometheus::Labels labels;
  for (std::size_t i = 0; i < values.size(); ++i) labels.emplace(labels_[i], values[i]);
  return labels;
}

CounterFamily::CounterFamily(prometheus::Family<prometheus::Counter>& family, std::string name,
                             std::vector<std::string> labels)
    : SeriesFamily(Kind::kCounter, family, std::move(name), std::move(labels)) {}

void CounterFamily::Inc(const LabelValues& values, double by) {
  CheckLabels(values);
  if (!(by >= 0)) return;
  std::lock_guard lock(mu_);
  SeriesLocked(values).Increment(by);
}

double CounterFamily::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  const prometheus::Counter* series = FindLocked(values);
  return series == nullptr ? 0 : series->Value();
}

GaugeFamily::GaugeFamily(prometheus::Family<prometheus::Gauge>& family, std::string name,
                         std::vector<std::string> labels)
    : SeriesFamily(Kind::kGauge, family, std::move(name), std::move(labels)) {}

void GaugeFamily::Set(const LabelValues& values, double value) {
  std::lock_guard lock(mu_);
  SeriesLocked(values).Set(value);
}

void GaugeFamily::Add(const LabelValues& values, double by) {
  std::lock_guard lock(mu_);
  SeriesLocked(values).Increment(by);
}

double GaugeFamily::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  const prometheus::Gauge* series = FindLocked(values);
  return series == nullptr ? 0 : series->Value();
}

void GaugeFamily::Clear() {
  std::lock_guard lock(mu_);
  ClearLocked();
}

HistogramFamily::HistogramFamily(prometheus::Family<prometheus::Histogram>& family,
                                 std::string name, std::vector<double> buckets,
                                 std::vector<std::string> labels)
    : SeriesFamily(Kind::kHistogram, family, std::move(name), std::move(labels)),
      buckets_(std::move(buckets)) {}

void HistogramFamily::Observe(const LabelValues& values, double value) {
  CheckLabels(values);
  if (std::isnan(value)) return;
  std::lock_guard lock(mu_);
  SeriesLocked(values, buckets_).Observe(value);
}

std::uint64_t HistogramFamily::Count(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  const prometheus::Histogram* series = FindLocked(values);
  return series == nullptr ? 0 : series->Collect().histogram.sample_count;
}

template <typename T>
T* MetricsRegistry::Find(const std::string& name, MetricFamily::Kind kind) const {
  auto it = families_.find(name);
  if (it == families_.end()) return nullptr;
  if (it->second->kind() != kind)
    throw std::invalid_argument("metric " + name + " is already registered as another kind");
  return static_cast<T*>(it->second.get());
}

CounterFamily& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                        std::vector<std::string> labels) {
  std::lock_guard lock(mu_);
  if (auto* existing = Find<CounterFamily>(name, MetricFamily::Kind::kCounter)) return *existing;
  CheckLabelNames(name, labels);
  auto& family = prometheus::BuildCounter().Name(name).Help(EscapeHelp(help)).Register(registry_);
  auto added = std::make_unique<CounterFamily>(family, name, std::move(labels));
  return static_cast<CounterFamily&>(*families_.emplace(name, std::move(added)).first->second);
}

GaugeFamily& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                    std::vector<std::string> labels) {
  std::lock_guard lock(mu_);
  if (auto* existing = Find<GaugeFamily>(name, MetricFamily::Kind::kGauge)) return *existing;
  CheckLabelNames(name, labels);
  auto& family = prometheus::BuildGauge().Name(name).Help(EscapeHelp(help)).Register(registry_);
  auto added = std::make_unique<GaugeFamily>(family, name, std::move(labels));
  return static_cast<GaugeFamily&>(*families_.emplace(name, std::move(added)).first->second);
}

HistogramFamily& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                            std::vector<double> buckets,
                                            std::vector<std::string> labels) {
  std::lock_guard lock(mu_);
  if (auto* existing = Find<HistogramFamily>(name, MetricFamily::Kind::kHistogram))
    return *existing;
  CheckLabelNames(name, labels);
  CheckBuckets(name, buckets);
  auto& family = prometheus::BuildHistogram().Name(name).Help(EscapeHelp(help)).Register(registry_);
  auto added =
      std::make_unique<HistogramFamily>(family, name, std::move(buckets), std::move(labels));
  return static_cast<HistogramFamily&>(*families_.emplace(name, std::move(added)).first->second);
}

std::string MetricsRegistry::Render() const {
  std::vector<prometheus::MetricFamily> collected = registry_.Collect();
  {
    std::lock_guard lock(mu_);
    for (prometheus::MetricFamily& family : collected) {
      auto it = families_.find(family.name);
      if (it != families_.end()) InDeclaredOrder(family, it->second->labels());
    }
  }
  return prometheus::TextSerializer().Serialize(collected);
}

}  // namespace powerctl::server
