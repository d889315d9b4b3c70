#include "core/predict/http_batch.h"

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/common/worker_pool.h"
#include "core/predict/builtin_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <map>
#include <system_error>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

bool FiniteInputs(const ModelInputs& in) {
  return std::isfinite(in.cpu_fraction) && std::isfinite(in.ambient) && std::isfinite(in.cpu1) &&
         std::isfinite(in.cpu2);
}

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

}  // namespace

HttpBatchPredictor::HttpBatchPredictor(HttpClient& http, HttpBatchOptions options)
    : http_(http), options_(std::move(options)) {}

std::vector<Prediction> HttpBatchPredictor::Predict(PredictionRows rows, milliseconds deadline) {
  const TimePoint end = options_.clock.now() + deadline;
  std::vector<Prediction> out(rows.size());
  // Groups in order of first appearance, so results do not depend on key ordering.
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto [it, added] = group_of.emplace(rows[i].endpoint().Key(), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  for (const auto& group : groups) PredictGroup(rows, group, end, out);
  return out;
}

void HttpBatchPredictor::PredictGroup(PredictionRows rows, const std::vector<std::size_t>& group,
                                      TimePoint end, std::vector<Prediction>& out) const {
  const ModelEndpoint& endpoint = rows[group.front()].endpoint();
  const std::string label(Label());
  Result<std::string> url = Url(endpoint);
  if (!url.ok()) {
    for (std::size_t i : group) out[i].error = label + ": " + url.error().message;
    return;
  }
  // A NaN cannot be written in JSON, and one bad row must not fail its neighbours.
  std::vector<std::size_t> sendable;
  std::vector<ModelInputs> inputs;
  for (std::size_t i : group) {
    if (FiniteInputs(rows[i].inputs)) {
      sendable.push_back(i);
      inputs.push_back(rows[i].inputs);
    } else {
      out[i].error = label + ": model input is not a finite number";
    }
  }
  if (sendable.empty()) return;

  Attempt batch = Send(*url, endpoint, inputs, end);
  if (batch.status == 400 && sendable.size() > 1 && options_.retry_single_rows) {
    PredictOneByOne(*url, endpoint, rows, sendable, end, out);
    return;
  }
  for (std::size_t k = 0; k < sendable.size(); ++k) {
    Prediction& p = out[sendable[k]];
    if (batch.result.ok()) {
      p = std::move(batch.result.value()[k]);
      if (!p.error.empty()) p.error = label + ": " + p.error;
    } else {
      p.error = label + ": " + batch.result.error().message;
    }
  }
}

void HttpBatchPredictor::PredictOneByOne(const std::string& url, const ModelEndpoint& endpoint,
                                         PredictionRows rows,
                                         const std::vector<std::size_t>& indices, TimePoint end,
                                         std::vector<Prediction>& out) const {
  const std::string label(Label());
  // Blocking requests, one row each: threads for this fallback only, the caller one of them.
  const std::size_t threads =
      std::min<std::size_t>(indices.size(), std::max(1, options_.single_row_parallelism));
  WorkerPool pool(threads > 0 ? threads - 1 : 0);
  // Each thread writes only the rows it claimed, so `out` needs no lock.
  pool.ForEach(indices.size(), [&](std::size_t k) {
    Prediction& p = out[indices[k]];
    Attempt single = Send(url, endpoint, {rows[indices[k]].inputs}, end);
    if (single.result.ok()) {
      p = std::move(single.result.value()[0]);
      if (!p.error.empty()) p.error = label + ": " + p.error;
    } else {
      p.error = label + ": " + single.result.error().message;
    }
  });
}

HttpBatchPredictor::Attempt HttpBatchPredictor::Send(const std::string& url,
                                                     const ModelEndpoint& endpoint,
                                                     const std::vector<ModelInputs>& inputs,
                                                     TimePoint end) const {
  Attempt attempt;
  const TimePoint sent = options_.clock.now();
  // Whole milliseconds, rounded down: a 0 ms timeout would mean "no timeout" to libcurl.
  const auto timeout = std::chrono::duration_cast<milliseconds>(end - sent);
  if (timeout < milliseconds(1)) {
    attempt.result =
        MakeError(ErrorCode::kNetwork, "deadline exceeded before the request was sent");
    return attempt;
  }
  HttpClientRequest request;
  request.method = "POST";
  request.url = url;
  request.body = Body(endpoint, inputs);
  request.content_type = "application/json";
  request.timeout = timeout;
  Result<HttpClientResponse> response = MakeError(ErrorCode::kInternal, "no answer");
  try {  // HttpClient must not throw, but an escaping exception would kill a fallback worker
    response = http_.Do(request);
  } catch (const std::exception& e) {
    attempt.result =
        MakeError(ErrorCode::kInternal, std::string("HTTP client failed: ") + e.what());
    return attempt;
  }
  if (!response.ok()) {
    // The transport reports refusals and timeouts alike; a call that used up (about) its
    // whole timeout hit the deadline, a quicker failure could not reach the server. Timers
    // round to milliseconds and may fire a little early, hence the slack.
    const auto slack = std::max(milliseconds(5), timeout / 10);
    const bool timed_out = options_.clock.now() - sent + slack >= timeout;
    attempt.result = MakeError(ErrorCode::kNetwork,
                               timed_out ? "model server did not answer before the deadline"
                                         : "model server unreachable: " + response.error().message);
    return attempt;
  }
  attempt.status = response->status;
  if (response->status != 200) {
    attempt.result =
        MakeError(ErrorCode::kApi, DescribeHttpError(response->status, response->body));
    return attempt;
  }
  attempt.result = Parse(response->body, inputs.size());
  if (attempt.result.ok() && attempt.result->size() != inputs.size()) {
    attempt.result =
        MakeError(ErrorCode::kInternal, "response parser returned the wrong row count");
  }
  return attempt;
}

Error BadModelResponse(const std::string& what) {
  return MakeError(ErrorCode::kApi, "invalid response from model server: " + what);
}

Result<json> ModelResponseObject(std::string_view body) {
  json doc = ParseModelJson(body);
  if (!doc.is_object()) return BadModelResponse("not a JSON object");
  if (auto error = doc.find("error"); error != doc.end() && error->is_string()) {
    return MakeError(ErrorCode::kApi, "model server error: " + error->get<std::string>());
  }
  return doc;
}

json ParseModelJson(std::string_view body) {
  // Bounded before the rewrite below, which copies the body.
  if (JsonBoundsViolation(body)) return json(json::value_t::discarded);
  std::string text;
  text.reserve(body.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      text += c;
      if (c == '\\' && i + 1 < body.size()) {
        text += body[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (body.substr(i, token.size()) == token &&
          (i + token.size() == body.size() || !IsIdentifierChar(body[i + token.size()])) &&
          (i == 0 || !IsIdentifierChar(body[i - 1]))) {
        text += '"';
        text += token;
        text += '"';
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) text += c;
  }
  return ParseJsonBounded(text);
}

Prediction WattsFromJson(const json& value) {
  Prediction p;
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    p.error = s == "NaN"                            ? "model returned NaN"
              : s == "Infinity" || s == "-Infinity" ? "model returned an infinite value"
                                                    : "model returned a string, not a number";
    return p;
  }
  if (!value.is_number()) {
    p.error = "model returned " + std::string(value.type_name()) + ", not a number";
    return p;
  }
  const double watts = value.get<double>();
  if (std::isnan(watts)) {
    p.error = "model returned NaN";
  } else if (std::isinf(watts)) {
    p.error = "model returned an infinite value";
  } else if (watts < 0) {
    p.error = "model returned negative watts";
  } else if (watts > kMaxNodeWatts) {
    p.error = "model returned implausibly high watts (over 100 kW)";
  } else {
    p.watts = watts;
  }
  return p;
}

std::string DescribeHttpError(long status, std::string_view body) {
  constexpr std::size_t kMaxChars = 200;
  std::string message;
  bool from_json = false;
  json doc = ParseModelJson(body);
  if (doc.is_object()) {
    auto it = doc.find("error");
    if (it != doc.end() && it->is_string()) {
      message = it->get<std::string>();
      from_json = true;
    }
  }
  // One line, printable, bounded and valid UTF-8: the message ends up in tables and JSON, and
  // a raw body may be any bytes.
  const std::string clean =
      ExcerptForMessage(from_json ? std::string_view(message) : body, kMaxChars);
  std::string out = "HTTP " + std::to_string(status);
  if (status == 404) out += " (model not found)";
  if (!clean.empty()) out += ": " + clean;
  return out;
}

bool IsUrlSafeSegment(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
}

Result<std::string> ModelBaseUrl(const ModelEndpoint& endpoint) {
  if (!IsUrlSafeSegment(endpoint.host)) {
    return MakeError(ErrorCode::kInvalidInput,
                     "model host \"" + endpoint.host + "\" is not a host name or IPv4 address");
  }
  if (endpoint.port < 1 || endpoint.port > 65535) {
    return MakeError(ErrorCode::kInvalidInput, "model port must be 1-65535");
  }
  if (!IsUrlSafeSegment(endpoint.name)) {
    return MakeError(ErrorCode::kInvalidInput,
                     "model name must be non-empty letters, digits, '.', '_' or '-'");
  }
  return "http://" + endpoint.host + ":" + std::to_string(endpoint.port);
}

void AppendInputs(std::string& out, const ModelInputs& in) {
  AppendFloat(out, in.cpu_fraction);
  out += ',';
  AppendFloat(out, in.ambient);
  out += ',';
  AppendFloat(out, in.cpu1);
  out += ',';
  AppendFloat(out, in.cpu2);
}

void AppendFloat(std::string& out, float value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

void AppendJsonString(std::string& out, std::string_view text) {
  out += json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace powerctl::predict
