#include "core/predict/node_params.h"

#include <gtest/gtest.h>

namespace powerctl::predict {
namespace {

using Map = std::map<std::string, std::string>;

TEST(NodeParamsTest, AnnotationsOverrideDefaults) {
  auto none = BuiltinParamsFromAnnotations({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->idle_watts, 120);
  EXPECT_EQ(none->max_watts, 350);
  EXPECT_EQ(none->curve, 1.0);
  EXPECT_EQ(none->temperature_factor, 0.1);

  auto all = BuiltinParamsFromAnnotations({{"powerctl.io/idle-watts", "95.5"},
                                           {"powerctl.io/max-watts", "410"},
                                           {"powerctl.io/curve", "0.8"},
                                           {"powerctl.io/temperature-factor", "0"},
                                           {"unrelated", "x"}});
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->idle_watts, 95.5);
  EXPECT_EQ(all->max_watts, 410);
  EXPECT_EQ(all->curve, 0.8);
  EXPECT_EQ(all->temperature_factor, 0);

  BuiltinParams defaults;
  defaults.idle_watts = 60;
  defaults.max_watts = 200;
  auto partial = BuiltinParamsFromAnnotations({{"powerctl.io/max-watts", "180"}}, defaults);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->idle_watts, 60);
  EXPECT_EQ(partial->max_watts, 180);
}

TEST(NodeParamsTest, RejectsBadAnnotationsNamingThem) {
  struct Case {
    Map annotations;
    std::string message;
  };
  const Case cases[] = {
      {{{"powerctl.io/idle-watts", "abc"}},
       "annotation powerctl.io/idle-watts=\"abc\": not a decimal number"},
      {{{"powerctl.io/max-watts", " 300"}},
       "annotation powerctl.io/max-watts=\" 300\": not a decimal number"},
      {{{"powerctl.io/curve", "1e0"}},
       "annotation powerctl.io/curve=\"1e0\": not a decimal number"},
      {{{"powerctl.io/curve", ""}}, "annotation powerctl.io/curve=\"\": not a decimal number"},
      {{{"powerctl.io/temperature-factor", "inf"}},
       "annotation powerctl.io/temperature-factor=\"inf\": not a decimal number"},
      {{{"powerctl.io/idle-watts", "400"}},  // above the default max of 350
       "annotations powerctl.io/*: max-watts must be greater than idle-watts"},
      {{{"powerctl.io/idle-watts", "-1"}},
       "annotations powerctl.io/*: idle-watts must be a number >= 0 and below 100000"},
      {{{"powerctl.io/curve", "5"}},
       "annotations powerctl.io/*: curve must be greater than 0 and at most 4"},
      {{{"powerctl.io/temperature-factor", "1.5"}},
       "annotations powerctl.io/*: temperature-factor must be between 0 and 1"},
  };
  for (const Case& c : cases) {
    auto params = BuiltinParamsFromAnnotations(c.annotations);
    ASSERT_FALSE(params.ok()) << c.message;
    EXPECT_EQ(params.error().code, ErrorCode::kInvalidInput);
    EXPECT_EQ(params.error().message, c.message);
  }
}

config::PowerctlConfig Config(const std::string& backend) {
  config::PowerctlConfig config;
  config.namespace_ = "power-system";
  config.predictor.backend = backend;
  config.predictor.model.name = "konohana";
  config.predictor.model.version = "1218";
  config.predictor.model.signature = "konohana";
  return config;
}

const Map kMinimizePowerLabels = {{"tensorflow/host", "10.0.0.100"},
                                  {"tensorflow/port", "8500"},
                                  {"tensorflow/name", "konohana"},
                                  {"ambient/max", "36.5"},
                                  {"kubernetes.io/hostname", "n1"}};

TEST(NodeParamsTest, EndpointFromMinimizePowerLabels) {
  auto ep = ModelEndpointForNode(kMinimizePowerLabels, Config("tfserving-grpc"));
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_EQ(ep->Key(), "tfserving-grpc|10.0.0.100:8500|konohana||");  // labels stand alone

  Map full = kMinimizePowerLabels;
  full["tensorflow/version"] = "1218";
  full["tensorflow/signature"] = "konohana";
  ep = ModelEndpointForNode(full, Config("tfserving-rest"));
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->Key(), "tfserving-rest|10.0.0.100:8500|konohana|1218|konohana");
}

TEST(NodeParamsTest, EndpointFromConfigWhenUnlabelled) {
  const Map labels = {{"kubernetes.io/hostname", "n1"}};
  auto grpc = ModelEndpointForNode(labels, Config("tfserving-grpc"));
  ASSERT_TRUE(grpc.ok());
  EXPECT_EQ(grpc->Key(),
            "tfserving-grpc|powerctl-model.power-system.svc:8500|konohana|1218|konohana");
  auto rest = ModelEndpointForNode(labels, Config("tfserving-rest"));
  EXPECT_EQ(rest->port, 8501);
  auto v2 = ModelEndpointForNode(labels, Config("v2"));
  EXPECT_EQ(v2->backend, "v2");
  EXPECT_EQ(v2->port, 8501);
}

TEST(NodeParamsTest, BuiltinIgnoresModelLabels) {
  auto ep = ModelEndpointForNode(kMinimizePowerLabels, Config("builtin"));
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->Key(), ModelEndpoint{}.Key());
}

TEST(NodeParamsTest, RejectsBadModelLabels) {
  struct Case {
    Map labels;
    std::string message;
  };
  const std::string partial =
      "node has some tensorflow/* labels but not all of tensorflow/host, tensorflow/port and "
      "tensorflow/name";
  const Case cases[] = {
      {{{"tensorflow/host", "10.0.0.1"}, {"tensorflow/port", "8500"}}, partial},
      {{{"tensorflow/version", "3"}}, partial},
      {{{"tensorflow/host", "10.0.0.1"}, {"tensorflow/port", "85x"}, {"tensorflow/name", "m"}},
       "label tensorflow/port=\"85x\": must be a port number 1-65535"},
      {{{"tensorflow/host", "10.0.0.1"}, {"tensorflow/port", "70000"}, {"tensorflow/name", "m"}},
       "label tensorflow/port=\"70000\": must be a port number 1-65535"},
      {{{"tensorflow/host", "a/b"}, {"tensorflow/port", "1"}, {"tensorflow/name", "m"}},
       "label tensorflow/host=\"a/b\": not a host name or IPv4 address"},
      {{{"tensorflow/host", "h"}, {"tensorflow/port", "1"}, {"tensorflow/name", "m:x"}},
       "label tensorflow/name=\"m:x\": not a model name"},
      {{{"tensorflow/host", "h"},
        {"tensorflow/port", "1"},
        {"tensorflow/name", "m"},
        {"tensorflow/version", "1/2"}},
       "label tensorflow/version=\"1/2\": not a model version"},
  };
  for (const Case& c : cases) {
    auto ep = ModelEndpointForNode(c.labels, Config("tfserving-grpc"));
    ASSERT_FALSE(ep.ok()) << c.message;
    EXPECT_EQ(ep.error().message, c.message);
  }
  auto bad_backend = ModelEndpointForNode({}, Config("onnx"));
  ASSERT_FALSE(bad_backend.ok());
  EXPECT_EQ(bad_backend.error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace powerctl::predict
