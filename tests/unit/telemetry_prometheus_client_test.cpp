// PrometheusClient and ParseQueryResponse against answers in the Prometheus HTTP API's documented
// format (vector, matrix, scalar and error responses).

#include "core/telemetry/prometheus_client.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace powerctl::telemetry {
namespace {

using std::chrono::milliseconds;
using telemetry_test::FakeHttp;
using telemetry_test::Reply;
using ::testing::HasSubstr;
using ::testing::Not;

double Seconds(WallTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

TEST(PrometheusResponseTest, Vector) {
  auto r = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"ipmi_dcmi_power_consumption_watts","instance":"bmc1"},"value":[1700000000.123,"240"]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->result_type, "vector");
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].metric.at("__name__"), "ipmi_dcmi_power_consumption_watts");
  EXPECT_EQ(r->series[0].metric.at("instance"), "bmc1");
  ASSERT_EQ(r->series[0].samples.size(), 1u);
  EXPECT_EQ(r->series[0].samples[0].value, 240);
  EXPECT_EQ(r->series[0].samples[0].time.time_since_epoch(), milliseconds(1700000000123));
  EXPECT_TRUE(r->warnings.empty());
}

TEST(PrometheusResponseTest, KeepsOnlyTheLabelsAskedFor) {
  // Both decoding paths: data.resultType before the result (series decoded while parsing)
  // and after it (decoded from the document).
  for (
      const char* body :
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"ipmi_temperature_celsius","id":"7","instance":"bmc1:9290","job":"ipmi","name":"Inlet Temp"},"value":[1700000000,"24"]}]}})",
       R"({"status":"success","data":{"result":[{"metric":{"__name__":"ipmi_temperature_celsius","id":"7","instance":"bmc1:9290","job":"ipmi","name":"Inlet Temp"},"value":[1700000000,"24"]}],"resultType":"vector"}})"}) {
    auto r = ParseQueryResponse(200, body, {"instance", "name", "node"});
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->series.size(), 1u);
    EXPECT_EQ(r->series[0].metric, (std::map<std::string, std::string>{{"instance", "bmc1:9290"},
                                                                       {"name", "Inlet Temp"}}));
    EXPECT_EQ(r->series[0].samples.at(0).value, 24);
    auto all = ParseQueryResponse(200, body);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->series.at(0).metric.size(), 5u);  // nothing asked for: every label
  }
}

TEST(PrometheusResponseTest, NestingIsBounded) {
  const std::string deep = R"({"status":"success","data":{"resultType":"vector","result":[)" +
                           std::string(100000, '[') + std::string(100000, ']') + "]}}";
  auto r = ParseQueryResponse(200, deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kApi);
  EXPECT_THAT(r.error().message, HasSubstr("nested deeper than 64 levels"));
}

// docs/hardening.md#dependency-text: what answers at the URL chooses this text.
TEST(PrometheusResponseTest, ErrorTextAndWarningsAreBounded) {
  const std::string huge(8 << 20, 'e');
  auto failed =
      ParseQueryResponse(400, R"({"status":"error","errorType":"bad_data\u001b[2J","error":")" +
                                  huge + "\\nsecond line\"}");
  ASSERT_FALSE(failed.ok());
  EXPECT_LT(failed.error().message.size(), 700u);
  EXPECT_EQ(failed.error().message.find('\x1b'), std::string::npos);
  EXPECT_EQ(failed.error().message.find('\n'), std::string::npos);
  EXPECT_THAT(failed.error().message, HasSubstr("..."));

  std::string warnings;
  for (int i = 0; i < 300000; ++i) warnings += std::string(i ? "," : "") + "\"w\\u0007\"";
  auto r = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"vector","result":[]},"warnings":[)" +
               warnings + "]}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->warnings.size(), 11u);
  EXPECT_EQ(r->warnings[0], "w ");  // the bell became a space
  EXPECT_EQ(r->warnings.back(), "and 299990 more warnings");
}

TEST(PrometheusResponseTest, Matrix) {
  auto r = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"bmc1"},"values":[[1700000000,"240"],[1700000015,"241.5"]]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->result_type, "matrix");
  ASSERT_EQ(r->series.size(), 1u);
  ASSERT_EQ(r->series[0].samples.size(), 2u);
  EXPECT_EQ(Seconds(r->series[0].samples[0].time), 1700000000);
  EXPECT_EQ(r->series[0].samples[1].value, 241.5);
  EXPECT_EQ(Seconds(r->series[0].samples[1].time), 1700000015);
}

TEST(PrometheusResponseTest, SeriesDecodeTheSameWhicheverOrderTheDataKeysCome) {
  // resultType first (as Prometheus writes it): series are decoded while parsing; after the
  // result, from the document. Both give the same series, in order.
  const std::string result =
      R"("result":[{"metric":{"instance":"a"},"value":[1,"1"]},{"metric":{"instance":"b"},"value":[2,"2"]}])";
  for (const std::string& data :
       {R"({"resultType":"vector",)" + result + "}", "{" + result + R"(,"resultType":"vector"})"}) {
    auto r = ParseQueryResponse(200, R"({"status":"success","data":)" + data + "}");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->series.size(), 2u) << data;
    EXPECT_EQ(r->series[0].metric.at("instance"), "a");
    EXPECT_EQ(r->series[1].samples[0].value, 2);
  }
  auto bad = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("\"x\" is not a number"));
  // An error envelope wins over what the series said.
  auto error = ParseQueryResponse(
      503,
      R"({"status":"error","errorType":"timeout","error":"t","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}})");
  ASSERT_FALSE(error.ok());
  EXPECT_THAT(error.error().message, HasSubstr("timeout (HTTP 503)"));
}

TEST(PrometheusResponseTest, ASinkTakesEachSeriesInOrderInsteadOfTheResult) {
  const std::string result =
      R"("result":[{"metric":{"instance":"a","job":"x"},"value":[1,"1"]},{"metric":{"instance":"b"},"value":[2,"2"]},{"metric":{"instance":"c"},"value":[3,"3"]}])";
  for (const std::string& data :
       {R"({"resultType":"vector",)" + result + "}", "{" + result + R"(,"resultType":"vector"})"}) {
    const std::string body = R"({"status":"success","data":)" + data + "}";
    std::vector<PromSeries> taken;
    auto r = ParseQueryResponse(200, body, {"instance"},
                                [&](PromSeries&& series) { taken.push_back(std::move(series)); });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->series.empty()) << data;
    auto collected = ParseQueryResponse(200, body, {"instance"});
    ASSERT_TRUE(collected.ok());
    ASSERT_EQ(taken.size(), 3u) << data;
    for (std::size_t i = 0; i < taken.size(); ++i) {
      EXPECT_EQ(taken[i].metric, collected->series[i].metric) << data;
      EXPECT_EQ(taken[i].samples.at(0).value, collected->series[i].samples.at(0).value);
    }
  }
  // A bad series fails the query, whatever the sink was already given.
  std::size_t given = 0;
  auto bad = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{},"value":[1,"x"]}]}})",
      {}, [&](PromSeries&&) { ++given; });
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("\"x\" is not a number"));
  EXPECT_EQ(given, 1u);
}

TEST(PrometheusResponseTest, ScalarNaNAndString) {
  auto r = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"NaN"]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->result_type, "scalar");
  EXPECT_TRUE(std::isnan(r->scalar.value));
  EXPECT_EQ(Seconds(r->scalar.time), 1700000000);

  auto s = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"string","result":[1.5,"hello"]}})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->string_value, "hello");
  EXPECT_EQ(s->scalar.time.time_since_epoch(), milliseconds(1500));
}

TEST(PrometheusResponseTest, SpecialValuesWarningsAndEmptyResults) {
  auto r = ParseQueryResponse(
      200,
      R"({"status":"success","warnings":["partial data"],"infos":["x"],"data":{"resultType":"vector","result":[{"metric":{},"value":[1,"+Inf"]},{"metric":{},"value":[1,"-Inf"]},{"metric":{},"value":[1,"1e-07"]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->series[0].samples[0].value, INFINITY);
  EXPECT_EQ(r->series[1].samples[0].value, -INFINITY);
  EXPECT_EQ(r->series[2].samples[0].value, 1e-07);
  EXPECT_EQ(r->warnings, std::vector<std::string>{"partial data"});

  auto empty =
      ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->series.empty());
  // Native histograms carry no float sample; such a series is kept without samples.
  auto hist = ParseQueryResponse(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"histogram":[1,{"count":"1"}]}]}})");
  ASSERT_TRUE(hist.ok());
  EXPECT_TRUE(hist->series[0].samples.empty());
}

TEST(PrometheusResponseTest, ErrorEnvelopesNameTheErrorType) {
  struct Case {
    long status;
    const char* type;
  } cases[] = {{400, "bad_data"}, {422, "execution"}, {503, "timeout"}};
  for (const Case& c : cases) {
    std::string body =
        std::string(R"({"status":"error","errorType":")") + c.type +
        R"(","error":"invalid parameter \"query\": 1:6: parse error: unexpected end of input"})";
    auto r = ParseQueryResponse(c.status, body);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kApi);
    EXPECT_THAT(r.error().message,
                HasSubstr(std::string(c.type) + " (HTTP " + std::to_string(c.status)));
    EXPECT_THAT(r.error().message, HasSubstr("invalid parameter \"query\": 1:6: parse error"));
  }
}

TEST(PrometheusResponseTest, MalformedResponses) {
  auto message = [](long status, const std::string& body) {
    auto r = ParseQueryResponse(status, body);
    return r.ok() ? std::string("(ok)") : r.error().message;
  };
  EXPECT_EQ(message(502, "<html>Bad Gateway</html>"),
            "HTTP 502 with a body that is not a Prometheus API response");
  EXPECT_THAT(message(200, "[]"), HasSubstr("not a Prometheus API response"));
  EXPECT_THAT(message(200, R"({"status":"weird"})"), HasSubstr("unknown status \"weird\""));
  EXPECT_THAT(message(500, R"({"status":"success","data":{"resultType":"vector","result":[]}})"),
              HasSubstr("HTTP 500 with a success envelope"));
  EXPECT_THAT(message(200, R"({"status":"success","data":{}})"), HasSubstr("no data.resultType"));
  EXPECT_THAT(message(200, R"({"status":"success","data":{"resultType":"tensor"}})"),
              HasSubstr("unknown resultType"));
  EXPECT_THAT(
      message(
          200,
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})"),
      HasSubstr("not [time, \"value\"]"));
  EXPECT_THAT(
      message(
          200,
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["x","2"]}]}})"),
      HasSubstr("time is not a number"));
  EXPECT_THAT(
      message(
          200,
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"abc"]}]}})"),
      HasSubstr("is not a number"));
  EXPECT_THAT(
      message(
          200,
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1e300,"1"]}]}})"),
      HasSubstr("out of range"));
  EXPECT_THAT(
      message(200,
              R"({"status":"success","data":{"resultType":"matrix","result":[{"values":7}]}})"),
      HasSubstr("\"values\" is not an array"));
  EXPECT_THAT(message(200, R"({"status":"error","errorType":7})"), HasSubstr("malformed"));
}

TEST(PrometheusClientTest, QueryPostsAFormWithTimeAndTimeout) {
  FakeHttp http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return Reply(200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  });
  PrometheusOptions options;
  options.url = "http://prom.example:9090/prefix/";
  options.timeout = milliseconds(2500);
  PrometheusClient client(http, options);
  auto r = client.Query("sum by (instance) (rate(x{mode!=\"idle\"}[1m]))",
                        WallTime(milliseconds(1700000000123)));
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<HttpClientRequest> requests = http.requests();
  ASSERT_EQ(requests.size(), 1u);
  const HttpClientRequest& req = requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "http://prom.example:9090/prefix/api/v1/query");
  EXPECT_EQ(req.content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(req.body,
            "query=sum%20by%20%28instance%29%20%28rate%28x%7Bmode%21%3D%22idle%22%7D%5B1m%5D%29%29"
            "&time=1700000000.123&timeout=2500ms");
  EXPECT_EQ(req.timeout, milliseconds(3500));
}

TEST(PrometheusClientTest, ARepeatedQueryExpectsAboutItsLastAnswersSize) {
  const std::string big = R"({"status":"success","data":{"resultType":"vector","result":[)" +
                          std::string(8000, ' ') + "]}}";
  FakeHttp http([&](const HttpClientRequest& request) -> Result<HttpClientResponse> {
    if (request.body.find("fails") != std::string::npos) return Reply(503, "{}");
    return Reply(200, big);
  });
  PrometheusClient client(http, PrometheusOptions{"http://prom.example:9090"});
  ASSERT_TRUE(client.Query("up").ok());
  ASSERT_TRUE(client.Query("up").ok());
  ASSERT_TRUE(client.Query("other").ok());
  EXPECT_FALSE(client.Query("fails").ok());
  EXPECT_FALSE(client.Query("fails").ok());
  std::vector<HttpClientRequest> requests = http.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0].expected_body_bytes, 0u);  // never asked: no guess
  EXPECT_GE(requests[1].expected_body_bytes, big.size());
  EXPECT_LE(requests[1].expected_body_bytes, big.size() + big.size() / 4);
  EXPECT_EQ(requests[2].expected_body_bytes, 0u);  // another query
  EXPECT_EQ(requests[4].expected_body_bytes, 0u);  // error answers teach nothing
}

TEST(PrometheusClientTest, QueryRange) {
  FakeHttp http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return Reply(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  });
  PrometheusClient client(http, PrometheusOptions{"http://p:9090", milliseconds(0), nullptr});
  auto r = client.QueryRange("up", WallTime(std::chrono::seconds(100)),
                             WallTime(std::chrono::seconds(200)), std::chrono::seconds(15));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(http.requests()[0].url, "http://p:9090/api/v1/query_range");
  EXPECT_EQ(http.requests()[0].body, "query=up&start=100.000&end=200.000&step=15.000");

  EXPECT_FALSE(client.QueryRange("up", WallTime(), WallTime(), milliseconds(0)).ok());
  auto backwards = client.QueryRange("up", WallTime(std::chrono::seconds(2)),
                                     WallTime(std::chrono::seconds(1)), milliseconds(1000));
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(http.requests().size(), 1u);
}

TEST(PrometheusClientTest, ErrorsNameServerQueryAndNeverCredentials) {
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (r.body.find("down") != std::string::npos) {
      return MakeError(ErrorCode::kNetwork, "cannot connect to http://p:9090: Connection refused");
    }
    return Reply(400, R"({"status":"error","errorType":"bad_data","error":"parse error"})");
  });
  PrometheusClient client(
      http, PrometheusOptions{"http://user:s3cret@p:9090", milliseconds(1000), nullptr});
  EXPECT_EQ(client.url(), "http://p:9090");
  auto bad = client.Query("sum(");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kApi);
  EXPECT_EQ(bad.error().message,
            "Prometheus at http://p:9090: query \"sum(\" failed: bad_data (HTTP 400): parse error");
  auto down = client.Query("down");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::kNetwork);
  EXPECT_THAT(down.error().message, HasSubstr("Prometheus at http://p:9090: cannot connect"));
  EXPECT_THAT(down.error().message, Not(HasSubstr("s3cret")));
  EXPECT_EQ(http.requests()[0].url, "http://user:s3cret@p:9090/api/v1/query");  // curl uses it
}

// The issue: a sample value of "a" and 30 "é" was cut at byte 40, inside a character, and the
// message made the strict dump() of /readyz and /v1/decisions throw (HTTP 500).
TEST(PrometheusClientTest, UntrustedTextInErrorsIsCutBetweenCharacters) {
  std::string accents;
  for (int i = 0; i < 30; ++i) accents += "\xc3\xa9";
  const std::string value = "a" + accents;
  const std::string body =
      nlohmann::json{
          {"status", "success"},
          {"data",
           {{"resultType", "vector"},
            {"result", {{{"metric", {{"instance", "n1"}}}, {"value", {1700000000, value}}}}}}}}
          .dump();
  FakeHttp http(
      [&](const HttpClientRequest&) -> Result<HttpClientResponse> { return Reply(200, body); });
  PrometheusClient client(http, PrometheusOptions{"http://prom.example:9090"});
  auto r = client.Query("ipmi_dcmi_power_consumption_watts");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("a sample value \"a\xc3\xa9"));
  EXPECT_THAT(r.error().message, HasSubstr("...\" is not a number"));
  EXPECT_NO_THROW((void)nlohmann::json(r.error().message).dump()) << r.error().message;

  // The same for the other texts a server chooses: resultType and status.
  for (const std::string& envelope :
       {nlohmann::json{{"status", "success"}, {"data", {{"resultType", value}}}}.dump(),
        nlohmann::json{{"status", value}}.dump()}) {
    auto other = ParseQueryResponse(200, envelope);
    ASSERT_FALSE(other.ok()) << envelope;
    EXPECT_NO_THROW((void)nlohmann::json(other.error().message).dump()) << other.error().message;
  }
}

TEST(PrometheusClientTest, Helpers) {
  EXPECT_EQ(FormatPromTime(WallTime(milliseconds(1435781451780))), "1435781451.780");
  EXPECT_EQ(FormatPromTime(WallTime(milliseconds(-1500))), "-1.500");
  EXPECT_EQ(PromRegexLiteral("Inlet Temp"), "Inlet Temp");
  EXPECT_EQ(PromRegexLiteral("CPU1 (x).y"), "CPU1 \\\\(x\\\\)\\\\.y");
  EXPECT_EQ(PromRegexLiteral("a\"b"), "a\\\"b");
  EXPECT_EQ(PromRegexLiteral("a\\b"), "a\\\\\\\\b");
  EXPECT_EQ(WallTimeFromSeconds(1.5)->time_since_epoch(), milliseconds(1500));
  EXPECT_FALSE(WallTimeFromSeconds(NAN));
  EXPECT_FALSE(WallTimeFromSeconds(1e300));
  // prometheus_response_fuzzer: 11700000015 s (year 2340) overflowed system_clock.
  EXPECT_FALSE(WallTimeFromSeconds(11700000015));
  EXPECT_FALSE(WallTimeFromSeconds(-9.1e9));
  EXPECT_EQ(WallTimeFromSeconds(9e9)->time_since_epoch(), milliseconds(9'000'000'000'000));
  auto matrix = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},)"
           R"("values":[[1700000000,"240"],[11700000015,"241.5"]]}]}})");
  ASSERT_FALSE(matrix.ok());
  EXPECT_THAT(matrix.error().message, HasSubstr("a sample time is out of range"));
}

}  // namespace
}  // namespace powerctl::telemetry
