// The TF Serving gRPC predictor against an in-process PredictionService (fake_tfserving.h):
// batching, model spec on the wire, channel reuse, and each failure as a per-row reason.

#include "core/predict/tfserving_grpc.h"

#include "tests/unit/fake_tfserving.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace powerctl::predict {
namespace {

using fake::FakeTfServing;
using fake::FakeTfServingConfig;
using fake::ReferenceWatts;
using std::chrono::milliseconds;

ModelEndpoint Endpoint(int port, std::string name = "power", std::string version = "") {
  ModelEndpoint m;
  m.backend = "tfserving-grpc";
  m.host = "127.0.0.1";
  m.port = port;
  m.name = std::move(name);
  m.version = std::move(version);
  return m;
}

std::vector<PredictionRow> Rows(std::size_t n, const ModelEndpoint& model) {
  std::vector<PredictionRow> rows(n);
  auto shared = std::make_shared<const ModelEndpoint>(model);
  for (std::size_t i = 0; i < n; ++i) {
    rows[i].model = shared;
    rows[i].inputs = {static_cast<float>(i % 100) / 100.0f, 0.25f, 0.5f,
                      static_cast<float>(i % 7) / 7.0f};
  }
  return rows;
}

void ExpectReferenceWatts(PredictionRows rows, const std::vector<Prediction>& got) {
  ASSERT_EQ(got.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ModelInputs& in = rows[i].inputs;
    ASSERT_TRUE(got[i].watts.has_value()) << "row " << i << ": " << got[i].error;
    EXPECT_NEAR(*got[i].watts, ReferenceWatts(in.cpu_fraction, in.ambient, in.cpu1, in.cpu2), 1e-3);
  }
}

void ExpectAllFail(const std::vector<Prediction>& got, std::string_view error) {
  for (const Prediction& p : got) {
    EXPECT_FALSE(p.watts.has_value());
    EXPECT_EQ(p.error, error);
  }
}

TEST(TfServingGrpcTest, ThousandNodesAreOneRpc) {
  FakeTfServing server;
  TfServingGrpcPredictor predictor;
  auto rows = Rows(1000, Endpoint(server.port()));
  auto got = predictor.Predict(rows, milliseconds(5000));
  ExpectReferenceWatts(rows, got);
  EXPECT_EQ(server.calls(), 1);
  EXPECT_EQ(server.rows(), 1000);
}

TEST(TfServingGrpcTest, SendsTheModelSpecAndInputTensor) {
  FakeTfServing server;
  TfServingGrpcPredictor predictor;
  auto rows = Rows(2, Endpoint(server.port(), "power", "3"));
  ExpectReferenceWatts(rows, predictor.Predict(rows, milliseconds(5000)));
  const auto request = server.last_request();
  EXPECT_EQ(request.model_spec().name(), "power");
  EXPECT_EQ(request.model_spec().version().value(), 3);
  EXPECT_EQ(request.model_spec().signature_name(), "serving_default");
  const tensorflow::TensorProto& in = request.inputs().at("inputs");
  EXPECT_EQ(in.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(in.tensor_shape().dim_size(), 2);
  EXPECT_EQ(in.tensor_shape().dim(0).size(), 2);
  EXPECT_EQ(in.tensor_shape().dim(1).size(), 4);
  ASSERT_EQ(in.float_val_size(), 8);
  EXPECT_EQ(in.float_val(4), rows[1].inputs.cpu_fraction);
  EXPECT_EQ(in.float_val(7), rows[1].inputs.cpu2);

  rows = Rows(1, Endpoint(server.port(), "power", "stable"));
  ExpectReferenceWatts(rows, predictor.Predict(rows, milliseconds(5000)));
  EXPECT_EQ(server.last_request().model_spec().version_label(), "stable");
}

TEST(TfServingGrpcTest, ReusesTheChannelPerEndpoint) {
  FakeTfServing server;
  TfServingGrpcPredictor predictor;
  auto rows = Rows(3, Endpoint(server.port()));
  for (int i = 0; i < 3; ++i)
    ExpectReferenceWatts(rows, predictor.Predict(rows, milliseconds(5000)));
  EXPECT_EQ(server.calls(), 3);
  EXPECT_EQ(server.peers().size(), 1u);  // one client connection served every call
}

TEST(TfServingGrpcTest, ConcurrentCallersShareThePredictor) {
  FakeTfServing a;
  FakeTfServing b;
  TfServingGrpcPredictor predictor;
  std::vector<std::thread> callers;
  std::atomic<int> good{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      auto rows = Rows(50, Endpoint(t % 2 == 0 ? a.port() : b.port()));
      auto got = predictor.Predict(rows, milliseconds(5000));
      for (const Prediction& p : got) good += p.watts.has_value() ? 1 : 0;
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(good.load(), 8 * 50);
  EXPECT_EQ(a.calls() + b.calls(), 8);
}

TEST(TfServingGrpcTest, OneRpcPerModelAndFailuresStayInTheirRows) {
  FakeTfServing a;
  FakeTfServing b(FakeTfServingConfig{.model_name = "other"});
  FakeTfServing down;
  const int down_port = down.port();
  down.Stop();
  TfServingGrpcPredictor predictor;
  auto rows = Rows(10, Endpoint(a.port()));
  auto more = Rows(10, Endpoint(b.port(), "other"));
  rows.insert(rows.end(), more.begin(), more.end());
  rows[4].model = std::make_shared<const ModelEndpoint>(Endpoint(down_port));
  rows[5].inputs.ambient = std::numeric_limits<float>::quiet_NaN();
  testsupport::EditEndpoint(rows[6], [](ModelEndpoint& e) { e.backend = "builtin"; });
  testsupport::EditEndpoint(rows[7], [](ModelEndpoint& e) { e.port = 0; });
  auto got = predictor.Predict(rows, milliseconds(5000));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(b.calls(), 1);
  EXPECT_EQ(a.rows() + b.rows(), 16);
  EXPECT_EQ(got[4].error, kErrUnreachable);
  EXPECT_EQ(got[5].error, kErrBadInputs);
  EXPECT_EQ(got[6].error, kErrWrongBackend);
  EXPECT_EQ(got[7].error, kErrBadEndpoint);
  for (std::size_t i : {0, 3, 8, 9, 10, 19}) {
    ASSERT_TRUE(got[i].watts.has_value()) << i << ": " << got[i].error;
  }
}

TEST(TfServingGrpcTest, ServerDownIsUnreachable) {
  int port = 0;
  {
    FakeTfServing server;
    port = server.port();
  }
  TfServingGrpcPredictor predictor;
  auto got = predictor.Predict(Rows(5, Endpoint(port)), milliseconds(3000));
  ExpectAllFail(got, kErrUnreachable);
}

TEST(TfServingGrpcTest, HangingServerHitsTheDeadline) {
  FakeTfServing server(FakeTfServingConfig{.delay = milliseconds(10000)});
  TfServingGrpcPredictor predictor;
  const auto start = std::chrono::steady_clock::now();
  auto got = predictor.Predict(Rows(5, Endpoint(server.port())), milliseconds(150));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ExpectAllFail(got, kErrTimedOut);
  EXPECT_LT(elapsed, milliseconds(1500));
}

TEST(TfServingGrpcTest, WrongModelNameOrVersionIsNotFound) {
  FakeTfServing server;
  TfServingGrpcPredictor predictor;
  ExpectAllFail(predictor.Predict(Rows(3, Endpoint(server.port(), "nope")), milliseconds(3000)),
                kErrModelNotFound);
  ExpectAllFail(
      predictor.Predict(Rows(3, Endpoint(server.port(), "power", "7")), milliseconds(3000)),
      kErrModelNotFound);
  EXPECT_EQ(server.calls(), 2);  // NOT_FOUND is final: no row-by-row retry
}

TEST(TfServingGrpcTest, RejectedBatchFallsBackToSingleRows) {
  FakeTfServing server(FakeTfServingConfig{.reject_batches = true, .output_rank1 = true});
  TfServingGrpcPredictor predictor;
  auto rows = Rows(20, Endpoint(server.port()));
  ExpectReferenceWatts(rows, predictor.Predict(rows, milliseconds(5000)));
  EXPECT_EQ(server.calls(), 1 + 20);
  EXPECT_EQ(server.rows(), 20);
}

TEST(TfServingGrpcTest, InvalidSingleRowIsRejected) {
  FakeTfServing server;
  TfServingGrpcPredictor predictor;
  auto rows = Rows(3, Endpoint(server.port()));
  for (auto& row : rows) {
    testsupport::EditEndpoint(row, [](ModelEndpoint& e) { e.signature = "missing"; });
  }
  ExpectAllFail(predictor.Predict(rows, milliseconds(5000)), kErrRejected);
  EXPECT_EQ(server.calls(), 1 + 3);
}

TEST(TfServingGrpcTest, NonFiniteAndNegativeOutputsAreRejectedPerRow) {
  FakeTfServingConfig config;
  config.model = [](const float* row) {
    if (row[0] >= 0.9f) return std::numeric_limits<double>::quiet_NaN();
    if (row[0] >= 0.8f) return std::numeric_limits<double>::infinity();
    if (row[0] >= 0.7f) return -5.0;
    return 100.0;
  };
  FakeTfServing server(config);
  TfServingGrpcPredictor predictor;
  auto rows = Rows(4, Endpoint(server.port()));
  for (std::size_t i = 0; i < 4; ++i) rows[i].inputs.cpu_fraction = 0.95f - 0.1f * i;
  auto got = predictor.Predict(rows, milliseconds(5000));
  EXPECT_EQ(got[0].error, kErrNaN);
  EXPECT_EQ(got[1].error, kErrInfinite);
  EXPECT_EQ(got[2].error, kErrNegative);
  EXPECT_EQ(got[3].watts, 100.0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(got[i].watts.has_value());
}

TEST(TfServingGrpcTest, NoRowsNoCalls) {
  TfServingGrpcPredictor predictor;
  EXPECT_TRUE(predictor.Predict({}, milliseconds(100)).empty());
}

}  // namespace
}  // namespace powerctl::predict
