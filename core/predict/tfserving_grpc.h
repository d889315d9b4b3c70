#pragma once
// TensorFlow Serving over gRPC: tensorflow.serving.PredictionService/Predict with input
// "inputs" (DT_FLOAT [N,4]: cpu, ambient, cpu1, cpu2) and output "outputs" (N watts,
// shape [N] or [N,1]). One batched call per model endpoint, all endpoints concurrently;
// a model that rejects a batch (INVALID_ARGUMENT) is asked again row by row.
//
// gRPC and protobuf types stay out of this header so that callers (the CLI, the scorer)
// need neither the generated code nor the gRPC include paths.

#include "core/predict/predictor.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

// Per-row error wording; stable so that callers and tests can match on it.
inline constexpr std::string_view kErrUnreachable = "model server unreachable";
inline constexpr std::string_view kErrTimedOut = "model server timed out";
inline constexpr std::string_view kErrModelNotFound = "model not found";
inline constexpr std::string_view kErrRejected = "model rejected the input";
inline constexpr std::string_view kErrBadEndpoint = "invalid model endpoint";
inline constexpr std::string_view kErrWrongBackend = "model backend is not tfserving-grpc";
inline constexpr std::string_view kErrBadInputs = "model inputs are not finite";
inline constexpr std::string_view kErrNoOutput = "model response has no outputs tensor";
inline constexpr std::string_view kErrBadShape = "model output has an unexpected shape";
inline constexpr std::string_view kErrBadType = "model output is not a float tensor";
// Value checks word their reasons like the REST backends (core/predict/http_batch.cpp).
inline constexpr std::string_view kErrNaN = "model returned NaN";
inline constexpr std::string_view kErrInfinite = "model returned an infinite value";
inline constexpr std::string_view kErrNegative = "model returned negative watts";
inline constexpr std::string_view kErrTooHigh =
    "model returned implausibly high watts (over 100 kW)";
inline constexpr std::string_view kErrUnparsable = "model response is not a PredictResponse";

struct TfServingGrpcOptions {
  // Cap on RPCs in flight per Predict() call; matters only for the row-by-row fallback
  // (servers allow ~100 concurrent streams per connection, the rest would queue anyway).
  std::size_t max_in_flight = 64;
  // gRPC's default receive cap is 4 MiB; N watts need ~4N bytes, so this allows ~16M rows
  // while still bounding what a misbehaving server can make us allocate.
  int max_receive_bytes = 64 << 20;
};

class TfServingGrpcPredictor final : public Predictor {
 public:
  explicit TfServingGrpcPredictor(TfServingGrpcOptions options = {});
  ~TfServingGrpcPredictor() override;
  TfServingGrpcPredictor(const TfServingGrpcPredictor&) = delete;
  TfServingGrpcPredictor& operator=(const TfServingGrpcPredictor&) = delete;

  // Rows whose backend is not "tfserving-grpc" get kErrWrongBackend. `deadline` bounds the
  // whole call, the single-row fallback included. Thread-safe.
  std::vector<Prediction> Predict(PredictionRows rows, std::chrono::milliseconds deadline) override;

 private:
  class ChannelCache;
  TfServingGrpcOptions options_;
  std::unique_ptr<ChannelCache> channels_;  // one channel per host:port, reused across calls
};

// Reads `rows` watts from a serialized PredictResponse exactly as Predict() does (the
// "outputs" tensor, or the only tensor; float or double; float_val/double_val or
// tensor_content; a single value broadcast). Exposed for the fuzzer and tests.
std::vector<Prediction> ParsePredictResponseWatts(std::string_view serialized, std::size_t rows);

}  // namespace powerctl::predict
