#include "core/predict/builtin_model.h"
#include "core/predict/routing_predictor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;

// Answers each row with its cpu_fraction * 1000 + `offset`, recording every call.
class RoutingRecorder : public Predictor {
 public:
  explicit RoutingRecorder(double offset = 0, milliseconds delay = milliseconds(0))
      : offset_(offset), delay_(delay) {}
  std::vector<Prediction> Predict(PredictionRows rows, milliseconds deadline) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.emplace_back(rows.begin(), rows.end());
      deadlines_.push_back(deadline);
    }
    std::this_thread::sleep_for(delay_);
    std::vector<Prediction> out(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out[i].watts = rows[i].inputs.cpu_fraction * 1000 + offset_;
    }
    return out;
  }
  std::vector<std::vector<PredictionRow>> calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  std::vector<milliseconds> deadlines() {
    std::lock_guard<std::mutex> lock(mutex_);
    return deadlines_;
  }

 private:
  double offset_;
  milliseconds delay_;
  std::mutex mutex_;
  std::vector<std::vector<PredictionRow>> calls_;
  std::vector<milliseconds> deadlines_;
};

class BrokenPredictor : public Predictor {
 public:
  explicit BrokenPredictor(bool throws) : throws_(throws) {}
  std::vector<Prediction> Predict(PredictionRows rows, milliseconds) override {
    if (throws_) throw std::runtime_error("boom");
    return std::vector<Prediction>(rows.size() + 1);
  }

 private:
  bool throws_;
};

PredictionRow Row(const std::string& backend, const std::string& host, float cpu) {
  PredictionRow row;
  ModelEndpoint model;
  model.backend = backend;
  model.host = host;
  model.port = backend == "builtin" ? 0 : 8501;
  model.name = backend == "builtin" ? "" : "power";
  row.model = std::make_shared<const ModelEndpoint>(std::move(model));
  row.inputs.cpu_fraction = cpu;
  return row;
}

TEST(RoutingPredictorTest, GroupsByEndpointAndKeepsOrder) {
  auto rest = std::make_shared<RoutingRecorder>(0);
  auto v2 = std::make_shared<RoutingRecorder>(0.5);
  RoutingPredictor routing(
      {{"tfserving-rest", rest}, {"v2", v2}, {"builtin", std::make_shared<BuiltinPredictor>()}});
  const std::vector<PredictionRow> rows = {
      Row("tfserving-rest", "a", 0.1f), Row("v2", "a", 0.2f),
      Row("tfserving-rest", "b", 0.3f), Row("builtin", "", 1.0f),
      Row("tfserving-rest", "a", 0.4f), Row("v2", "a", 0.5f),
      Row("tfserving-rest", "b", 0.6f),
  };
  const auto out = routing.Predict(rows, milliseconds(1000));
  ASSERT_EQ(out.size(), rows.size());
  EXPECT_NEAR(*out[0].watts, 100, 1e-3);
  EXPECT_NEAR(*out[1].watts, 200.5, 1e-3);
  EXPECT_NEAR(*out[2].watts, 300, 1e-3);
  EXPECT_NEAR(*out[3].watts, 350, 1e-9);  // built-in defaults at 100% CPU
  EXPECT_NEAR(*out[4].watts, 400, 1e-3);
  EXPECT_NEAR(*out[5].watts, 500.5, 1e-3);
  EXPECT_NEAR(*out[6].watts, 600, 1e-3);
  // One call per endpoint (host a and host b), each with its rows in order.
  auto calls = rest->calls();
  ASSERT_EQ(calls.size(), 2u);
  std::sort(calls.begin(), calls.end(), [](const auto& x, const auto& y) {
    return x[0].endpoint().host < y[0].endpoint().host;
  });
  ASSERT_EQ(calls[0].size(), 2u);
  EXPECT_EQ(calls[0][0].inputs.cpu_fraction, 0.1f);
  EXPECT_EQ(calls[0][1].inputs.cpu_fraction, 0.4f);
  EXPECT_EQ(calls[1][1].inputs.cpu_fraction, 0.6f);
  EXPECT_EQ(v2->calls().size(), 1u);
}

TEST(RoutingPredictorTest, ThousandRowsOfOneModelAreOneCall) {
  auto rest = std::make_shared<RoutingRecorder>();
  RoutingPredictor routing({{"tfserving-rest", rest}});
  std::vector<PredictionRow> rows(1000, Row("tfserving-rest", "m", 0.5f));
  const auto out = routing.Predict(rows, milliseconds(1000));
  ASSERT_EQ(rest->calls().size(), 1u);
  EXPECT_EQ(rest->calls()[0].size(), 1000u);
  EXPECT_LE(rest->deadlines()[0], milliseconds(1000));
  EXPECT_GT(rest->deadlines()[0], milliseconds(900));
  for (const auto& p : out) EXPECT_TRUE(p.watts.has_value());
}

TEST(RoutingPredictorTest, UnknownAndBrokenBackendsFailOnlyTheirRows) {
  RoutingPredictor routing({{"v2", std::make_shared<RoutingRecorder>()},
                            {"throws", std::make_shared<BrokenPredictor>(true)},
                            {"miscounts", std::make_shared<BrokenPredictor>(false)},
                            {"null", nullptr}});
  const auto out = routing.Predict(
      std::vector<PredictionRow>{Row("tfserving-grpc", "h", 0.1f), Row("v2", "h", 0.2f),
                                 Row("throws", "h", 0.3f), Row("miscounts", "h", 0.4f),
                                 Row("null", "h", 0.5f)},
      milliseconds(500));
  EXPECT_EQ(out[0].error, "unknown predictor backend \"tfserving-grpc\"");
  EXPECT_FALSE(out[0].watts.has_value());
  EXPECT_NEAR(out[1].watts.value_or(-1), 200, 1e-3);
  EXPECT_EQ(out[2].error, "throws: internal error: boom");
  EXPECT_EQ(out[3].error, "miscounts: predictor returned the wrong number of results");
  EXPECT_EQ(out[4].error, "unknown predictor backend \"null\"");
}

TEST(RoutingPredictorTest, EndpointsAreAskedConcurrently) {
  // Four endpoints that each take 200 ms: asked one after another they would need 800 ms.
  auto slow = std::make_shared<RoutingRecorder>(0, milliseconds(200));
  RoutingPredictor routing({{"v2", slow}});
  const auto start = std::chrono::steady_clock::now();
  const auto out =
      routing.Predict(std::vector<PredictionRow>{Row("v2", "a", 0.1f), Row("v2", "b", 0.1f),
                                                 Row("v2", "c", 0.1f), Row("v2", "d", 0.1f)},
                      milliseconds(1000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(700));
  EXPECT_EQ(slow->calls().size(), 4u);
  for (const auto& p : out) EXPECT_TRUE(p.watts.has_value());
}

TEST(RoutingPredictorTest, EmptyInputGivesEmptyOutput) {
  RoutingPredictor routing({});
  EXPECT_TRUE(routing.Predict({}, milliseconds(10)).empty());
}

}  // namespace
}  // namespace powerctl::predict
