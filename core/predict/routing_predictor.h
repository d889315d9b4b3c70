#pragma once
// Sends each row to the predictor of its ModelEndpoint::backend. Rows that share an endpoint
// (equal Key()) go to their backend in one call, so a model server sees one batched request;
// different endpoints are asked concurrently, so a hanging server costs the others nothing.
// A model server whose every row failed is skipped for a back-off period (EndpointBreaker),
// so a dead or hanging server does not cost every scheduling request a full timeout.

#include "core/predict/endpoint_breaker.h"
#include "core/predict/predictor.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::predict {

class RoutingPredictor : public Predictor {
 public:
  // backend name ("builtin", "tfserving-grpc", "tfserving-rest", "v2") -> predictor.
  // Predictors must be safe to call from several threads at once.
  explicit RoutingPredictor(std::map<std::string, std::shared_ptr<Predictor>> backends,
                            int max_parallel_endpoints = 16, BreakerOptions breaker = {});

  // Results come back in the order of `rows`. A row whose backend is not registered, or
  // whose backend misbehaves (throws, returns the wrong count), gets a reason.
  std::vector<Prediction> Predict(PredictionRows rows, std::chrono::milliseconds deadline) override;
  // As the endpoint's backend says.
  bool RepeatsAnswers(const ModelEndpoint& endpoint) const override;

  // Model servers whose last call failed (e.g. "tfserving-rest 10.0.0.5:8501 power"), and why.
  std::vector<EndpointBreaker::Failure> FailingEndpoints() const { return breaker_.Failing(); }

 private:
  std::map<std::string, std::shared_ptr<Predictor>> backends_;
  int max_parallel_endpoints_;
  EndpointBreaker breaker_;  // model servers only; the built-in model cannot be down
};

}  // namespace powerctl::predict
