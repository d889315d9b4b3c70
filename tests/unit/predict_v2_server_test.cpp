// The V2 inference protocol over a real socket, against a Python server answering like
// KServe (predict_model_server.h).

#include "core/predict/v2_rest.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;

class V2RestServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!server_.error().empty()) GTEST_SKIP() << server_.error();
  }

  ModelEndpoint Endpoint(std::string name, std::string version = "") {
    return ModelEndpoint{"v2", "127.0.0.1", server_.port(), std::move(name), std::move(version),
                         ""};
  }

  std::vector<Prediction> Run(PredictionRows rows, milliseconds deadline) {
    V2RestPredictor predictor(http_);
    return predictor.Predict(rows, deadline);
  }

  testsupport::ModelServer server_;
  std::unique_ptr<HttpClient> client_ = testsupport::MakeTestHttpClient(GetParam());
  HttpClient& http_ = *client_;
};

TEST_P(V2RestServerTest, ThousandRowsInOneRequest) {
  const auto rows = testsupport::MakeRows(1000, Endpoint("power", "v0.1.0"));
  const auto out = Run(rows, milliseconds(5000));
  EXPECT_EQ(server_.Count(), 1);
  EXPECT_EQ(server_.Count("/v2/models/power/versions/v0.1.0/infer"), 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(out[i].watts.has_value()) << out[i].error;
    EXPECT_NEAR(*out[i].watts, testsupport::ReferenceWatts(rows[i].inputs), 1e-4);  // FP32 out
  }
}

TEST_P(V2RestServerTest, WrongModelName) {
  for (const auto& p : Run(testsupport::MakeRows(2, Endpoint("nosuchmodel")), milliseconds(2000))) {
    EXPECT_EQ(p.error,
              "v2: HTTP 404 (model not found): Model with name nosuchmodel does not exist.");
  }
}

TEST_P(V2RestServerTest, ServerDownAndHanging) {
  auto down = testsupport::MakeRows(2, Endpoint("power"));
  const int port = testsupport::UnusedLoopbackPort();
  for (auto& row : down) testsupport::EditEndpoint(row, [port](auto& e) { e.port = port; });
  for (const auto& p : Run(down, milliseconds(2000))) {
    EXPECT_EQ(p.error.rfind("v2: model server unreachable: ", 0), 0u) << p.error;
  }
  const auto start = std::chrono::steady_clock::now();
  for (const auto& p : Run(testsupport::MakeRows(2, Endpoint("hang")), milliseconds(150))) {
    EXPECT_EQ(p.error, "v2: model server did not answer before the deadline");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
}

TEST_P(V2RestServerTest, NanAndWrongShapes) {
  const auto rows = testsupport::MakeRows(11, Endpoint("nan"));
  const auto out = Run(rows, milliseconds(2000));
  EXPECT_EQ(out[10].error, "v2: model returned NaN");
  EXPECT_TRUE(out[3].watts.has_value()) << out[3].error;
  for (const char* model : {"shape", "short"}) {
    for (const auto& p : Run(testsupport::MakeRows(3, Endpoint(model)), milliseconds(2000))) {
      EXPECT_FALSE(p.watts.has_value());
      EXPECT_EQ(p.error,
                "v2: invalid response from model server: wrong output shape: expected one value "
                "per row");
    }
  }
}

TEST_P(V2RestServerTest, ModelsThatRejectBatchesAreAskedRowByRow) {
  const auto rows = testsupport::MakeRows(5, Endpoint("batch1"));
  const auto out = Run(rows, milliseconds(5000));
  EXPECT_EQ(server_.Count(), 6);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NEAR(out[i].watts.value_or(-1), testsupport::ReferenceWatts(rows[i].inputs), 1e-4)
        << out[i].error;
  }
}

// Test names start with the suite's prefix so --gtest_filter='V2*' selects them.
INSTANTIATE_TEST_SUITE_P(V2RestServer, V2RestServerTest,
                         ::testing::Values(std::string("socket"), std::string("curl")),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace powerctl::predict
