#include "core/predict/v2_rest.h"

#include <algorithm>
#include <array>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;

// Nested data deeper than any [N,1] tensor needs is refused rather than walked.
constexpr int kMaxDataDepth = 8;

Error BadV2Response(const std::string& what) {
  return BadModelResponse(what);
}

Error WrongShape() {
  return BadV2Response("wrong output shape: expected one value per row");
}

// Row-major leaves of `data`, nested or flat; false when nested deeper than kMaxDataDepth
// or holding more leaves than `limit` (the caller needs exactly `limit`).
bool Flatten(const json& data, int depth, std::size_t limit, std::vector<const json*>& out) {
  if (!data.is_array()) {
    if (out.size() >= limit) return false;
    out.push_back(&data);
    return true;
  }
  if (depth >= kMaxDataDepth) return false;
  for (const json& item : data) {
    if (!Flatten(item, depth + 1, limit, out)) return false;
  }
  return true;
}

// Watts need a number: BOOL and BYTES outputs are not a power model's.
bool IsNumericDatatype(std::string_view type) {
  constexpr std::array<std::string_view, 12> kNumeric = {"UINT8", "UINT16", "UINT32", "UINT64",
                                                         "INT8",  "INT16",  "INT32",  "INT64",
                                                         "FP16",  "FP32",   "FP64",   "BF16"};
  return std::find(kNumeric.begin(), kNumeric.end(), type) != kNumeric.end();
}

// The shape, when present, must be [rows] or [rows, 1, ..., 1].
bool ShapeFits(const json& shape, std::size_t rows) {
  if (!shape.is_array() || shape.empty()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const json& dim = shape[i];
    if (!dim.is_number_integer()) return false;
    const auto want = static_cast<long long>(i == 0 ? rows : 1);
    if (dim.get<long long>() != want) return false;
  }
  return true;
}

}  // namespace

Result<std::string> V2InferUrl(const ModelEndpoint& endpoint) {
  POWERCTL_TRY(base, ModelBaseUrl(endpoint));
  std::string url = base + "/v2/models/" + endpoint.name;
  if (!endpoint.version.empty()) {
    if (!IsUrlSafeSegment(endpoint.version)) {
      return MakeError(ErrorCode::kInvalidInput,
                       "model version must be letters, digits, '.', '_' or '-'");
    }
    url += "/versions/" + endpoint.version;
  }
  return url + "/infer";
}

std::string V2InferBody(const std::vector<ModelInputs>& inputs, const V2RestOptions& options) {
  std::string out = "{\"inputs\":[{\"name\":";
  AppendJsonString(out, options.input_name);
  out += ",\"shape\":[" + std::to_string(inputs.size()) + ",4],\"datatype\":\"FP32\",\"data\":[";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) out += ',';
    AppendInputs(out, inputs[i]);
  }
  out += "]}]}";
  return out;
}

Result<std::vector<Prediction>> ParseV2Response(std::string_view body, std::size_t rows,
                                                std::string_view output_name) {
  POWERCTL_TRY(doc, ModelResponseObject(body));
  auto outputs = doc.find("outputs");
  if (outputs == doc.end() || !outputs->is_array() || outputs->empty()) {
    return BadV2Response("no \"outputs\"");
  }
  const json* output = nullptr;
  if (outputs->size() == 1) {
    output = &(*outputs)[0];
  } else {
    for (const json& candidate : *outputs) {
      auto name = candidate.is_object() ? candidate.find("name") : candidate.end();
      if (name != candidate.end() && name->is_string() && *name == output_name) output = &candidate;
    }
    if (output == nullptr) {
      return BadV2Response("no output named \"" + std::string(output_name) + "\"");
    }
  }
  if (!output->is_object()) return BadV2Response("output is not an object");
  if (auto type = output->find("datatype"); type != output->end()) {
    if (!type->is_string() || !IsNumericDatatype(type->get<std::string>())) {
      return BadV2Response("output datatype is not numeric");
    }
  }
  if (auto shape = output->find("shape"); shape != output->end() && !ShapeFits(*shape, rows)) {
    return WrongShape();
  }
  auto data = output->find("data");
  if (data == output->end() || !data->is_array()) return BadV2Response("output has no \"data\"");
  std::vector<const json*> leaves;
  leaves.reserve(rows);
  if (!Flatten(*data, 0, rows, leaves) || leaves.size() != rows) return WrongShape();
  std::vector<Prediction> out;
  out.reserve(rows);
  for (const json* leaf : leaves) out.push_back(WattsFromJson(*leaf));
  return out;
}

V2RestPredictor::V2RestPredictor(HttpClient& http, V2RestOptions options)
    : HttpBatchPredictor(http, options.batch), options_(std::move(options)) {}

Result<std::string> V2RestPredictor::Url(const ModelEndpoint& endpoint) const {
  return V2InferUrl(endpoint);
}

std::string V2RestPredictor::Body(const ModelEndpoint& /*endpoint*/,
                                  const std::vector<ModelInputs>& inputs) const {
  return V2InferBody(inputs, options_);
}

Result<std::vector<Prediction>> V2RestPredictor::Parse(std::string_view body,
                                                       std::size_t rows) const {
  return ParseV2Response(body, rows, options_.output_name);
}

}  // namespace powerctl::predict
