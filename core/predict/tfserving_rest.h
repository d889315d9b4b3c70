#pragma once
// TensorFlow Serving REST `:predict` (tensorflow_serving/g3doc/api_rest.md):
//   POST http://HOST:PORT/v1/models/NAME[/versions/V | /labels/L]:predict
// All rows for one model go in one request; the answer is one value per row.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/predict/http_batch.h"
#include "core/predict/predictor.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

// How rows are written. TF Serving accepts all three for a model with one input; the answer
// key follows the form ("outputs" for columnar, "predictions" for row), and both are read.
enum class TfRestForm {
  kInputs,       // {"signature_name": S, "inputs": [[cpu, amb, cpu1, cpu2], ...]}: columnar,
                 // unnamed; works whatever the single input is called (WAO's REST client)
  kNamedInputs,  // {"signature_name": S, "inputs": {"inputs": [[...], ...]}}: columnar, named
  kInstances,    // {"signature_name": S, "instances": [[...], ...]}: row format
};

// "inputs" | "named-inputs" | "instances", the words a config setting would use.
Result<TfRestForm> ParseTfRestForm(std::string_view text);
std::string_view TfRestFormName(TfRestForm form);

struct TfServingRestOptions {
  TfRestForm form = TfRestForm::kInputs;
  std::string input_name = "inputs";    // the signature's input, for kNamedInputs
  std::string output_name = "outputs";  // read when the model answers with several outputs
  HttpBatchOptions batch;
};

// The :predict URL. A version of digits selects /versions/V, any other value is a version
// label (/labels/L); the empty version is the latest.
Result<std::string> TfServingPredictUrl(const ModelEndpoint& endpoint);

// The request body; omits signature_name when the endpoint's signature is empty
// (TF Serving then uses "serving_default").
std::string TfServingPredictBody(const ModelEndpoint& endpoint,
                                 const std::vector<ModelInputs>& inputs,
                                 const TfServingRestOptions& options);

// Reads {"outputs": ...} or {"predictions": ...} for `rows` rows. Each row's value may be a
// number or a one-element list; with several outputs, `output_name` is picked. A body that
// does not hold exactly one value per row fails as a whole ("wrong output shape"), so no
// row ever gets another row's number. Never throws.
Result<std::vector<Prediction>> ParseTfServingResponse(std::string_view body, std::size_t rows,
                                                       std::string_view output_name = "outputs");

class TfServingRestPredictor : public HttpBatchPredictor {
 public:
  explicit TfServingRestPredictor(HttpClient& http, TfServingRestOptions options = {});

 protected:
  std::string_view Label() const override { return "tfserving-rest"; }
  Result<std::string> Url(const ModelEndpoint& endpoint) const override;
  std::string Body(const ModelEndpoint& endpoint,
                   const std::vector<ModelInputs>& inputs) const override;
  Result<std::vector<Prediction>> Parse(std::string_view body, std::size_t rows) const override;

 private:
  TfServingRestOptions options_;
};

}  // namespace powerctl::predict
