#pragma once
// The V2 (Open) Inference Protocol over REST, as served by KServe, Triton and MLServer:
//   POST http://HOST:PORT/v2/models/NAME[/versions/V]/infer
//   {"inputs":[{"name":"inputs","shape":[N,4],"datatype":"FP32","data":[...N*4 values...]}]}
// answered by {"outputs":[{"name":...,"shape":[N,1],"datatype":"FP32","data":[...]}]}.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/predict/http_batch.h"
#include "core/predict/predictor.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

struct V2RestOptions {
  std::string input_name = "inputs";
  // Read when the model answers with several outputs; a single output is used whatever its
  // name (WAO's models call it "predict").
  std::string output_name = "outputs";
  HttpBatchOptions batch;
};

Result<std::string> V2InferUrl(const ModelEndpoint& endpoint);

// Row-major flattened FP32 data, as the protocol's canonical form.
std::string V2InferBody(const std::vector<ModelInputs>& inputs, const V2RestOptions& options);

// Reads the chosen output for `rows` rows: a numeric datatype, a shape of [N], [N,1] (or
// any [N,1,...,1]) whose element count matches the data, which may be flat or nested.
// Anything else fails the whole batch ("wrong output shape"). Never throws.
Result<std::vector<Prediction>> ParseV2Response(std::string_view body, std::size_t rows,
                                                std::string_view output_name = "outputs");

class V2RestPredictor : public HttpBatchPredictor {
 public:
  explicit V2RestPredictor(HttpClient& http, V2RestOptions options = {});

 protected:
  std::string_view Label() const override { return "v2"; }
  Result<std::string> Url(const ModelEndpoint& endpoint) const override;
  std::string Body(const ModelEndpoint& endpoint,
                   const std::vector<ModelInputs>& inputs) const override;
  Result<std::vector<Prediction>> Parse(std::string_view body, std::size_t rows) const override;

 private:
  V2RestOptions options_;
};

}  // namespace powerctl::predict
