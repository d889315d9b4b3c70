// EndpointBreaker on its own (explicit times), and RoutingPredictor skipping a model server
// that just failed until its back-off ends.
#include "core/predict/endpoint_breaker.h"
#include "core/predict/routing_predictor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;
using BreakerClock = EndpointBreaker::Clock;

TEST(EndpointBreakerTest, OpensOnFailureBacksOffDoublingAndClosesOnSuccess) {
  EndpointBreaker breaker({milliseconds(100), milliseconds(300)});
  const BreakerClock::time_point t0{};
  EXPECT_FALSE(breaker.Skip("m", t0));  // unknown endpoints are called
  breaker.Record("m", "v2: connection refused", t0);
  auto skipped = breaker.Skip("m", t0 + milliseconds(50));
  ASSERT_TRUE(skipped);
  EXPECT_EQ(skipped->rfind("v2: connection refused", 0), 0u);
  EXPECT_FALSE(breaker.Skip("other", t0));  // per endpoint

  // Back-off over: one caller probes, a concurrent one still fails fast.
  EXPECT_FALSE(breaker.Skip("m", t0 + milliseconds(100)));
  EXPECT_TRUE(breaker.Skip("m", t0 + milliseconds(101)));
  breaker.Record("m", "v2: timed out", t0 + milliseconds(100));  // second failure: 200 ms
  EXPECT_TRUE(breaker.Skip("m", t0 + milliseconds(299)));
  EXPECT_FALSE(breaker.Skip("m", t0 + milliseconds(300)));
  breaker.Record("m", "v2: timed out", t0 + milliseconds(300));  // third: 400 capped at 300
  EXPECT_TRUE(breaker.Skip("m", t0 + milliseconds(599)));
  EXPECT_FALSE(breaker.Skip("m", t0 + milliseconds(600)));
  breaker.Record("m", "", t0 + milliseconds(600));  // the probe succeeded
  EXPECT_FALSE(breaker.Skip("m", t0 + milliseconds(601)));
  EXPECT_FALSE(breaker.Skip("m", t0 + milliseconds(602)));
}

// Fails every row while `down`, answers otherwise; counts calls.
class FlakyServer : public Predictor {
 public:
  std::vector<Prediction> Predict(PredictionRows rows, milliseconds) override {
    ++calls;
    std::vector<Prediction> out(rows.size());
    for (auto& p : out) {
      if (down) {
        p.error = "tfserving-rest: connection refused";
      } else {
        p.watts = 100;
      }
    }
    return out;
  }
  std::atomic<bool> down = true;
  std::atomic<int> calls = 0;
};

PredictionRow RemoteRow() {
  PredictionRow row;
  row.node = "n1";
  ModelEndpoint model;
  model.backend = "tfserving-rest";
  model.host = "model";
  model.port = 8501;
  model.name = "power";
  row.model = std::make_shared<const ModelEndpoint>(std::move(model));
  return row;
}

TEST(RoutingPredictorBreakerTest, ADownServerIsAskedOncePerBackOffAndRecovers) {
  auto server = std::make_shared<FlakyServer>();
  RoutingPredictor routing({{"tfserving-rest", server}}, 16, {milliseconds(50), milliseconds(50)});
  auto first = routing.Predict(std::vector<PredictionRow>{RemoteRow()}, milliseconds(100));
  EXPECT_EQ(first[0].error, "tfserving-rest: connection refused");
  for (int i = 0; i < 5; ++i) {
    auto skipped = routing.Predict(std::vector<PredictionRow>{RemoteRow()}, milliseconds(100));
    EXPECT_FALSE(skipped[0].watts);
    EXPECT_NE(skipped[0].error.find("connection refused"), std::string::npos);
  }
  EXPECT_EQ(server->calls, 1);  // the five requests in the back-off did not call it

  server->down = false;
  auto deadline = BreakerClock::now() + std::chrono::seconds(5);
  std::vector<Prediction> out;
  do {
    std::this_thread::sleep_for(milliseconds(10));
    out = routing.Predict(std::vector<PredictionRow>{RemoteRow()}, milliseconds(100));
  } while (!out[0].watts && BreakerClock::now() < deadline);
  ASSERT_TRUE(out[0].watts);
  EXPECT_EQ(*out[0].watts, 100);
  int calls = server->calls;
  EXPECT_TRUE(routing.Predict(std::vector<PredictionRow>{RemoteRow()}, milliseconds(100))[0].watts);
  EXPECT_EQ(server->calls, calls + 1);  // closed again: every request calls it
}

}  // namespace
}  // namespace powerctl::predict
