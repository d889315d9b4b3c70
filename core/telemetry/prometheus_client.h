#pragma once
// A client for the Prometheus HTTP API (/api/v1/query and /api/v1/query_range) over the
// generic HttpClient. Queries go as POST form bodies so long PromQL never hits URL length
// limits. Errors name the server, the errorType and Prometheus' own message.

#include "core/common/http_client.h"
#include "core/common/result.h"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

using WallTime = std::chrono::system_clock::time_point;

struct PromSample {
  WallTime time;  // millisecond precision, as Prometheus sends it
  double value = 0;
};

struct PromSeries {
  std::map<std::string, std::string> metric;  // labels, "__name__" included when present
  std::vector<PromSample> samples;            // vector: exactly one; matrix: oldest first
};

// The labels of each series a caller reads; the others are not kept. Empty: all. A 5,000-node
// temperature query returns several series per node, each with every label the exporter and
// the scrape configuration gave it, and decoding them all was most of a telemetry refresh's
// memory.
using KeepLabels = std::vector<std::string>;

// Takes each series of a vector or matrix result as it is decoded, instead of the result's
// `series` collecting them: a caller that reduces series to a few numbers (a node's reading)
// never holds the thousands of decoded series at once. When the query fails, the series
// already given are to be discarded.
using SeriesSink = std::function<void(PromSeries&& series)>;

struct QueryResult {
  std::string result_type;         // vector | matrix | scalar | string
  std::vector<PromSeries> series;  // vector and matrix
  PromSample scalar;               // scalar (and the time of a string)
  std::string string_value;        // string
  std::vector<std::string> warnings;
};

struct PrometheusOptions {
  std::string url;  // base URL, e.g. http://prometheus.monitoring.svc:9090 (a path prefix is kept)
  // Sent as the query's `timeout` parameter; the HTTP request gets one more second so that
  // Prometheus' own timeout error (with its errorType) arrives before ours.
  std::chrono::milliseconds timeout{5000};
  std::shared_ptr<spdlog::logger> log;  // may be null; logs method, URL, status, duration
};

class PrometheusClient {
 public:
  // `http` must outlive the client.
  PrometheusClient(HttpClient& http, PrometheusOptions options);

  // Instant query at `time` (default: the server's now). With `each`, series go there and
  // the result's `series` stays empty.
  Result<QueryResult> Query(std::string_view promql, std::optional<WallTime> time = std::nullopt,
                            const KeepLabels& keep = {}, const SeriesSink& each = {}) const;
  // Range query; `step` must be positive.
  Result<QueryResult> QueryRange(std::string_view promql, WallTime start, WallTime end,
                                 std::chrono::milliseconds step) const;

  const std::string& url() const { return display_url_; }

 private:
  Result<QueryResult> Post(const std::string& endpoint, const std::string& promql,
                           const std::string& form, const KeepLabels& keep = {},
                           const SeriesSink& each = {}) const;

  HttpClient& http_;
  PrometheusOptions options_;
  // The body size each query last answered with (HttpClientRequest::expected_body_bytes):
  // a telemetry refresh repeats the same few queries, and a 5,000-node answer is megabytes.
  mutable std::mutex sizes_mu_;
  mutable std::map<std::string, std::size_t> last_body_bytes_;
  std::string base_url_;     // without a trailing '/'
  std::string display_url_;  // base_url_ without user:password@
};

// Decodes an API response (the envelope and a query's data). A non-success envelope is
// kApi "<errorType>: <error>"; a body that is not the API's JSON names the HTTP status.
// Series keep only the labels in `keep` (all when it is empty); with `each`, they go there in
// the response's order instead of into the result's `series`.
Result<QueryResult> ParseQueryResponse(long http_status, std::string_view body,
                                       const KeepLabels& keep = {}, const SeriesSink& each = {});

// Unix seconds (a sample time, or the value of PromQL's timestamp()) as a time, rounded to
// milliseconds; nullopt for NaN, infinities and times more than 9e9 s from 1970 (beyond about
// 1685 or 2255, where system_clock's nanoseconds overflow).
std::optional<WallTime> WallTimeFromSeconds(double seconds);

// Prometheus' time parameter form: Unix seconds with milliseconds ("1700000000.123").
std::string FormatPromTime(WallTime time);

// Escapes a string for use inside a PromQL double-quoted regex matcher (=~"...") so it
// matches literally: regex metacharacters and the string's own quotes and backslashes.
std::string PromRegexLiteral(std::string_view text);

}  // namespace powerctl::telemetry
