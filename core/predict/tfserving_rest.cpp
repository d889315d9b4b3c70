#include "core/predict/tfserving_rest.h"

#include <algorithm>
#include <cctype>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;

Error BadResponse(const std::string& what) {
  return BadModelResponse(what);
}

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

void AppendRows(std::string& out, const std::vector<ModelInputs>& inputs) {
  out += '[';
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) out += ',';
    out += '[';
    AppendInputs(out, inputs[i]);
    out += ']';
  }
  out += ']';
}

// One row's value: a number (output shape [N]) or a one-element list (shape [N, 1]); in the
// row format with several outputs, an object keyed by output name.
Result<Prediction> RowValue(const json& item, std::string_view output_name) {
  const json* value = &item;
  if (value->is_object()) {
    auto it = value->find(output_name);
    if (it == value->end()) {
      return BadResponse("no output named \"" + std::string(output_name) + "\"");
    }
    value = &*it;
  }
  if (value->is_array()) {
    if (value->size() != 1) return BadResponse("wrong output shape: expected one value per row");
    value = &(*value)[0];
  }
  if (value->is_array() || value->is_object()) {
    return BadResponse("wrong output shape: expected one value per row");
  }
  return WattsFromJson(*value);
}

}  // namespace

Result<TfRestForm> ParseTfRestForm(std::string_view text) {
  if (text == "inputs") return TfRestForm::kInputs;
  if (text == "named-inputs") return TfRestForm::kNamedInputs;
  if (text == "instances") return TfRestForm::kInstances;
  return MakeError(ErrorCode::kInvalidInput, "TensorFlow Serving REST request form \"" +
                                                 std::string(text) +
                                                 "\": must be inputs, named-inputs or instances");
}

std::string_view TfRestFormName(TfRestForm form) {
  switch (form) {
    case TfRestForm::kInputs:
      return "inputs";
    case TfRestForm::kNamedInputs:
      return "named-inputs";
    case TfRestForm::kInstances:
      return "instances";
  }
  return "inputs";
}

Result<std::string> TfServingPredictUrl(const ModelEndpoint& endpoint) {
  POWERCTL_TRY(base, ModelBaseUrl(endpoint));
  std::string url = base + "/v1/models/" + endpoint.name;
  if (!endpoint.version.empty()) {
    if (!IsUrlSafeSegment(endpoint.version)) {
      return MakeError(ErrorCode::kInvalidInput,
                       "model version must be letters, digits, '.', '_' or '-'");
    }
    // TF Serving's path regex takes digits after /versions/ and anything else after /labels/.
    url += (AllDigits(endpoint.version) ? "/versions/" : "/labels/") + endpoint.version;
  }
  return url + ":predict";
}

std::string TfServingPredictBody(const ModelEndpoint& endpoint,
                                 const std::vector<ModelInputs>& inputs,
                                 const TfServingRestOptions& options) {
  std::string out = "{";
  if (!endpoint.signature.empty()) {
    out += "\"signature_name\":";
    AppendJsonString(out, endpoint.signature);
    out += ',';
  }
  switch (options.form) {
    case TfRestForm::kInputs:
      out += "\"inputs\":";
      AppendRows(out, inputs);
      break;
    case TfRestForm::kNamedInputs:
      out += "\"inputs\":{";
      AppendJsonString(out, options.input_name);
      out += ':';
      AppendRows(out, inputs);
      out += '}';
      break;
    case TfRestForm::kInstances:
      out += "\"instances\":";
      AppendRows(out, inputs);
      break;
  }
  out += '}';
  return out;
}

Result<std::vector<Prediction>> ParseTfServingResponse(std::string_view body, std::size_t rows,
                                                       std::string_view output_name) {
  POWERCTL_TRY(doc, ModelResponseObject(body));
  auto it = doc.find("outputs");
  if (it == doc.end()) it = doc.find("predictions");
  if (it == doc.end()) return BadResponse("neither \"outputs\" nor \"predictions\"");
  const json* values = &*it;
  // Columnar answer of a model with several outputs: {"outputs": {"name": tensor, ...}}.
  if (values->is_object()) {
    auto named = values->find(output_name);
    if (named == values->end()) {
      return BadResponse("no output named \"" + std::string(output_name) + "\"");
    }
    values = &*named;
  }
  if (!values->is_array() || values->size() != rows) {
    return BadResponse("wrong output shape: expected one value per row");
  }
  std::vector<Prediction> out;
  out.reserve(rows);
  for (const json& item : *values) {
    POWERCTL_TRY(prediction, RowValue(item, output_name));
    out.push_back(std::move(prediction));
  }
  return out;
}

TfServingRestPredictor::TfServingRestPredictor(HttpClient& http, TfServingRestOptions options)
    : HttpBatchPredictor(http, options.batch), options_(std::move(options)) {}

Result<std::string> TfServingRestPredictor::Url(const ModelEndpoint& endpoint) const {
  return TfServingPredictUrl(endpoint);
}

std::string TfServingRestPredictor::Body(const ModelEndpoint& endpoint,
                                         const std::vector<ModelInputs>& inputs) const {
  return TfServingPredictBody(endpoint, inputs, options_);
}

Result<std::vector<Prediction>> TfServingRestPredictor::Parse(std::string_view body,
                                                              std::size_t rows) const {
  return ParseTfServingResponse(body, rows, options_.output_name);
}

}  // namespace powerctl::predict
