#pragma once
// An in-process TensorFlow Serving PredictionService on 127.0.0.1 (a free port), built from
// the same protos as the client, for the gRPC predictor's tests and benchmark.
//
// It validates requests the way TF Serving does where the predictor depends on it: unknown
// model or version -> NOT_FOUND; wrong signature, input name, dtype or shape ->
// INVALID_ARGUMENT. The default model is watts = 100 + 200*cpu + 10*(ambient+cpu1+cpu2),
// answered as "outputs" DT_FLOAT [N,1]. Behaviour is set before the predictor runs;
// counters are atomic so tests can assert how many RPCs and rows arrived.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace powerctl::predict::fake {

inline double ReferenceWatts(float cpu, float ambient, float cpu1, float cpu2) {
  return 100.0 + 200.0 * cpu + 10.0 * (static_cast<double>(ambient) + cpu1 + cpu2);
}

struct FakeTfServingConfig {
  std::string model_name = "power";
  std::int64_t version = 3;
  std::string version_label = "stable";  // the one label that resolves (to `version`)
  bool reject_batches = false;           // INVALID_ARGUMENT when N > 1 (no batch dimension)
  bool output_rank1 = false;             // answer shape [N] instead of [N,1]
  std::chrono::milliseconds delay{0};    // before answering; cut short by cancellation
  // Row -> watts; defaults to ReferenceWatts. Lets tests inject NaN, Inf, negatives.
  std::function<double(const float* row)> model;
};

class FakeTfServing final : public tensorflow::serving::PredictionService::Service {
 public:
  explicit FakeTfServing(FakeTfServingConfig config = {}) : config_(std::move(config)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeTfServing() override { Stop(); }

  // After Stop() the port refuses connections: a "model server down" for tests.
  void Stop() {
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      server_.reset();
    }
  }

  int port() const { return port_; }
  int calls() const { return calls_.load(); }
  long rows() const { return rows_.load(); }
  std::set<std::string> peers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peers_;
  }
  tensorflow::serving::PredictRequest last_request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_request_;
  }

  grpc::Status Predict(grpc::ServerContext* context,
                       const tensorflow::serving::PredictRequest* request,
                       tensorflow::serving::PredictResponse* response) override {
    ++calls_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      peers_.insert(context->peer());
      last_request_ = *request;
    }
    const auto until = std::chrono::steady_clock::now() + config_.delay;
    while (std::chrono::steady_clock::now() < until) {
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Answer(*request, response);
  }

 private:
  grpc::Status Answer(const tensorflow::serving::PredictRequest& request,
                      tensorflow::serving::PredictResponse* response) {
    const auto& spec = request.model_spec();
    if (spec.name() != config_.model_name ||
        (spec.has_version() && spec.version().value() != config_.version) ||
        (spec.version_choice_case() == spec.kVersionLabel &&
         spec.version_label() != config_.version_label)) {
      return {grpc::StatusCode::NOT_FOUND, "Servable not found for request: " + spec.name()};
    }
    if (!spec.signature_name().empty() && spec.signature_name() != "serving_default") {
      return {grpc::StatusCode::INVALID_ARGUMENT, "Serving signature name not found"};
    }
    auto input = request.inputs().find("inputs");
    if (input == request.inputs().end()) return {grpc::StatusCode::INVALID_ARGUMENT, "no inputs"};
    const tensorflow::TensorProto& tensor = input->second;
    const auto& shape = tensor.tensor_shape();
    if (tensor.dtype() != tensorflow::DT_FLOAT || shape.dim_size() != 2 ||
        shape.dim(1).size() != 4 || tensor.float_val_size() != shape.dim(0).size() * 4) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "expects DT_FLOAT [N,4]"};
    }
    const std::int64_t n = shape.dim(0).size();
    if (config_.reject_batches && n > 1) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "input must have batch size 1"};
    }
    rows_ += n;
    response->mutable_model_spec()->set_name(spec.name());
    response->mutable_model_spec()->mutable_version()->set_value(config_.version);
    response->mutable_model_spec()->set_signature_name("serving_default");
    tensorflow::TensorProto& out = (*response->mutable_outputs())["outputs"];
    out.set_dtype(tensorflow::DT_FLOAT);
    out.mutable_tensor_shape()->add_dim()->set_size(n);
    if (!config_.output_rank1) out.mutable_tensor_shape()->add_dim()->set_size(1);
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = tensor.float_val().data() + i * 4;
      const double watts =
          config_.model ? config_.model(row) : ReferenceWatts(row[0], row[1], row[2], row[3]);
      out.add_float_val(static_cast<float>(watts));
    }
    return grpc::Status::OK;
  }

  FakeTfServingConfig config_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> calls_{0};
  std::atomic<long> rows_{0};
  mutable std::mutex mu_;
  std::set<std::string> peers_;
  tensorflow::serving::PredictRequest last_request_;
};

}  // namespace powerctl::predict::fake
