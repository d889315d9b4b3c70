// V2 (Open) Inference Protocol REST: URL, body and response vectors (WAO's request and answer are
// in docs/reference/minimizepower.md, "The later rewrite (WAO v2)"), and the predictor against a
// FakeHttpClient.

#include "core/predict/v2_rest.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

ModelEndpoint V2Endpoint(std::string name = "power", std::string version = "") {
  return ModelEndpoint{"v2", "10.0.0.20", 8080, std::move(name), std::move(version), ""};
}

TEST(V2RestTest, Urls) {
  EXPECT_EQ(*V2InferUrl(V2Endpoint()), "http://10.0.0.20:8080/v2/models/power/infer");
  // WAO's Redfish sample: name PC-PowerEdgeR650xs-2CPU, version v0.1.0.
  EXPECT_EQ(*V2InferUrl(V2Endpoint("PC-PowerEdgeR650xs-2CPU", "v0.1.0")),
            "http://10.0.0.20:8080/v2/models/PC-PowerEdgeR650xs-2CPU/versions/v0.1.0/infer");
  EXPECT_FALSE(V2InferUrl(V2Endpoint("a/b")).ok());
  EXPECT_FALSE(V2InferUrl(V2Endpoint("power", "1/infer?x")).ok());
}

TEST(V2RestTest, BodyIsFlattenedFp32) {
  EXPECT_EQ(V2InferBody({{0.5f, 0.5f, 0.5f, 0.5f}, {0.1f, 0.36f, 0.25f, 1}}, V2RestOptions{}),
            R"({"inputs":[{"name":"inputs","shape":[2,4],"datatype":"FP32",)"
            R"("data":[0.5,0.5,0.5,0.5,0.1,0.36,0.25,1]}]})");
  V2RestOptions named;
  named.input_name = "predict-prob";
  EXPECT_EQ(json::parse(V2InferBody({{1, 0, 0, 0}}, named))["inputs"][0]["name"], "predict-prob");
}

TEST(V2RestTest, ParsesResponseVectors) {
  // WAO's answer: one FP64 output named "predict".
  auto wao = ParseV2Response(
      R"({"model_name":"model1","model_version":"v0.1.0","outputs":[{"name":"predict","shape":[1,1],"datatype":"FP64","data":[94.76267448501928]}]})",
      1);
  ASSERT_TRUE(wao.ok()) << wao.error().message;
  EXPECT_DOUBLE_EQ((*wao)[0].watts.value_or(-1), 94.76267448501928);

  auto values = [](std::string_view body, std::size_t rows) {
    std::vector<double> out;
    auto parsed = ParseV2Response(body, rows);
    EXPECT_TRUE(parsed.ok()) << body << ": " << (parsed.ok() ? "" : parsed.error().message);
    if (parsed.ok()) {
      for (const auto& p : *parsed) out.push_back(p.watts.value_or(-1));
    }
    return out;
  };
  const std::vector<double> two = {150, 250.5};
  EXPECT_EQ(
      values(R"({"outputs":[{"name":"o","shape":[2],"datatype":"FP32","data":[150,250.5]}]})", 2),
      two);
  EXPECT_EQ(
      values(
          R"({"outputs":[{"name":"o","shape":[2,1],"datatype":"INT64","data":[[150],[250.5]]}]})",
          2),
      two);
  EXPECT_EQ(values(R"({"outputs":[{"name":"o","shape":[2,1,1],"data":[150,250.5]}]})", 2), two);
  EXPECT_EQ(
      values(
          R"({"outputs":[{"name":"other","data":[1,2]},{"name":"outputs","shape":[2,1],"datatype":"FP32","data":[150,250.5]}]})",
          2),
      two);
}

TEST(V2RestTest, RejectsBadValuesPerRow) {
  auto parsed = ParseV2Response(
      R"({"outputs":[{"name":"outputs","shape":[4,1],"datatype":"FP32","data":[NaN,-1,Infinity,5]}]})",
      4);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)[0].error, "model returned NaN");
  EXPECT_EQ((*parsed)[1].error, "model returned negative watts");
  EXPECT_EQ((*parsed)[2].error, "model returned an infinite value");
  EXPECT_EQ((*parsed)[3].watts.value_or(-1), 5);
}

TEST(V2RestTest, RejectsWrongShapesAsAWhole) {
  for (std::string_view body : {
           R"({"outputs":[{"name":"o","shape":[2,2],"datatype":"FP32","data":[1,2,3,4]}]})",
           R"({"outputs":[{"name":"o","shape":[3,1],"datatype":"FP32","data":[1,2,3]}]})",
           R"({"outputs":[{"name":"o","shape":[2,1],"datatype":"FP32","data":[1,2,3]}]})",
           R"({"outputs":[{"name":"o","shape":[2,1],"datatype":"FP32","data":[1]}]})",
           R"({"outputs":[{"name":"o","data":[[[[[[[[[[1]]]]]]]]],[2]]}]})",
           R"({"outputs":[{"name":"o","shape":[2,1],"datatype":"BYTES","data":["1","2"]}]})",
           R"({"outputs":[{"name":"o","shape":[2,1],"datatype":"BOOL","data":[true,false]}]})",
           R"({"outputs":[{"name":"o","shape":"2","data":[1,2]}]})",
           R"({"outputs":[{"name":"o","shape":[2,1]}]})",
           R"({"outputs":[{"name":"a","data":[1,2]},{"name":"b","data":[1,2]}]})",
           R"({"outputs":[]})",
           R"({"outputs":[7]})",
           R"({"predictions":[1,2]})",
           "null",
           "",
       }) {
    auto parsed = ParseV2Response(body, 2);
    ASSERT_FALSE(parsed.ok()) << body;
    EXPECT_EQ(parsed.error().message.rfind("invalid response from model server: ", 0), 0u)
        << parsed.error().message;
  }
  auto error = ParseV2Response(R"({"error":"Model with name x does not exist."})", 1);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().message, "model server error: Model with name x does not exist.");
}

TEST(V2RestTest, ThousandRowsAreOneRequestInOrder) {
  testsupport::FakeHttpClient http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    const json input = json::parse(r.body)["inputs"][0];
    const json& data = input["data"];
    json out = json::array();
    for (std::size_t i = 0; i + 3 < data.size(); i += 4) {
      out.push_back(
          testsupport::ReferenceWatts({data[i].get<float>(), data[i + 1].get<float>(),
                                       data[i + 2].get<float>(), data[i + 3].get<float>()}));
    }
    json reply = {
        {"outputs",
         {{{"name", "outputs"}, {"shape", {out.size(), 1}}, {"datatype", "FP64"}, {"data", out}}}}};
    return testsupport::JsonResponse(200, reply.dump());
  });
  V2RestPredictor predictor(http);
  const auto rows = testsupport::MakeRows(1000, V2Endpoint("power", "2"));
  const auto out = predictor.Predict(rows, milliseconds(2000));
  ASSERT_EQ(http.requests().size(), 1u);
  EXPECT_EQ(http.requests()[0].url, "http://10.0.0.20:8080/v2/models/power/versions/2/infer");
  EXPECT_EQ(json::parse(http.requests()[0].body)["inputs"][0]["shape"], json({1000, 4}));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(out[i].watts.has_value()) << out[i].error;
    EXPECT_NEAR(*out[i].watts, testsupport::ReferenceWatts(rows[i].inputs), 1e-9);
  }
}

}  // namespace
}  // namespace powerctl::predict
