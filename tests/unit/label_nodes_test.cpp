#include "core/setup/label_nodes.h"

#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using kube::fake::FakeApiServer;
using kube::fake::NodeObject;
using kube::fake::RecordedRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

LabelNodesRequest OneNode() {
  LabelNodesRequest request;
  request.nodes = {"n1"};
  return request;
}

// ---- DesiredNodeLabels ------------------------------------------------------------------------

struct InvalidCase {
  std::string name;
  std::function<void(LabelNodesRequest&)> change;
  std::string message;  // a part of the error message
};

class LabelNodesInvalidInputTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(LabelNodesInvalidInputTest, IsInvalidInputWithAClearMessage) {
  LabelNodesRequest request = OneNode();
  request.ambient = "18:35";
  GetParam().change(request);
  auto labels = DesiredNodeLabels(request);
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(labels.error().message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    LabelNodes, LabelNodesInvalidInputTest,
    ::testing::Values(
        InvalidCase{"RangeWithoutColon", [](auto& r) { r.ambient = "18"; },
                    "--ambient 18: expected MIN:MAX"},
        InvalidCase{"MinAboveMax", [](auto& r) { r.cpu1 = "90:30"; },
                    "--cpu1 90:30: the maximum must be greater than the minimum"},
        InvalidCase{"MinEqualsMax", [](auto& r) { r.cpu2 = "30:30"; },
                    "--cpu2 30:30: the maximum must be greater than the minimum"},
        InvalidCase{"MinNotANumber", [](auto& r) { r.ambient = "warm:35"; },
                    "--ambient: \"warm\" is not a number"},
        InvalidCase{"MaxNotANumber", [](auto& r) { r.ambient = "18:35C"; },
                    "--ambient: \"35C\" is not a number"},
        InvalidCase{"EmptyMax", [](auto& r) { r.ambient = "18:"; },
                    "--ambient: \"\" is not a number"},
        InvalidCase{"EmptyMin", [](auto& r) { r.ambient = ":35"; },
                    "--ambient: \"\" is not a number"},
        InvalidCase{"ThreeParts", [](auto& r) { r.ambient = "18:35:40"; }, "is not a number"},
        InvalidCase{"NaN", [](auto& r) { r.ambient = "nan:35"; }, "\"nan\" is not a number"},
        InvalidCase{"Infinity", [](auto& r) { r.cpu1 = "30:inf"; }, "\"inf\" is not a number"},
        InvalidCase{"Negative", [](auto& r) { r.ambient = "-5:35"; },
                    "negative temperatures cannot be stored in labels"},
        InvalidCase{"BelowRange", [](auto& r) { r.cpu1 = "-60:90"; }, "outside -50..150"},
        InvalidCase{"AboveRange", [](auto& r) { r.cpu2 = "30:151"; }, "outside -50..150"},
        // Plain decimal only: Go's ParseFloat does not skip spaces either.
        InvalidCase{"SpaceBeforeNumber", [](auto& r) { r.ambient = " 18:35"; },
                    "--ambient: \" 18\" is not a number"},
        InvalidCase{"PortZero", [](auto& r) { r.model_port = "0"; },
                    "--model-port 0: must be a port number 1-65535"},
        InvalidCase{"PortTooLarge", [](auto& r) { r.model_port = "65536"; },
                    "must be a port number 1-65535"},
        InvalidCase{"PortNotANumber", [](auto& r) { r.model_port = "85o0"; },
                    "must be a port number 1-65535"},
        InvalidCase{"PortEmpty", [](auto& r) { r.model_port = ""; },
                    "must be a port number 1-65535"},
        InvalidCase{"PortNegative", [](auto& r) { r.model_port = "-8500"; },
                    "must be a port number 1-65535"},
        InvalidCase{"EmptyHost", [](auto& r) { r.model_host = ""; },
                    "--model-host: must not be empty"},
        InvalidCase{"EmptyName", [](auto& r) { r.model_name = ""; },
                    "--model-name: must not be empty"},
        InvalidCase{"EmptyVersion", [](auto& r) { r.model_version = ""; },
                    "--model-version: must not be empty"},
        InvalidCase{"EmptySignature", [](auto& r) { r.model_signature = ""; },
                    "--model-signature: must not be empty"},
        InvalidCase{"NameNotALabelValue", [](auto& r) { r.model_name = "power model"; },
                    "--model-name power model: not a valid label value"},
        InvalidCase{"NoNodeSelection", [](auto& r) { r.nodes.clear(); }, "exactly one of them"},
        InvalidCase{"NodesAndAll", [](auto& r) { r.all = true; }, "exactly one of them"},
        InvalidCase{"NodesAndSelector", [](auto& r) { r.selector = "role=worker"; },
                    "exactly one of them"},
        InvalidCase{"SelectorAndAll",
                    [](auto& r) {
                      r.nodes.clear();
                      r.selector = "role=worker";
                      r.all = true;
                    },
                    "exactly one of them"},
        InvalidCase{"NothingToSet", [](auto& r) { r.ambient.reset(); }, "nothing to set"}),
    [](const ::testing::TestParamInfo<InvalidCase>& param_info) { return param_info.param.name; });

TEST(LabelNodesDesiredLabelsTest, ARangeSetsItsMinAndMaxLabels) {
  LabelNodesRequest request = OneNode();
  request.ambient = "18:35";
  auto labels = DesiredNodeLabels(request);
  ASSERT_TRUE(labels.ok()) << labels.error().message;
  EXPECT_THAT(*labels, ElementsAre(Pair("ambient/max", "35"), Pair("ambient/min", "18")));
}

TEST(LabelNodesDesiredLabelsTest, EverySettingHasItsMinimizePowerLabel) {
  LabelNodesRequest request;
  request.all = true;
  request.ambient = "17.5:35.5";
  request.cpu1 = "30:90";
  request.cpu2 = "0:150";
  request.model_host = "tfserving.powerctl.svc";
  request.model_port = "8500";
  request.model_name = "power";
  request.model_version = "3";
  request.model_signature = "serving_default";
  auto labels = DesiredNodeLabels(request);
  ASSERT_TRUE(labels.ok()) << labels.error().message;
  EXPECT_EQ(*labels, (std::map<std::string, std::string>{
                         {"ambient/min", "17.5"},
                         {"ambient/max", "35.5"},
                         {"cpu1/min", "30"},
                         {"cpu1/max", "90"},
                         {"cpu2/min", "0"},
                         {"cpu2/max", "150"},
                         {"tensorflow/host", "tfserving.powerctl.svc"},
                         {"tensorflow/port", "8500"},
                         {"tensorflow/name", "power"},
                         {"tensorflow/version", "3"},
                         {"tensorflow/signature", "serving_default"},
                     }));
}

TEST(LabelNodesDesiredLabelsTest, ModelLabelsAloneAreEnough) {
  LabelNodesRequest request;
  request.selector = "role=worker";
  request.model_host = "10.0.0.5";
  request.model_port = "1";
  auto labels = DesiredNodeLabels(request);
  ASSERT_TRUE(labels.ok()) << labels.error().message;
  EXPECT_THAT(*labels,
              ElementsAre(Pair("tensorflow/host", "10.0.0.5"), Pair("tensorflow/port", "1")));
}

TEST(LabelNodesDesiredLabelsTest, HexadecimalTemperaturesAreNotNumbers) {
  LabelNodesRequest request = OneNode();
  request.ambient = "0x12:0x23";
  auto labels = DesiredNodeLabels(request);
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.error().message, HasSubstr("is not a number"));
}

// ---- LabelNodes -------------------------------------------------------------------------------

class LabelNodesTest : public ::testing::Test {
 protected:
  LabelNodesTest() : client_(server_.MakeClient()) {
    server_.Put(NodeObject("n1", {{"role", "worker"}}));
    server_.Put(
        NodeObject("n2", {{"role", "worker"}, {"ambient/min", "10"}, {"ambient/max", "30"}}));
    server_.Put(NodeObject("n3", {{"role", "control-plane"}}));
  }

  json Labels(const std::string& node) const {
    return server_.Object("/api/v1/nodes/" + node)["metadata"]["labels"];
  }

  std::vector<std::string> PatchedNodes() const {
    std::vector<std::string> nodes;
    for (const RecordedRequest& r : server_.MutatingRequests()) {
      EXPECT_EQ(r.method, "PATCH");
      nodes.push_back(r.path.substr(r.path.rfind('/') + 1));
    }
    return nodes;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(LabelNodesTest, NamedNodesGetTheLabels) {
  LabelNodesRequest request;
  request.nodes = {"n1", "n3"};
  request.ambient = "18:35";
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].node, "n1");
  EXPECT_TRUE((*results)[0].changed);
  EXPECT_THAT((*results)[0].keys_changed, UnorderedElementsAre("ambient/min", "ambient/max"));
  EXPECT_EQ(Labels("n1")["ambient/min"], "18");
  EXPECT_EQ(Labels("n1")["ambient/max"], "35");
  EXPECT_EQ(Labels("n1")["role"], "worker");  // other labels stay
  EXPECT_EQ(Labels("n3")["ambient/max"], "35");
  EXPECT_EQ(Labels("n2")["ambient/max"], "30");
  for (const RecordedRequest& r : server_.MutatingRequests()) {
    EXPECT_EQ(r.content_type, "application/merge-patch+json");
    EXPECT_FALSE(r.dry_run());
  }
  EXPECT_THAT(PatchedNodes(), ElementsAre("n1", "n3"));
}

TEST_F(LabelNodesTest, AConflictWithoutOverwriteChangesNoNode) {
  LabelNodesRequest request;
  request.all = true;
  request.ambient = "18:35";
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kConflict);
  EXPECT_THAT(results.error().message, HasSubstr("node/n2: ambient/max is 30 (want 35)"));
  EXPECT_THAT(results.error().message, HasSubstr("node/n2: ambient/min is 10 (want 18)"));
  EXPECT_THAT(results.error().message, HasSubstr("--overwrite"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
  EXPECT_FALSE(Labels("n1").contains("ambient/min"));
}

TEST_F(LabelNodesTest, OverwriteReplacesConflictingValues) {
  LabelNodesRequest request;
  request.all = true;
  request.ambient = "18:35";
  request.overwrite = true;
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  EXPECT_EQ(Labels("n2")["ambient/min"], "18");
  EXPECT_EQ(Labels("n2")["ambient/max"], "35");
  EXPECT_THAT(PatchedNodes(), ElementsAre("n1", "n2", "n3"));
}

TEST_F(LabelNodesTest, AnUnknownNodeChangesNoNode) {
  LabelNodesRequest request;
  request.nodes = {"n1", "ghost", "n3"};
  request.ambient = "18:35";
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(results.error().message, "node not found: ghost; no node was changed");
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesTest, ASelectorLabelsOnlyTheMatchingNodes) {
  LabelNodesRequest request;
  request.selector = "role=worker";
  request.cpu1 = "30:90";
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  ASSERT_EQ(results->size(), 2u);
  EXPECT_THAT(PatchedNodes(), ElementsAre("n1", "n2"));
  EXPECT_FALSE(Labels("n3").contains("cpu1/min"));
  std::vector<RecordedRequest> lists = server_.RequestsTo("GET", "/api/v1/nodes");
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].Query("labelSelector"), "role=worker");
}

TEST_F(LabelNodesTest, ASelectorMatchingNothingIsNotFound) {
  LabelNodesRequest request;
  request.selector = "role=gpu";
  request.cpu1 = "30:90";
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(results.error().message, HasSubstr("no node matches -l role=gpu"));
}

TEST_F(LabelNodesTest, ServerDryRunSendsDryRunAndChangesNothing) {
  LabelNodesRequest request;
  request.nodes = {"n1"};
  request.ambient = "18:35";
  request.dry_run = DryRunMode::kServer;
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  EXPECT_TRUE((*results)[0].changed);
  std::vector<RecordedRequest> writes = server_.MutatingRequests();
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_TRUE(writes[0].dry_run());
  EXPECT_FALSE(Labels("n1").contains("ambient/min"));
}

TEST_F(LabelNodesTest, ClientDryRunSendsNoMutatingRequest) {
  LabelNodesRequest request;
  request.all = true;
  request.ambient = "18:35";
  request.overwrite = true;
  request.dry_run = DryRunMode::kClient;
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  EXPECT_EQ(results->size(), 3u);
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesTest, NodesThatAlreadyHaveTheLabelsAreNotPatched) {
  LabelNodesRequest request;
  request.nodes = {"n1", "n2"};
  request.ambient = "10:30";
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;

  ASSERT_EQ(results->size(), 2u);
  EXPECT_TRUE((*results)[0].changed);
  EXPECT_FALSE((*results)[1].changed);
  EXPECT_THAT((*results)[1].keys_changed, IsEmpty());
  EXPECT_THAT(PatchedNodes(), ElementsAre("n1"));
}

TEST_F(LabelNodesTest, ADeniedPatchPermissionChangesNoNode) {
  server_.Deny("patch", "nodes");
  LabelNodesRequest request;
  request.all = true;
  request.cpu2 = "30:90";
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(results.error().message, HasSubstr("patch nodes"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesTest, InvalidInputIsRejectedBeforeTheClusterIsContacted) {
  LabelNodesRequest request;
  request.all = true;
  request.ambient = "35:18";
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(server_.requests(), IsEmpty());
}

// ---- built-in model annotations -----------------------------------------------------------

TEST(LabelNodesDesiredChangesTest, ModelParametersBecomeAnnotations) {
  LabelNodesRequest request = OneNode();
  request.idle_watts = "110";
  request.max_watts = "380.5";
  request.curve = "0.9";
  request.temperature_factor = "0.15";
  auto changes = DesiredNodeChanges(request);
  ASSERT_TRUE(changes.ok()) << changes.error().message;
  EXPECT_THAT(changes->labels, IsEmpty());
  EXPECT_THAT(
      changes->annotations,
      UnorderedElementsAre(Pair("powerctl.io/idle-watts", "110"),
                           Pair("powerctl.io/max-watts", "380.5"), Pair("powerctl.io/curve", "0.9"),
                           Pair("powerctl.io/temperature-factor", "0.15")));
}

TEST(LabelNodesDesiredChangesTest, APowerCurveBecomesItsAnnotationNormalised) {
  LabelNodesRequest request = OneNode();
  request.power_curve = "99.5, 144,159,172,184,196,207,217,227,236,246.0";
  auto changes = DesiredNodeChanges(request);
  ASSERT_TRUE(changes.ok()) << changes.error().message;
  EXPECT_THAT(changes->annotations,
              UnorderedElementsAre(
                  Pair("powerctl.io/power-curve", "99.5,144,159,172,184,196,207,217,227,236,246")));
}

class LabelNodesInvalidParameterTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(LabelNodesInvalidParameterTest, IsInvalidInputWithAClearMessage) {
  LabelNodesRequest request = OneNode();
  GetParam().change(request);
  auto changes = DesiredNodeChanges(request);
  ASSERT_FALSE(changes.ok());
  EXPECT_EQ(changes.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(changes.error().message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    LabelNodes, LabelNodesInvalidParameterTest,
    ::testing::Values(
        InvalidCase{"Hexadecimal", [](auto& r) { r.idle_watts = "0x40"; },
                    "--idle-watts 0x40: not a plain decimal number"},
        InvalidCase{"Exponent", [](auto& r) { r.max_watts = "3e2"; },
                    "--max-watts 3e2: not a plain decimal number"},
        InvalidCase{"Infinity", [](auto& r) { r.max_watts = "inf"; }, "not a plain decimal"},
        InvalidCase{"NegativeIdle", [](auto& r) { r.idle_watts = "-5"; },
                    "--idle-watts -5: idle-watts must be a number >= 0"},
        InvalidCase{"ZeroMax", [](auto& r) { r.max_watts = "0"; },
                    "--max-watts 0: max-watts must be greater than 0"},
        InvalidCase{"HugeMax", [](auto& r) { r.max_watts = "200000"; }, "at most 100000"},
        InvalidCase{"ZeroCurve", [](auto& r) { r.curve = "0"; },
                    "--curve 0: curve must be greater than 0 and at most 4"},
        InvalidCase{"FactorAboveOne", [](auto& r) { r.temperature_factor = "1.5"; },
                    "temperature-factor must be between 0 and 1"},
        InvalidCase{"ShortPowerCurve", [](auto& r) { r.power_curve = "50,100"; },
                    "--power-curve 50,100: power-curve must be 11 comma-separated watts"},
        InvalidCase{"FallingPowerCurve",
                    [](auto& r) { r.power_curve = "50,120,140,160,100,200,220,240,270,320,420"; },
                    "power-curve falls from 160 W at 30 % to 100 W at 40 % load"},
        InvalidCase{"PowerCurveWithIdle",
                    [](auto& r) {
                      r.power_curve = "50,120,140,160,180,200,220,240,270,320,420";
                      r.idle_watts = "50";
                    },
                    "--power-curve gives the whole curve"},
        InvalidCase{"MaxNotAboveIdle",
                    [](auto& r) {
                      r.idle_watts = "300";
                      r.max_watts = "300";
                    },
                    "--max-watts 300: must be greater than --idle-watts 300"},
        InvalidCase{"WindowWithoutHistory", [](auto& r) { r.skip_missing = true; },
                    "--skip-missing only applies to --from-prometheus"},
        InvalidCase{"RangesAndHistory",
                    [](auto& r) {
                      r.from_prometheus = true;
                      r.cpu1 = "30:90";
                    },
                    "give either, not both"}),
    [](const ::testing::TestParamInfo<InvalidCase>& param_info) { return param_info.param.name; });

TEST_F(LabelNodesTest, ParametersAreCheckedAgainstTheNodesAnnotationsBeforeAnyPatch) {
  json n2 = server_.Object("/api/v1/nodes/n2");
  n2["metadata"]["annotations"] = {{"powerctl.io/max-watts", "280"}};
  server_.Put(n2);
  LabelNodesRequest request;
  request.all = true;
  request.idle_watts = "300";  // below the default max-watts 350 of n1 and n3, not n2's 280
  auto results = LabelNodes(*client_, request);
  ASSERT_FALSE(results.ok());

  EXPECT_EQ(results.error().code, ErrorCode::kInvalidInput);
  EXPECT_THAT(results.error().message,
              HasSubstr("node/n2: annotations powerctl.io/*: max-watts must be greater than "
                        "idle-watts (the node would have powerctl.io/idle-watts=300, "
                        "powerctl.io/max-watts=280)"));
  EXPECT_THAT(results.error().message, Not(HasSubstr("node/n1")));
  EXPECT_THAT(results.error().message, HasSubstr("no node was changed"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(LabelNodesTest, IdleAndMaxOnANodeWithAPowerCurveAreWrittenWithAWarning) {
  json n2 = server_.Object("/api/v1/nodes/n2");
  n2["metadata"]["annotations"] = {
      {"powerctl.io/power-curve", "100,144,159,172,184,196,207,217,227,236,246"}};
  server_.Put(n2);
  LabelNodesRequest request;
  request.nodes = {"n1", "n2"};
  request.idle_watts = "90";
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;
  EXPECT_EQ((*results)[0].warning, "");  // n1 has no curve
  EXPECT_THAT((*results)[1].warning,
              HasSubstr("node/n2 has powerctl.io/power-curve, which the built-in model follows "
                        "instead of idle-watts, max-watts and curve"));
  EXPECT_EQ(server_.Object("/api/v1/nodes/n2")["metadata"]["annotations"]["powerctl.io/idle-watts"],
            "90");
  // The temperature factor applies to the curve too: no warning.
  request.idle_watts.reset();
  request.temperature_factor = "0.2";
  auto factor = LabelNodes(*client_, request);
  ASSERT_TRUE(factor.ok()) << factor.error().message;
  EXPECT_EQ((*factor)[1].warning, "");
}

TEST_F(LabelNodesTest, OneParameterCombinesWithTheOthersOnTheNode) {
  json n2 = server_.Object("/api/v1/nodes/n2");
  n2["metadata"]["annotations"] = {{"powerctl.io/idle-watts", "100"},
                                   {"powerctl.io/max-watts", "500"}};
  server_.Put(n2);
  LabelNodesRequest request;
  request.nodes = {"n2"};
  request.max_watts = "450";  // conflicts with 500 ...
  auto refused = LabelNodes(*client_, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_THAT(refused.error().message,
              HasSubstr("node/n2: annotation powerctl.io/max-watts is 500 (want 450)"));
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());

  request.overwrite = true;  // ... and 450 > the node's idle 100
  auto results = LabelNodes(*client_, request);
  ASSERT_TRUE(results.ok()) << results.error().message;
  json annotations = server_.Object("/api/v1/nodes/n2")["metadata"]["annotations"];
  EXPECT_EQ(annotations["powerctl.io/max-watts"], "450");
  EXPECT_EQ(annotations["powerctl.io/idle-watts"], "100");
  EXPECT_EQ(Labels("n2")["ambient/min"], "10");  // labels untouched
  EXPECT_THAT((*results)[0].keys_changed, ElementsAre("powerctl.io/max-watts"));
}

TEST_F(LabelNodesTest, LabelsAndAnnotationsGoInOnePatchPerNodeAndHonourDryRun) {
  LabelNodesRequest request;
  request.nodes = {"n1"};
  request.cpu1 = "30:90";
  request.idle_watts = "95.5";
  request.dry_run = DryRunMode::kServer;
  ASSERT_TRUE(LabelNodes(*client_, request).ok());
  ASSERT_EQ(server_.MutatingRequests().size(), 1u);
  EXPECT_TRUE(server_.MutatingRequests()[0].dry_run());
  EXPECT_FALSE(server_.Object("/api/v1/nodes/n1")["metadata"].contains("annotations"));

  request.dry_run = DryRunMode::kClient;
  ASSERT_TRUE(LabelNodes(*client_, request).ok());
  EXPECT_EQ(server_.MutatingRequests().size(), 1u);  // no new request

  request.dry_run = DryRunMode::kNone;
  ASSERT_TRUE(LabelNodes(*client_, request).ok());
  ASSERT_EQ(server_.MutatingRequests().size(), 2u);
  json body = json::parse(server_.MutatingRequests()[1].body);
  EXPECT_EQ(body["metadata"]["labels"]["cpu1/min"], "30");
  EXPECT_EQ(body["metadata"]["annotations"]["powerctl.io/idle-watts"], "95.5");
  EXPECT_EQ(server_.Object("/api/v1/nodes/n1")["metadata"]["annotations"]["powerctl.io/idle-watts"],
            "95.5");
}

}  // namespace
}  // namespace powerctl::setup
