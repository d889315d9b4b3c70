#include "core/telemetry/prometheus_client.h"

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/telemetry/exposition.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <utility>

namespace powerctl::telemetry {
namespace {

// What of a Prometheus answer's own text is kept (docs/hardening.md#dependency-text).
constexpr std::size_t kMaxErrorTypeBytes = 64;
constexpr std::size_t kMaxErrorBytes = 512;
constexpr std::size_t kMaxWarnings = 10;

using json = nlohmann::json;
using std::chrono::milliseconds;

std::string FormEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// user:password@ must never reach a message or a log line.
std::string WithoutUserInfo(const std::string& url) {
  std::size_t scheme = url.find("://");
  std::size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  std::size_t at = url.find('@', host_start);
  std::size_t slash = url.find('/', host_start);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

std::string DurationParam(milliseconds d) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%lldms", static_cast<long long>(d.count()));
  return buffer;
}

Result<WallTime> DecodeTime(const json& value) {
  if (!value.is_number()) return MakeError(ErrorCode::kApi, "a sample time is not a number");
  std::optional<WallTime> time = WallTimeFromSeconds(value.get<double>());
  if (!time) return MakeError(ErrorCode::kApi, "a sample time is out of range");
  return *time;
}

// [<unix seconds>, "<value>"]
Result<PromSample> DecodeSample(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[1].is_string()) {
    return MakeError(ErrorCode::kApi, "a sample is not [time, \"value\"]");
  }
  POWERCTL_TRY(time, DecodeTime(pair[0]));
  const std::string& text = pair[1].get_ref<const std::string&>();
  std::optional<double> value = ParseGoFloat(text);
  if (!value) {
    return MakeError(ErrorCode::kApi,
                     "a sample value \"" + ExcerptForMessage(text, 40) + "\" is not a number");
  }
  return PromSample{time, *value};
}

Result<PromSeries> DecodeSeries(const json& item, bool matrix, const KeepLabels& keep) {
  if (!item.is_object()) return MakeError(ErrorCode::kApi, "a result entry is not an object");
  PromSeries series;
  if (auto it = item.find("metric"); it != item.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) continue;
      if (!keep.empty() && std::find(keep.begin(), keep.end(), key) == keep.end()) continue;
      series.metric[key] = value.get<std::string>();
    }
  }
  // Native-histogram series carry "histogram(s)" instead; they have no float samples.
  if (!matrix) {
    if (auto it = item.find("value"); it != item.end()) {
      POWERCTL_TRY(sample, DecodeSample(*it));
      series.samples.push_back(sample);
    }
    return series;
  }
  if (auto it = item.find("values"); it != item.end()) {
    if (!it->is_array()) return MakeError(ErrorCode::kApi, "\"values\" is not an array");
    for (const json& pair : *it) {
      POWERCTL_TRY(sample, DecodeSample(pair));
      series.samples.push_back(sample);
    }
  }
  return series;
}

Result<QueryResult> DecodeData(const json& data, const KeepLabels& keep) {
  QueryResult out;
  if (!data.is_object() || !data.contains("resultType") || !data["resultType"].is_string()) {
    return MakeError(ErrorCode::kApi, "the response has no data.resultType");
  }
  out.result_type = data["resultType"].get<std::string>();
  const json& result = data.contains("result") ? data["result"] : json();
  if (out.result_type == "vector" || out.result_type == "matrix") {
    if (result.is_null()) return out;
    if (!result.is_array()) return MakeError(ErrorCode::kApi, "data.result is not an array");
    for (const json& item : result) {
      POWERCTL_TRY(series, DecodeSeries(item, out.result_type == "matrix", keep));
      out.series.push_back(std::move(series));
    }
    return out;
  }
  if (out.result_type == "scalar") {
    POWERCTL_TRY(sample, DecodeSample(result));
    out.scalar = sample;
    return out;
  }
  if (out.result_type == "string") {
    if (!result.is_array() || result.size() != 2 || !result[1].is_string()) {
      return MakeError(ErrorCode::kApi, "a string result is not [time, \"value\"]");
    }
    POWERCTL_TRY(time, DecodeTime(result[0]));
    out.scalar.time = time;
    out.string_value = result[1].get<std::string>();
    return out;
  }
  return MakeError(ErrorCode::kApi,
                   "unknown resultType \"" + ExcerptForMessage(out.result_type, 40) + "\"");
}

Result<QueryResult> DecodeEnvelope(long http_status, const json& envelope, const KeepLabels& keep) {
  std::string status = envelope.value("status", "");
  if (status == "error" || (status != "success" && envelope.contains("errorType"))) {
    // Whatever answers at the URL chooses this text: it is cut and made one printable line
    // before it reaches a log, /readyz or a terminal.
    std::string type = ExcerptForMessage(envelope.value("errorType", ""), kMaxErrorTypeBytes);
    std::string message = ExcerptForMessage(envelope.value("error", ""), kMaxErrorBytes);
    return MakeError(ErrorCode::kApi, (type.empty() ? "error" : type) + " (HTTP " +
                                          std::to_string(http_status) + "): " + message);
  }
  if (status != "success") {
    return MakeError(ErrorCode::kApi, "HTTP " + std::to_string(http_status) +
                                          " with an unknown status \"" +
                                          ExcerptForMessage(status, 40) + "\"");
  }
  if (http_status / 100 != 2) {
    return MakeError(ErrorCode::kApi,
                     "HTTP " + std::to_string(http_status) + " with a success envelope");
  }
  POWERCTL_TRY(result, DecodeData(envelope.contains("data") ? envelope["data"] : json(), keep));
  if (auto it = envelope.find("warnings"); it != envelope.end() && it->is_array()) {
    std::size_t more = 0;
    for (const json& warning : *it) {
      if (!warning.is_string()) continue;
      if (result.warnings.size() == kMaxWarnings) {
        ++more;
        continue;
      }
      result.warnings.push_back(
          ExcerptForMessage(warning.get_ref<const std::string&>(), kMaxErrorBytes));
    }
    if (more > 0) result.warnings.push_back(fmt::format("and {} more warnings", more));
  }
  return result;
}

}  // namespace

Result<QueryResult> ParseQueryResponse(long http_status, std::string_view body,
                                       const KeepLabels& keep, const SeriesSink& each) {
  // Series are decoded as each one is parsed and dropped from the document: the whole
  // document of a query over 5,000 nodes is about ten times its text (tens of MiB at once).
  // That needs data.resultType first, as Prometheus writes it; otherwise the series stay in
  // the document and are decoded from there.
  std::string keys[3];  // the key being parsed at depths 0..2
  std::string result_type;
  std::vector<PromSeries> streamed;
  std::optional<Error> streamed_error;
  json::parser_callback_t streaming = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth < 3) {
      keys[depth] = parsed.is_string() ? parsed.get<std::string>() : std::string();
    } else if (event == json::parse_event_t::value && depth == 2 && keys[1] == "data" &&
               keys[2] == "resultType" && parsed.is_string()) {
      result_type = parsed.get<std::string>();
    } else if (event == json::parse_event_t::object_end && depth == 3 && keys[1] == "data" &&
               keys[2] == "result" && (result_type == "vector" || result_type == "matrix")) {
      if (streamed_error) return false;
      try {
        Result<PromSeries> series = DecodeSeries(parsed, result_type == "matrix", keep);
        if (!series.ok()) {
          streamed_error = series.error();
        } else if (each) {
          each(std::move(series).value());
        } else {
          streamed.push_back(std::move(series).value());
        }
      } catch (const json::exception& e) {
        streamed_error =
            Error{ErrorCode::kApi, std::string("malformed Prometheus API response: ") + e.what()};
      }
      return false;
    }
    return true;
  };
  if (const auto violation = JsonBoundsViolation(body)) {
    return MakeError(ErrorCode::kApi, "HTTP " + std::to_string(http_status) +
                                          " with a Prometheus API response that " + *violation);
  }
  json envelope = ParseJsonBounded(body, kDefaultJsonLimits, streaming);
  if (envelope.is_discarded() || !envelope.is_object()) {
    return MakeError(ErrorCode::kApi, "HTTP " + std::to_string(http_status) +
                                          " with a body that is not a Prometheus API response");
  }
  try {
    POWERCTL_TRY(result, DecodeEnvelope(http_status, envelope, keep));
    if (streamed_error) return *streamed_error;
    // Either every series was streamed or (resultType after the result) none was.
    if (each) {
      for (PromSeries& series : result.series) each(std::move(series));
      result.series.clear();
    } else if (!streamed.empty()) {
      result.series.insert(result.series.begin(), std::make_move_iterator(streamed.begin()),
                           std::make_move_iterator(streamed.end()));
    }
    return result;
  } catch (const json::exception& e) {
    // value() and get() throw on unexpected types; no exception leaves the module.
    return MakeError(ErrorCode::kApi,
                     std::string("malformed Prometheus API response: ") + e.what());
  }
}

std::optional<WallTime> WallTimeFromSeconds(double seconds) {
  // system_clock counts nanoseconds in 64 bits, about +-292 years around 1970: the old bound of
  // 1e11 s overflowed it (found by prometheus_response_fuzzer).
  if (!std::isfinite(seconds) || std::fabs(seconds) > 9e9) return std::nullopt;
  // Whole milliseconds: Prometheus' precision, and about what a double carries at 1.7e9.
  auto ms = static_cast<std::int64_t>(std::llround(seconds * 1000.0));
  return WallTime(milliseconds(ms));
}

std::string FormatPromTime(WallTime time) {
  auto ms = std::chrono::duration_cast<milliseconds>(time.time_since_epoch()).count();
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%s%lld.%03lld", ms < 0 ? "-" : "",
                static_cast<long long>(std::llabs(ms) / 1000),
                static_cast<long long>(std::llabs(ms) % 1000));
  return buffer;
}

std::string PromRegexLiteral(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) {
      out += "\\\\";  // the regex escape, itself escaped for the PromQL string
    }
    if (c == '"' || c == '\\') out += '\\';  // the PromQL string's own escape
    out += c;
  }
  return out;
}

PrometheusClient::PrometheusClient(HttpClient& http, PrometheusOptions options)
    : http_(http), options_(std::move(options)), base_url_(options_.url) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  display_url_ = WithoutUserInfo(base_url_);
}

Result<QueryResult> PrometheusClient::Query(std::string_view promql, std::optional<WallTime> time,
                                            const KeepLabels& keep, const SeriesSink& each) const {
  std::string form = "query=" + FormEncode(promql);
  if (time) form += "&time=" + FormatPromTime(*time);
  return Post("/api/v1/query", std::string(promql), form, keep, each);
}

Result<QueryResult> PrometheusClient::QueryRange(std::string_view promql, WallTime start,
                                                 WallTime end, milliseconds step) const {
  if (step.count() <= 0) {
    return MakeError(ErrorCode::kInvalidInput, "the step of a range query must be positive");
  }
  if (end < start) {
    return MakeError(ErrorCode::kInvalidInput, "the end of a range query is before its start");
  }
  std::string form = "query=" + FormEncode(promql) + "&start=" + FormatPromTime(start) +
                     "&end=" + FormatPromTime(end) + "&step=" + FormatPromTime(WallTime(step));
  return Post("/api/v1/query_range", std::string(promql), form);
}

Result<QueryResult> PrometheusClient::Post(const std::string& endpoint, const std::string& promql,
                                           const std::string& form, const KeepLabels& keep,
                                           const SeriesSink& each) const {
  HttpClientRequest request;
  request.method = "POST";
  request.url = base_url_ + endpoint;
  request.content_type = "application/x-www-form-urlencoded";
  request.body = form;
  if (options_.timeout.count() > 0) {
    request.body += "&timeout=" + DurationParam(options_.timeout);
    request.timeout = options_.timeout + std::chrono::seconds(1);
  }
  {
    std::lock_guard lock(sizes_mu_);
    if (auto it = last_body_bytes_.find(form); it != last_body_bytes_.end()) {
      request.expected_body_bytes = it->second + it->second / 8;  // room to grow a little
    }
  }
  auto start = std::chrono::steady_clock::now();
  Result<HttpClientResponse> response = http_.Do(request);
  if (response.ok() && response->status / 100 == 2) {
    std::lock_guard lock(sizes_mu_);
    // Bounded: a client serves a few fixed queries; one asked ad hoc (calibrate's ranges)
    // must not grow this without end.
    if (last_body_bytes_.size() >= 64) last_body_bytes_.clear();
    last_body_bytes_[form] = response->body.size();
  }
  auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  std::string where = "Prometheus at " + display_url_;
  if (!response.ok()) {
    if (options_.log) {
      options_.log->debug("POST {}{} failed after {}ms", display_url_, endpoint, took.count());
    }
    return WithContext(response.error(), where);
  }
  if (options_.log) {
    options_.log->debug("POST {}{} {} {}ms", display_url_, endpoint, response->status,
                        took.count());
    options_.log->trace("PromQL: {}", promql);
  }
  Result<QueryResult> result = ParseQueryResponse(response->status, response->body, keep, each);
  if (!result.ok()) return WithContext(result.error(), where + ": query \"" + promql + "\" failed");
  if (options_.log) {
    for (const std::string& warning : result->warnings) {
      options_.log->warn("{}: query \"{}\": {}", where, promql, warning);
    }
  }
  return result;
}

}  // namespace powerctl::telemetry
