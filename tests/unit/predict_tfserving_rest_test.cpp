// TensorFlow Serving REST: URL, body and response vectors from TF Serving's REST API
// documentation and WAO's REST client (docs/reference/minimizepower.md, "The model call"), and
// the predictor's batching, fallback and failure
// reasons against a FakeHttpClient. predict_tfserving_server_test.cpp repeats the
// behaviour over a socket against a server that answers like TF Serving.

#include "core/predict/tfserving_rest.h"
#include "tests/unit/predict_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testsupport::FakeHttpClient;
using testsupport::JsonResponse;

ModelEndpoint Endpoint(std::string name = "power", std::string version = "",
                       std::string signature = "serving_default") {
  return ModelEndpoint{"tfserving-rest", "10.0.0.100",       8501,
                       std::move(name),  std::move(version), std::move(signature)};
}

// A fake TF Serving: reads the rows of any request form and answers in the matching form.
Result<HttpClientResponse> FakeServer(const HttpClientRequest& request) {
  json doc = json::parse(request.body, nullptr, false);
  const bool rows_form = doc.contains("instances");
  json rows = rows_form ? doc["instances"] : doc["inputs"];
  if (rows.is_object()) rows = rows["inputs"];
  json values = json::array();
  for (const json& row : rows) {
    values.push_back({testsupport::ReferenceWatts(
        {row[0].get<float>(), row[1].get<float>(), row[2].get<float>(), row[3].get<float>()})});
  }
  return JsonResponse(200, json{{rows_form ? "predictions" : "outputs", values}}.dump());
}

TEST(TfServingRestTest, Urls) {
  EXPECT_EQ(*TfServingPredictUrl(Endpoint()), "http://10.0.0.100:8501/v1/models/power:predict");
  EXPECT_EQ(*TfServingPredictUrl(Endpoint("konohana", "1218")),
            "http://10.0.0.100:8501/v1/models/konohana/versions/1218:predict");
  EXPECT_EQ(*TfServingPredictUrl(Endpoint("power", "stable")),
            "http://10.0.0.100:8501/v1/models/power/labels/stable:predict");
  ModelEndpoint bad = Endpoint();
  for (std::string host : {"", "evil/path", "user@host", "a b", "h:1"}) {
    bad.host = host;
    EXPECT_FALSE(TfServingPredictUrl(bad).ok()) << host;
  }
  bad = Endpoint();
  for (int port : {0, -1, 65536}) {
    bad.port = port;
    EXPECT_FALSE(TfServingPredictUrl(bad).ok()) << port;
  }
  for (std::string name : {"", "a/b", "a:predict", "a?b"}) {
    EXPECT_FALSE(TfServingPredictUrl(Endpoint(name)).ok()) << name;
  }
  EXPECT_FALSE(TfServingPredictUrl(Endpoint("power", "1/../2")).ok());
}

TEST(TfServingRestTest, BodyForms) {
  const std::vector<ModelInputs> one = {{0.5f, 0.5f, 0.5f, 0.5f}};
  TfServingRestOptions options;
  // WAO's REST client body (docs/reference/minimizepower.md, "The model call"), key order aside.
  EXPECT_EQ(TfServingPredictBody(Endpoint("konohana", "", "konohana"), one, options),
            R"({"signature_name":"konohana","inputs":[[0.5,0.5,0.5,0.5]]})");
  options.form = TfRestForm::kNamedInputs;
  EXPECT_EQ(TfServingPredictBody(Endpoint(), one, options),
            R"({"signature_name":"serving_default","inputs":{"inputs":[[0.5,0.5,0.5,0.5]]}})");
  options.form = TfRestForm::kInstances;
  // An empty signature is left to the server's default.
  EXPECT_EQ(TfServingPredictBody(Endpoint("power", "", ""), {{0.1f, 0.36f, 0.25f, 1}, {1, 0, 0, 0}},
                                 options),
            R"({"instances":[[0.1,0.36,0.25,1],[1,0,0,0]]})");
  // Signatures are JSON-escaped, not pasted.
  options.form = TfRestForm::kInputs;
  EXPECT_EQ(TfServingPredictBody(Endpoint("power", "", "a\"b"), one, options),
            R"({"signature_name":"a\"b","inputs":[[0.5,0.5,0.5,0.5]]})");
}

TEST(TfServingRestTest, FormNames) {
  for (TfRestForm form : {TfRestForm::kInputs, TfRestForm::kNamedInputs, TfRestForm::kInstances}) {
    EXPECT_EQ(*ParseTfRestForm(TfRestFormName(form)), form);
  }
  EXPECT_FALSE(ParseTfRestForm("columnar").ok());
}

TEST(TfServingRestTest, ParsesResponseVectors) {
  auto watts = [](std::string_view body, std::size_t rows) {
    std::vector<double> out;
    auto parsed = ParseTfServingResponse(body, rows);
    EXPECT_TRUE(parsed.ok()) << body;
    if (!parsed.ok()) return out;
    for (const auto& p : *parsed) out.push_back(p.watts.value_or(-1));
    return out;
  };
  // TF Serving's REST documentation (half_plus_two): {"outputs":[3.5,4.0]}; WAO's sample:
  // {"outputs": [[150.607254]]}.
  EXPECT_EQ(watts(R"({"outputs":[3.5,4.0]})", 2), (std::vector<double>{3.5, 4.0}));
  EXPECT_EQ(watts(R"({"outputs": [[150.607254]]})", 1), (std::vector<double>{150.607254}));
  EXPECT_EQ(watts(R"({"predictions": [[2.5], [3.5]]})", 2), (std::vector<double>{2.5, 3.5}));
  EXPECT_EQ(watts(R"({"predictions": [250, 1e2]})", 2), (std::vector<double>{250, 100}));
  // Several outputs: columnar object, row objects.
  EXPECT_EQ(watts(R"({"outputs": {"other": [[1],[2]], "outputs": [[7],[8]]}})", 2),
            (std::vector<double>{7, 8}));
  EXPECT_EQ(watts(R"({"predictions": [{"outputs": [7], "x": 1}, {"outputs": 8, "x": 2}]})", 2),
            (std::vector<double>{7, 8}));
}

TEST(TfServingRestTest, RejectsBadValuesPerRow) {
  auto parsed = ParseTfServingResponse(
      R"({"outputs": [[NaN], [-Infinity], [Infinity], [-3], ["x"], [null], [true], [1e6], [0]]})",
      9);
  ASSERT_TRUE(parsed.ok());
  const char* reasons[] = {"model returned NaN",
                           "model returned an infinite value",
                           "model returned an infinite value",
                           "model returned negative watts",
                           "model returned a string, not a number",
                           "model returned null, not a number",
                           "model returned boolean, not a number",
                           "model returned implausibly high watts (over 100 kW)",
                           ""};
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_EQ((*parsed)[i].error, reasons[i]) << i;
    EXPECT_EQ((*parsed)[i].watts.has_value(), i == 8) << i;
  }
}

TEST(TfServingRestTest, RejectsWrongShapesAsAWhole) {
  // TF Serving's REST documentation: {"instances": [[1.0, 2.0], [3.0, 4.0]]} -> two values per
  // row.
  for (std::string_view body :
       {R"({"predictions": [[2.5, 3.0], [3.5, 4.0]]})", R"({"outputs": [[1]]})",
        R"({"outputs": [[1],[2],[3]]})", R"({"outputs": 5})", R"({"outputs": [[[1]],[[2]]]})",
        R"({"outputs": {"x": [[1],[2]]}})", R"({"result": [1, 2]})", R"([1, 2])", "",
        "{\"outputs\": [1, 2", R"({"outputs": [[], []]})"}) {
    auto parsed = ParseTfServingResponse(body, 2);
    ASSERT_FALSE(parsed.ok()) << body;
    EXPECT_EQ(parsed.error().message.rfind("invalid response from model server: ", 0), 0u);
  }
  auto error = ParseTfServingResponse(R"({"error": "Servable not found"})", 2);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().message, "model server error: Servable not found");
}

TEST(TfServingRestTest, ThousandRowsAreOneRequestInOrder) {
  FakeHttpClient http(FakeServer);
  for (TfRestForm form : {TfRestForm::kInputs, TfRestForm::kNamedInputs, TfRestForm::kInstances}) {
    TfServingRestOptions options;
    options.form = form;
    TfServingRestPredictor predictor(http, options);
    const auto rows = testsupport::MakeRows(1000, Endpoint());
    const auto before = http.requests().size();
    const auto out = predictor.Predict(rows, milliseconds(2000));
    ASSERT_EQ(http.requests().size(), before + 1);
    const HttpClientRequest sent = http.requests().back();
    EXPECT_EQ(sent.method, "POST");
    EXPECT_EQ(sent.url, "http://10.0.0.100:8501/v1/models/power:predict");
    EXPECT_EQ(sent.content_type, "application/json");
    EXPECT_LE(sent.timeout, milliseconds(2000));
    EXPECT_GT(sent.timeout, milliseconds(1500));
    ASSERT_EQ(out.size(), 1000u);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].watts.has_value()) << out[i].error;
      EXPECT_NEAR(*out[i].watts, testsupport::ReferenceWatts(rows[i].inputs), 1e-9) << i;
    }
  }
}

TEST(TfServingRestTest, OneRequestPerEndpoint) {
  FakeHttpClient http(FakeServer);
  TfServingRestPredictor predictor(http);
  auto rows = testsupport::MakeRows(6, Endpoint());
  for (std::size_t i = 0; i < rows.size(); i += 2)
    testsupport::EditEndpoint(rows[i], [](auto& e) { e.version = "3"; });
  const auto out = predictor.Predict(rows, milliseconds(1000));
  ASSERT_EQ(http.requests().size(), 2u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NEAR(out[i].watts.value_or(-1), testsupport::ReferenceWatts(rows[i].inputs), 1e-9);
  }
}

TEST(TfServingRestTest, NonFiniteInputsStayOutOfTheBatch) {
  FakeHttpClient http(FakeServer);
  TfServingRestPredictor predictor(http);
  auto rows = testsupport::MakeRows(3, Endpoint());
  rows[1].inputs.ambient = std::numeric_limits<float>::quiet_NaN();
  const auto out = predictor.Predict(rows, milliseconds(1000));
  ASSERT_EQ(http.requests().size(), 1u);
  EXPECT_EQ(json::parse(http.requests()[0].body)["inputs"].size(), 2u);
  EXPECT_TRUE(out[0].watts && out[2].watts);
  EXPECT_EQ(out[1].error, "tfserving-rest: model input is not a finite number");
}

}  // namespace
}  // namespace powerctl::predict
