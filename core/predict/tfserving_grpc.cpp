#include "core/predict/tfserving_grpc.h"

#include "core/predict/builtin_model.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"

namespace powerctl::predict {
namespace {

namespace tfs = tensorflow::serving;
using Stub = tfs::PredictionService::Stub;

constexpr std::string_view kBackend = "tfserving-grpc";
constexpr char kInputName[] = "inputs";
constexpr char kOutputName[] = "outputs";
constexpr char kDefaultSignature[] = "serving_default";
constexpr int kFeatures = 4;  // cpu, ambient, cpu1, cpu2: the model's input width

std::vector<Prediction> FailAll(std::size_t n, std::string_view why) {
  return std::vector<Prediction>(n, Prediction{std::nullopt, std::string(why)});
}

std::string Target(const std::string& host, int port) {
  // gRPC parses "a:b:c:port" ambiguously, so IPv6 literals need brackets.
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (bare_ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool EndpointValid(const ModelEndpoint& m) {
  return !m.host.empty() && m.port > 0 && m.port <= 65535 && !m.name.empty();
}

bool InputsFinite(const ModelInputs& in) {
  return std::isfinite(in.cpu_fraction) && std::isfinite(in.ambient) && std::isfinite(in.cpu1) &&
         std::isfinite(in.cpu2);
}

void FillModelSpec(const ModelEndpoint& model, tfs::ModelSpec* spec) {
  spec->set_name(model.name);
  if (!model.version.empty()) {
    // TF Serving versions are integers; anything else names a version label ("stable").
    std::int64_t number = 0;
    const char* end = model.version.data() + model.version.size();
    auto [ptr, ec] = std::from_chars(model.version.data(), end, number);
    if (ec == std::errc() && ptr == end && number >= 0) {
      spec->mutable_version()->set_value(number);
    } else {
      spec->set_version_label(model.version);
    }
  }
  spec->set_signature_name(model.signature.empty() ? kDefaultSignature : model.signature);
}

tfs::PredictRequest BuildRequest(PredictionRows rows, const std::vector<std::size_t>& indices) {
  tfs::PredictRequest request;
  FillModelSpec(rows[indices.front()].endpoint(), request.mutable_model_spec());
  tensorflow::TensorProto& tensor = (*request.mutable_inputs())[kInputName];
  tensor.set_dtype(tensorflow::DT_FLOAT);
  tensor.mutable_tensor_shape()->add_dim()->set_size(static_cast<std::int64_t>(indices.size()));
  tensor.mutable_tensor_shape()->add_dim()->set_size(kFeatures);
  auto* values = tensor.mutable_float_val();
  values->Reserve(static_cast<int>(indices.size() * kFeatures));
  for (std::size_t i : indices) {
    const ModelInputs& in = rows[i].inputs;
    values->Add(in.cpu_fraction);
    values->Add(in.ambient);
    values->Add(in.cpu1);
    values->Add(in.cpu2);
  }
  return request;
}

// Decodes tensor_content: raw little-endian values whatever the host's byte order.
template <typename Float, typename Bits>
bool DecodeContent(const std::string& content, std::size_t n, std::vector<double>* out) {
  if (content.size() != n * sizeof(Bits)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    Bits bits = 0;
    for (std::size_t b = 0; b < sizeof(Bits); ++b) {
      bits |= static_cast<Bits>(static_cast<unsigned char>(content[i * sizeof(Bits) + b]))
              << (8 * b);
    }
    out->push_back(static_cast<double>(std::bit_cast<Float>(bits)));
  }
  return true;
}

// A repeated field holds n values, or one that TensorFlow broadcasts to the whole shape.
template <typename Field>
bool CopyRepeated(const Field& field, std::size_t n, std::vector<double>* out) {
  const auto size = static_cast<std::size_t>(field.size());
  if (size != n && size != 1) return false;
  for (std::size_t i = 0; i < n; ++i) {
    out->push_back(static_cast<double>(field[size == 1 ? 0 : static_cast<int>(i)]));
  }
  return true;
}

const tensorflow::TensorProto* FindOutput(const tfs::PredictResponse& response) {
  auto it = response.outputs().find(kOutputName);
  if (it != response.outputs().end()) return &it->second;
  // A signature with a single differently named output is unambiguous; accept it.
  if (response.outputs().size() == 1) return &response.outputs().begin()->second;
  return nullptr;
}

bool ShapeIsRows(const tensorflow::TensorShapeProto& shape, std::size_t n) {
  const auto rows = static_cast<std::int64_t>(n);
  if (shape.unknown_rank() || shape.dim_size() < 1 || shape.dim_size() > 2) return false;
  if (shape.dim(0).size() != rows) return false;
  return shape.dim_size() == 1 || shape.dim(1).size() == 1;
}

std::vector<Prediction> ReadWatts(const tfs::PredictResponse& response, std::size_t n) {
  const tensorflow::TensorProto* tensor = FindOutput(response);
  if (tensor == nullptr) return FailAll(n, kErrNoOutput);
  if (!ShapeIsRows(tensor->tensor_shape(), n)) return FailAll(n, kErrBadShape);
  std::vector<double> values;
  values.reserve(n);
  bool ok = false;
  if (tensor->dtype() == tensorflow::DT_FLOAT) {
    ok = tensor->tensor_content().empty()
             ? CopyRepeated(tensor->float_val(), n, &values)
             : DecodeContent<float, std::uint32_t>(tensor->tensor_content(), n, &values);
  } else if (tensor->dtype() == tensorflow::DT_DOUBLE) {
    ok = tensor->tensor_content().empty()
             ? CopyRepeated(tensor->double_val(), n, &values)
             : DecodeContent<double, std::uint64_t>(tensor->tensor_content(), n, &values);
  } else {
    return FailAll(n, kErrBadType);
  }
  if (!ok) return FailAll(n, kErrBadShape);
  std::vector<Prediction> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(values[i])) {
      out[i].error = kErrNaN;
    } else if (std::isinf(values[i])) {
      out[i].error = kErrInfinite;
    } else if (values[i] < 0) {
      out[i].error = kErrNegative;
    } else if (values[i] > kMaxNodeWatts) {
      out[i].error = kErrTooHigh;
    } else {
      out[i].watts = values[i];
    }
  }
  return out;
}

std::string StatusError(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return std::string(kErrUnreachable);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return std::string(kErrTimedOut);
    case grpc::StatusCode::NOT_FOUND:
      return std::string(kErrModelNotFound);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return std::string(kErrRejected);
    case grpc::StatusCode::UNIMPLEMENTED:
      return "model server does not implement Predict";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "model server resource exhausted";
    default:
      // The code, not the message: messages carry per-request details (versions, sizes).
      return "model server error (code " + std::to_string(status.error_code()) + ")";
  }
}

// One RPC: a whole model group (batch) or one row of it (fallback).
struct Call {
  std::vector<std::size_t> rows;  // indices into the caller's rows
  bool batch = false;
  std::shared_ptr<Stub> stub;
  grpc::ClientContext context;
  tfs::PredictResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<tfs::PredictResponse>> reader;
};

}  // namespace

class TfServingGrpcPredictor::ChannelCache {
 public:
  explicit ChannelCache(int max_receive_bytes) : max_receive_bytes_(max_receive_bytes) {}

  // The stub owns a reference to the channel; both are thread-safe and live as long as the
  // predictor, so repeated Predict() calls reuse the HTTP/2 connection.
  std::shared_ptr<Stub> Get(const std::string& target) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Stub>& stub = stubs_[target];
    if (!stub) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(max_receive_bytes_);
      stub = tfs::PredictionService::NewStub(
          grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
    }
    return stub;
  }

 private:
  const int max_receive_bytes_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Stub>> stubs_;
};

TfServingGrpcPredictor::TfServingGrpcPredictor(TfServingGrpcOptions options)
    : options_(options), channels_(std::make_unique<ChannelCache>(options.max_receive_bytes)) {}

TfServingGrpcPredictor::~TfServingGrpcPredictor() = default;

std::vector<Prediction> TfServingGrpcPredictor::Predict(PredictionRows rows,
                                                        std::chrono::milliseconds deadline) {
  std::vector<Prediction> out(rows.size());
  // One absolute deadline for every RPC, so the fallback cannot extend the caller's budget.
  const auto until =
      std::chrono::system_clock::now() + std::max(deadline, std::chrono::milliseconds::zero());

  std::map<std::string, std::vector<std::size_t>> groups;  // by ModelEndpoint::Key()
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ModelEndpoint& model = rows[i].endpoint();
    if (model.backend != kBackend) {
      out[i].error = kErrWrongBackend;
    } else if (!EndpointValid(model)) {
      out[i].error = kErrBadEndpoint;
    } else if (!InputsFinite(rows[i].inputs)) {
      out[i].error = kErrBadInputs;
    } else {
      groups[model.Key()].push_back(i);
    }
  }

  // Declared before `calls`: contexts and readers must go before the queue they used.
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<Call>> calls;
  std::deque<Call*> pending;
  auto enqueue = [&](std::vector<std::size_t> indices, bool batch) {
    auto call = std::make_unique<Call>();
    const ModelEndpoint& model = rows[indices.front()].endpoint();
    call->stub = channels_->Get(Target(model.host, model.port));
    call->rows = std::move(indices);
    call->batch = batch;
    call->context.set_deadline(until);
    pending.push_back(call.get());
    calls.push_back(std::move(call));
  };
  for (auto& [key, indices] : groups) enqueue(std::move(indices), true);

  std::size_t in_flight = 0;
  const std::size_t max_in_flight = std::max<std::size_t>(options_.max_in_flight, 1);
  while (!pending.empty() || in_flight > 0) {
    while (in_flight < max_in_flight && !pending.empty()) {
      Call* call = pending.front();
      pending.pop_front();
      // The request is serialized by StartCall, so it need not outlive this scope.
      call->reader =
          call->stub->PrepareAsyncPredict(&call->context, BuildRequest(rows, call->rows), &cq);
      call->reader->StartCall();
      call->reader->Finish(&call->response, &call->status, call);
      ++in_flight;
    }
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok)) break;  // only after Shutdown(), which comes below
    --in_flight;
    Call* call = static_cast<Call*>(tag);
    if (call->status.ok()) {
      std::vector<Prediction> got = ReadWatts(call->response, call->rows.size());
      for (std::size_t k = 0; k < call->rows.size(); ++k) out[call->rows[k]] = std::move(got[k]);
    } else if (call->batch && call->rows.size() > 1 &&
               call->status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      // Models exported without a batch dimension reject [N,4]; ask for each row alone.
      for (std::size_t i : call->rows) enqueue({i}, false);
    } else {
      const std::string why = StatusError(call->status);
      for (std::size_t i : call->rows) out[i].error = why;
    }
    call->response.Clear();  // the fallback may create thousands of calls; free as we go
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  return out;
}

std::vector<Prediction> ParsePredictResponseWatts(std::string_view serialized, std::size_t rows) {
  tfs::PredictResponse response;
  if (serialized.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !response.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return FailAll(rows, kErrUnparsable);
  }
  return ReadWatts(response, rows);
}

}  // namespace powerctl::predict
