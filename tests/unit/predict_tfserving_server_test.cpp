// TensorFlow Serving REST over a real socket: a Python server that answers like TF Serving
// (predict_model_server.h) and a plain socket client, so the bytes on the wire are proven.

#include "core/predict/tfserving_rest.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;

class TfServingRestServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!server_.error().empty()) GTEST_SKIP() << server_.error();
  }

  ModelEndpoint Endpoint(std::string name, std::string version = "") {
    return ModelEndpoint{"tfserving-rest", "127.0.0.1",        server_.port(),
                         std::move(name),  std::move(version), "serving_default"};
  }

  std::vector<Prediction> Run(PredictionRows rows, milliseconds deadline,
                              TfRestForm form = TfRestForm::kInputs) {
    TfServingRestOptions options;
    options.form = form;
    TfServingRestPredictor predictor(http_, options);
    return predictor.Predict(rows, deadline);
  }

  testsupport::ModelServer server_;
  std::unique_ptr<HttpClient> client_ = testsupport::MakeTestHttpClient(GetParam());
  HttpClient& http_ = *client_;
};

TEST_P(TfServingRestServerTest, ThousandRowsInOneRequestForEveryForm) {
  int expected_requests = 0;
  for (TfRestForm form : {TfRestForm::kInputs, TfRestForm::kNamedInputs, TfRestForm::kInstances}) {
    const auto rows = testsupport::MakeRows(1000, Endpoint("power"));
    const auto out = Run(rows, milliseconds(5000), form);
    EXPECT_EQ(server_.Count("/v1/models/power:predict"), ++expected_requests);
    ASSERT_EQ(out.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      ASSERT_TRUE(out[i].watts.has_value()) << TfRestFormName(form) << ": " << out[i].error;
      EXPECT_NEAR(*out[i].watts, testsupport::ReferenceWatts(rows[i].inputs), 1e-6);
    }
  }
}

TEST_P(TfServingRestServerTest, VersionsAndLabelsReachTheirPaths) {
  Run(testsupport::MakeRows(2, Endpoint("power", "3")), milliseconds(2000));
  EXPECT_EQ(server_.Count("/v1/models/power/versions/3:predict"), 1);
  const auto out = Run(testsupport::MakeRows(2, Endpoint("power", "stable")), milliseconds(2000));
  EXPECT_EQ(server_.Count("/v1/models/power/labels/stable:predict"), 1);
  EXPECT_TRUE(out[0].watts.has_value()) << out[0].error;
}

TEST_P(TfServingRestServerTest, WrongModelName) {
  const auto out = Run(testsupport::MakeRows(3, Endpoint("nosuchmodel", "7")), milliseconds(2000));
  for (const auto& p : out) {
    EXPECT_FALSE(p.watts.has_value());
    EXPECT_EQ(p.error,
              "tfserving-rest: HTTP 404 (model not found): Servable not found for request: "
              "Specific(nosuchmodel, 7)");
  }
}

TEST_P(TfServingRestServerTest, WrongSignatureGivesTheServersReason) {
  auto rows = testsupport::MakeRows(2, Endpoint("power"));
  for (auto& row : rows) testsupport::EditEndpoint(row, [](auto& e) { e.signature = "konohana"; });
  for (const auto& p : Run(rows, milliseconds(2000))) {
    EXPECT_EQ(p.error,
              "tfserving-rest: HTTP 400: Serving signature name: \"konohana\" not found in "
              "signature def");
  }
}

TEST_P(TfServingRestServerTest, ServerDown) {
  auto rows = testsupport::MakeRows(3, Endpoint("power"));
  const int port = testsupport::UnusedLoopbackPort();
  for (auto& row : rows) testsupport::EditEndpoint(row, [port](auto& e) { e.port = port; });
  for (const auto& p : Run(rows, milliseconds(2000))) {
    EXPECT_FALSE(p.watts.has_value());
    EXPECT_EQ(p.error.rfind("tfserving-rest: model server unreachable: ", 0), 0u) << p.error;
  }
}

TEST_P(TfServingRestServerTest, HangingServerHitsTheDeadlineFast) {
  const auto start = std::chrono::steady_clock::now();
  const auto out = Run(testsupport::MakeRows(5, Endpoint("hang")), milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  for (const auto& p : out) {
    EXPECT_EQ(p.error, "tfserving-rest: model server did not answer before the deadline");
  }
}

TEST_P(TfServingRestServerTest, NanOutputsFailOnlyTheirRows) {
  const auto rows = testsupport::MakeRows(22, Endpoint("nan"));  // cpu 1.0 at rows 10 and 21
  const auto out = Run(rows, milliseconds(2000));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].inputs.cpu_fraction > 0.9f) {
      EXPECT_EQ(out[i].error, "tfserving-rest: model returned NaN") << i;
      EXPECT_FALSE(out[i].watts.has_value());
    } else {
      EXPECT_NEAR(out[i].watts.value_or(-1), testsupport::ReferenceWatts(rows[i].inputs), 1e-6);
    }
  }
}

TEST_P(TfServingRestServerTest, WrongOutputShapeNeverGivesANumber) {
  for (const char* model : {"shape", "short"}) {
    for (const auto& p : Run(testsupport::MakeRows(4, Endpoint(model)), milliseconds(2000))) {
      EXPECT_FALSE(p.watts.has_value()) << model;
      EXPECT_EQ(p.error,
                "tfserving-rest: invalid response from model server: wrong output shape: "
                "expected one value per row");
    }
  }
  for (const auto& p : Run(testsupport::MakeRows(2, Endpoint("negative")), milliseconds(2000))) {
    EXPECT_EQ(p.error, "tfserving-rest: model returned negative watts");
  }
}

TEST_P(TfServingRestServerTest, ModelsThatRejectBatchesAreAskedRowByRow) {
  const auto rows = testsupport::MakeRows(12, Endpoint("picky"));  // rejects batches, cpu > 0.9
  const auto out = Run(rows, milliseconds(5000));
  EXPECT_EQ(server_.Count("/v1/models/picky:predict"), 13);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].inputs.cpu_fraction > 0.9f) {
      EXPECT_EQ(out[i].error, "tfserving-rest: HTTP 400: cpu_fraction out of the trained range");
    } else {
      EXPECT_NEAR(out[i].watts.value_or(-1), testsupport::ReferenceWatts(rows[i].inputs), 1e-6)
          << out[i].error;
    }
  }
}

// Test names start with the suite's prefix so --gtest_filter='TfServing*' selects them.
INSTANTIATE_TEST_SUITE_P(TfServingRestServer, TfServingRestServerTest,
                         ::testing::Values(std::string("socket"), std::string("curl")),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace powerctl::predict
