#pragma once
// Shared machinery of the JSON-over-HTTP model protocols (TensorFlow Serving REST and the V2
// inference protocol): one request per model endpoint for all its rows, the caller's deadline
// as the request timeout, a fallback to one request per row when a model rejects a batch, and
// every failure turned into a per-row reason. Subclasses only say how to address a model,
// encode rows and decode the answer.

#include "core/common/clock.h"
#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/predict/predictor.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

struct HttpBatchOptions {
  // After HTTP 400 for a batch of several rows, ask again one row at a time: some models are
  // exported with a fixed batch dimension of 1 and reject anything larger.
  bool retry_single_rows = true;
  int single_row_parallelism = 8;  // concurrent requests in that fallback
  Clock clock;
};

class HttpBatchPredictor : public Predictor {
 public:
  // Rows are grouped by ModelEndpoint::Key(); groups are asked one after another, each with
  // what is left of `deadline` (RoutingPredictor runs different endpoints concurrently).
  std::vector<Prediction> Predict(PredictionRows rows, std::chrono::milliseconds deadline) final;

 protected:
  // `http` must outlive the predictor; it is shared by concurrent Predict calls.
  HttpBatchPredictor(HttpClient& http, HttpBatchOptions options);

  virtual std::string_view Label() const = 0;  // prefixes messages: "tfserving-rest"
  virtual Result<std::string> Url(const ModelEndpoint& endpoint) const = 0;
  virtual std::string Body(const ModelEndpoint& endpoint,
                           const std::vector<ModelInputs>& inputs) const = 0;
  // One Prediction per row, or an Error that applies to the whole batch.
  virtual Result<std::vector<Prediction>> Parse(std::string_view body, std::size_t rows) const = 0;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Attempt {
    long status = 0;  // HTTP status, 0 when no answer arrived
    Result<std::vector<Prediction>> result = std::vector<Prediction>{};
  };
  Attempt Send(const std::string& url, const ModelEndpoint& endpoint,
               const std::vector<ModelInputs>& inputs, TimePoint end) const;
  void PredictGroup(PredictionRows rows, const std::vector<std::size_t>& group, TimePoint end,
                    std::vector<Prediction>& out) const;
  void PredictOneByOne(const std::string& url, const ModelEndpoint& endpoint, PredictionRows rows,
                       const std::vector<std::size_t>& indices, TimePoint end,
                       std::vector<Prediction>& out) const;

  HttpClient& http_;
  HttpBatchOptions options_;
};

// --- helpers shared by the protocol parsers (and their fuzzers) ------------------------------

// Parses a model server's body without throwing. TF Serving writes non-finite floats as bare
// NaN, Infinity and -Infinity, which strict JSON parsers reject; outside strings those tokens
// become the strings "NaN", "Infinity" and "-Infinity" so one bad value fails one row, not
// the whole answer. Malformed JSON, or a body beyond kDefaultJsonLimits (core/common/
// json_bounds.h: 64 levels, 64 MiB), gives a discarded value (is_discarded()).
nlohmann::json ParseModelJson(std::string_view body);

// kApi "invalid response from model server: <what>", the wording every parser uses.
Error BadModelResponse(const std::string& what);

// ParseModelJson, then the checks both JSON protocols start with: the body is an object, and
// an {"error": "..."} envelope becomes kApi "model server error: ...".
Result<nlohmann::json> ModelResponseObject(std::string_view body);

// One output value as watts: a finite, non-negative number below kMaxNodeWatts, else a
// Prediction with a stable reason ("model returned NaN", "... negative watts", ...).
Prediction WattsFromJson(const nlohmann::json& value);

// "HTTP 404: Servable not found for request: Latest(power)": the {"error": "..."} message
// when there is one, else a short printable excerpt of the body; never the request.
std::string DescribeHttpError(long status, std::string_view body);

// "http://host:port" after checking host, port and model name: they come from node labels
// and must not be able to change the URL's shape.
Result<std::string> ModelBaseUrl(const ModelEndpoint& endpoint);
bool IsUrlSafeSegment(std::string_view text);  // [A-Za-z0-9._-]+

// Appends the shortest decimal text that reads back as exactly `value`.
void AppendFloat(std::string& out, float value);
// Appends one row's four inputs in model order: "cpu,ambient,cpu1,cpu2" (no brackets).
void AppendInputs(std::string& out, const ModelInputs& inputs);
// Appends `text` as a JSON string literal (invalid UTF-8 replaced).
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace powerctl::predict
