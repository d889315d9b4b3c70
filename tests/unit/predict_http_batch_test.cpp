// The shared HTTP batching of the REST predictors (core/predict/http_batch.h): failure
// reasons, the deadline, and the single-row fallback, driven through the TF Serving REST
// predictor and a FakeHttpClient; plus the JSON helpers the response parsers share.

#include "core/predict/http_batch.h"
#include "core/predict/tfserving_rest.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testsupport::FakeHttpClient;
using testsupport::JsonResponse;

const ModelEndpoint kEndpoint{"tfserving-rest", "127.0.0.1", 8501, "power", "", ""};

std::vector<Prediction> RunTf(FakeHttpClient& http, std::size_t rows, milliseconds deadline,
                              HttpBatchOptions batch = {}) {
  TfServingRestOptions options;
  options.batch = std::move(batch);
  TfServingRestPredictor predictor(http, options);
  return predictor.Predict(testsupport::MakeRows(rows, kEndpoint), deadline);
}

void ExpectAllFailWith(const std::vector<Prediction>& out, const std::string& reason) {
  for (const Prediction& p : out) {
    EXPECT_FALSE(p.watts.has_value());
    EXPECT_EQ(p.error, reason);
  }
}

TEST(PredictHttpBatchTest, WrongModelNameIs404Reason) {
  FakeHttpClient http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return JsonResponse(404, R"j({"error": "Servable not found for request: Latest(power)"})j");
  });
  const auto out = RunTf(http, 5, milliseconds(500));
  EXPECT_EQ(http.requests().size(), 1u);  // 404 is not retried row by row
  ExpectAllFailWith(out,
                    "tfserving-rest: HTTP 404 (model not found): Servable not found for request: "
                    "Latest(power)");
}

TEST(PredictHttpBatchTest, ServerDownIsUnreachableReason) {
  FakeHttpClient http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    return MakeError(ErrorCode::kNetwork, r.url + ": Connection refused");
  });
  ExpectAllFailWith(RunTf(http, 3, milliseconds(500)),
                    "tfserving-rest: model server unreachable: "
                    "http://127.0.0.1:8501/v1/models/power:predict: Connection refused");
}

TEST(PredictHttpBatchTest, HangingServerHitsTheDeadline) {
  FakeHttpClient http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    std::this_thread::sleep_for(r.timeout);  // as libcurl does with CURLOPT_TIMEOUT_MS
    return MakeError(ErrorCode::kNetwork, r.url + ": Operation timed out");
  });
  const auto start = std::chrono::steady_clock::now();
  const auto out = RunTf(http, 4, milliseconds(60));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  ASSERT_EQ(http.requests().size(), 1u);
  EXPECT_LE(http.requests()[0].timeout, milliseconds(60));
  ExpectAllFailWith(out, "tfserving-rest: model server did not answer before the deadline");
}

TEST(PredictHttpBatchTest, SpentDeadlineSendsNothing) {
  FakeHttpClient http(
      [](const HttpClientRequest&) -> Result<HttpClientResponse> { return JsonResponse(200, ""); });
  ExpectAllFailWith(RunTf(http, 2, milliseconds(0)),
                    "tfserving-rest: deadline exceeded before the request was sent");
  EXPECT_TRUE(http.requests().empty());
}

TEST(PredictHttpBatchTest, RejectedBatchIsRetriedRowByRow) {
  // A model with a fixed batch dimension of 1 that also rejects one particular row.
  FakeHttpClient http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    json rows = json::parse(r.body)["inputs"];
    if (rows.size() > 1) return JsonResponse(400, R"({"error": "batch too large"})");
    if (rows[0][0].get<float>() > 0.95f) return JsonResponse(400, R"({"error": "out of range"})");
    return JsonResponse(200, json{{"outputs", {{rows[0][0].get<float>() * 100}}}}.dump());
  });
  const auto out = RunTf(http, 11, milliseconds(2000));  // cpu 0.0, 0.1, ..., 1.0
  EXPECT_EQ(http.requests().size(), 12u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(out[i].watts.value_or(-1), static_cast<double>(i) * 10, 1e-4) << out[i].error;
  }
  EXPECT_EQ(out[10].error, "tfserving-rest: HTTP 400: out of range");

  HttpBatchOptions no_retry;
  no_retry.retry_single_rows = false;
  FakeHttpClient strict([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return JsonResponse(400, R"({"error": "batch too large"})");
  });
  ExpectAllFailWith(RunTf(strict, 3, milliseconds(500), no_retry),
                    "tfserving-rest: HTTP 400: batch too large");
  EXPECT_EQ(strict.requests().size(), 1u);
}

TEST(PredictHttpBatchTest, RowByRowFallbackRunsConcurrentlyWithinTheDeadline) {
  std::atomic<int> in_flight{0}, most{0};
  FakeHttpClient http([&](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (json::parse(r.body)["inputs"].size() > 1) return JsonResponse(400, R"({"error": "no"})");
    const int now = ++in_flight;
    for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(milliseconds(20));
    --in_flight;
    return JsonResponse(200, R"({"outputs": [[1]]})");
  });
  const auto out = RunTf(http, 32, milliseconds(3000));
  for (const auto& p : out) EXPECT_EQ(p.watts.value_or(-1), 1) << p.error;
  EXPECT_GT(most.load(), 1);
  EXPECT_LE(most.load(), 8);
}

TEST(PredictHttpBatchTest, DescribesHttpErrors) {
  EXPECT_EQ(DescribeHttpError(400, R"({"error": "'signature_name' key must be a string value."})"),
            "HTTP 400: 'signature_name' key must be a string value.");
  EXPECT_EQ(DescribeHttpError(503, "upstream connect error\r\nor disconnect"),
            "HTTP 503: upstream connect error  or disconnect");
  EXPECT_EQ(DescribeHttpError(502, ""), "HTTP 502");
  EXPECT_EQ(DescribeHttpError(500, "\xff\xfe"), "HTTP 500: ??");
  const std::string long_message = DescribeHttpError(500, std::string(5000, 'x'));
  EXPECT_EQ(long_message, "HTTP 500: " + std::string(200, 'x') + "...");
  // Truncation never splits a UTF-8 character.
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  const std::string cut = DescribeHttpError(500, json{{"error", accents}}.dump());
  EXPECT_TRUE(json::accept(json(cut).dump()));
  EXPECT_EQ(cut.size(), std::string("HTTP 500: ").size() + 200 + 3);
}

TEST(PredictHttpBatchTest, ParseModelJsonReadsNonFiniteTokensOutsideStrings) {
  const json doc = ParseModelJson(
      R"({"a": [NaN, Infinity, -Infinity, 1.5], "s": "NaN Infinity \"NaN\"", "NaNx": 1})");
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["a"], json({"NaN", "Infinity", "-Infinity", 1.5}));
  EXPECT_EQ(doc["s"], "NaN Infinity \"NaN\"");
  EXPECT_EQ(doc["NaNx"], 1);
  EXPECT_TRUE(ParseModelJson("[NaNa]").is_discarded());
  EXPECT_TRUE(ParseModelJson("{").is_discarded());
  EXPECT_TRUE(ParseModelJson("").is_discarded());
}

TEST(PredictHttpBatchTest, ParseModelJsonBoundsNesting) {
  const std::string ok = R"({"predictions": )" + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_TRUE(ParseModelJson(ok).is_object());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_TRUE(ParseModelJson(deep).is_discarded());
  auto object = ModelResponseObject(deep);
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.error().code, ErrorCode::kApi);
}

TEST(PredictHttpBatchTest, FloatsAreShortestRoundTrip) {
  std::string out;
  for (float v : {0.1f, 0.5f, 1.0f, 0.36f, 1e-7f, 123456.789f}) {
    out.clear();
    AppendFloat(out, v);
    EXPECT_EQ(std::stof(out), v) << out;
  }
  out.clear();
  AppendFloat(out, 0.1f);
  EXPECT_EQ(out, "0.1");
}

}  // namespace
}  // namespace powerctl::predict
