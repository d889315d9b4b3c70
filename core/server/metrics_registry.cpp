#include "core/server/metrics_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace powerctl::server {
namespace {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

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

const char* KindName(MetricFamily::Kind kind) {
  switch (kind) {
    case MetricFamily::Kind::kCounter:
      return "counter";
    case MetricFamily::Kind::kGauge:
      return "gauge";
    case MetricFamily::Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

MetricFamily::MetricFamily(Kind kind, std::string name, std::string help,
                           std::vector<std::string> labels)
    : kind_(kind), name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)) {}

void MetricFamily::Render(std::string& out) const {
  out +=
      fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, EscapeHelp(help_), name_, KindName(kind_));
  std::lock_guard lock(mu_);
  RenderSeries(out);
}

void MetricFamily::CheckLabels(const LabelValues& values) const {
  if (values.size() != labels_.size())
    throw std::invalid_argument(fmt::format("metric {}: {} label values for {} labels", name_,
                                            values.size(), labels_.size()));
}

std::string MetricFamily::Sample(const std::string& suffix, const LabelValues& values,
                                 const std::string& extra, double value) const {
  std::string labels;
  for (std::size_t i = 0; i < values.size(); ++i)
    labels +=
        fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", labels_[i], EscapeLabel(values[i]));
  if (!extra.empty()) labels += (labels.empty() ? "" : ",") + extra;
  return fmt::format("{}{}{} {}\n", name_, suffix, labels.empty() ? "" : "{" + labels + "}",
                     FormatValue(value));
}

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> labels)
    : MetricFamily(Kind::kCounter, std::move(name), std::move(help), std::move(labels)) {}

void CounterFamily::Inc(const LabelValues& values, double by) {
  CheckLabels(values);
  if (!(by >= 0)) return;
  std::lock_guard lock(mu_);
  series_[values] += by;
}

double CounterFamily::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second;
}

void CounterFamily::RenderSeries(std::string& out) const {
  for (const auto& [values, value] : series_) out += Sample("", values, "", value);
}

GaugeFamily::GaugeFamily(std::string name, std::string help, std::vector<std::string> labels)
    : MetricFamily(Kind::kGauge, std::move(name), std::move(help), std::move(labels)) {}

void GaugeFamily::Set(const LabelValues& values, double value) {
  CheckLabels(values);
  std::lock_guard lock(mu_);
  series_[values] = value;
}

void GaugeFamily::Add(const LabelValues& values, double by) {
  CheckLabels(values);
  std::lock_guard lock(mu_);
  series_[values] += by;
}

double GaugeFamily::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second;
}

void GaugeFamily::Clear() {
  std::lock_guard lock(mu_);
  series_.clear();
}

void GaugeFamily::RenderSeries(std::string& out) const {
  for (const auto& [values, value] : series_) out += Sample("", values, "", value);
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<double> buckets,
                                 std::vector<std::string> labels)
    : MetricFamily(Kind::kHistogram, std::move(name), std::move(help), std::move(labels)),
      buckets_(std::move(buckets)) {
  if (!std::is_sorted(buckets_.begin(), buckets_.end()) ||
      std::adjacent_find(buckets_.begin(), buckets_.end()) != buckets_.end())
    throw std::invalid_argument("histogram " + this->name() + ": buckets must increase");
}

void HistogramFamily::Observe(const LabelValues& values, double value) {
  CheckLabels(values);
  if (std::isnan(value)) return;
  std::lock_guard lock(mu_);
  Series& s = series_[values];
  if (s.counts.empty()) s.counts.assign(buckets_.size(), 0);
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), value);  // first bound >= value
  if (it != buckets_.end()) ++s.counts[static_cast<std::size_t>(it - buckets_.begin())];
  ++s.count;
  s.sum += value;
}

std::uint64_t HistogramFamily::Count(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void HistogramFamily::RenderSeries(std::string& out) const {
  for (const auto& [values, s] : series_) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      cumulative += s.counts[i];
      out += Sample("_bucket", values, "le=\"" + FormatValue(buckets_[i]) + "\"",
                    static_cast<double>(cumulative));
    }
    out += Sample("_bucket", values, "le=\"+Inf\"", static_cast<double>(s.count));
    out += Sample("_sum", values, "", s.sum);
    out += Sample("_count", values, "", static_cast<double>(s.count));
  }
}

template <typename T, typename... Args>
T& MetricsRegistry::Add(const std::string& name, MetricFamily::Kind kind, Args&&... args) {
  std::lock_guard lock(mu_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    if (family->kind() != kind)
      throw std::invalid_argument("metric " + name + " is already registered as another kind");
    return static_cast<T&>(*family);
  }
  families_.push_back(std::make_unique<T>(name, std::forward<Args>(args)...));
  return static_cast<T&>(*families_.back());
}

CounterFamily& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                        std::vector<std::string> labels) {
  return Add<CounterFamily>(name, MetricFamily::Kind::kCounter, help, std::move(labels));
}

GaugeFamily& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                    std::vector<std::string> labels) {
  return Add<GaugeFamily>(name, MetricFamily::Kind::kGauge, help, std::move(labels));
}

HistogramFamily& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                            std::vector<double> buckets,
                                            std::vector<std::string> labels) {
  return Add<HistogramFamily>(name, MetricFamily::Kind::kHistogram, help, std::move(buckets),
                              std::move(labels));
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& family : families_) family->Render(out);
  return out;
}

}  // namespace powerctl::server
