#include "core/predict/predictor_factory.h"

#include "core/common/duration.h"
#include "core/predict/builtin_model.h"
#include "core/predict/routing_predictor.h"
#include "core/predict/tfserving_grpc.h"
#include "core/predict/tfserving_rest.h"
#include "core/predict/v2_rest.h"

#include <map>
#include <string>

namespace powerctl::predict {

Result<ConfiguredPredictor> MakeConfiguredPredictor(const config::PredictorSettings& settings,
                                                    HttpClient& http) {
  auto timeout = ParseDuration(settings.timeout);
  if (!timeout.ok()) return WithContext(timeout.error(), "predictor.timeout");
  if (*timeout <= std::chrono::milliseconds(0)) {
    return MakeError(ErrorCode::kInvalidInput, "predictor.timeout: must be positive");
  }
  std::map<std::string, std::shared_ptr<Predictor>> backends;
  backends["builtin"] = std::make_shared<BuiltinPredictor>();
  const std::string& backend = settings.backend;
  if (backend == "tfserving-grpc") {
    backends[backend] = std::make_shared<TfServingGrpcPredictor>();
  } else if (backend == "tfserving-rest") {
    auto form = ParseTfRestForm(settings.rest.request_form);
    if (!form.ok()) return WithContext(form.error(), "predictor.rest.requestForm");
    TfServingRestOptions options;
    options.form = *form;
    options.input_name = settings.rest.input_name;
    options.output_name = settings.rest.output_name;
    backends[backend] = std::make_shared<TfServingRestPredictor>(http, options);
  } else if (backend == "v2") {
    V2RestOptions options;
    options.input_name = settings.rest.input_name;
    options.output_name = settings.rest.output_name;
    backends[backend] = std::make_shared<V2RestPredictor>(http, options);
  } else if (backend != "builtin") {
    return MakeError(ErrorCode::kInvalidInput,
                     "predictor.backend \"" + backend +
                         "\": must be builtin, tfserving-grpc, tfserving-rest or v2");
  }
  ConfiguredPredictor configured;
  auto routing = std::make_unique<RoutingPredictor>(std::move(backends));
  configured.routing = routing.get();
  configured.predictor = std::move(routing);
  configured.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  return configured;
}

}  // namespace powerctl::predict
