#include "core/config/config_loader.h"

#include "core/config/config_schema.h"
#include "core/config/config_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace powerctl::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Error ApplyError(const std::string& text) {
  PowerctlConfig config;
  Status s = ApplyConfigText(config, text, "p.yaml");
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? Error{} : s.error();
}

TEST(ConfigLoaderTest, EmptyTextKeepsDefaults) {
  PowerctlConfig config;
  ASSERT_TRUE(ApplyConfigText(config, "", "p.yaml").ok());
  EXPECT_EQ(config.namespace_, "powerctl");
  EXPECT_EQ(config.extender.tls_mode, "mtls");
}

TEST(ConfigLoaderTest, ReadsNestedKeysAndLists) {
  PowerctlConfig config;
  ASSERT_TRUE(
      ApplyConfigText(
          config,
          "namespace: energy\nextender:\n  port: 9443\n  ignorable: false\n"
          "telemetry:\n  sensors:\n    ambient: [Inlet Temp]\nscoring:\n  powerWeight: 2.5\n",
          "p.yaml")
          .ok());
  EXPECT_EQ(config.namespace_, "energy");
  EXPECT_EQ(config.extender.port, 9443);
  EXPECT_FALSE(config.extender.ignorable);
  EXPECT_EQ(config.telemetry.sensors.ambient, std::vector<std::string>{"Inlet Temp"});
  EXPECT_DOUBLE_EQ(config.scoring.power_weight, 2.5);
}

TEST(ConfigLoaderTest, ErrorsNameFileLineAndKey) {
  EXPECT_THAT(
      ApplyError("namespace: a\nextender:\n  prot: 1\n").message,
      HasSubstr("p.yaml:3: unknown key \"extender.prot\" (did you mean \"extender.port\"?)"));
  EXPECT_THAT(ApplyError("extender:\n  port: 0\n").message,
              HasSubstr("p.yaml:2: extender.port: must be between"));
  EXPECT_THAT(ApplyError("extender:\n  weight: heavy\n").message,
              HasSubstr("p.yaml:2: extender.weight"));
  EXPECT_THAT(ApplyError("namespace: Bad_Name\n").message,
              HasSubstr("p.yaml:1: namespace: must consist"));
  EXPECT_THAT(ApplyError("extender:\n  tlsMode: plain\n").message,
              HasSubstr("not one of: mtls, tls, insecure"));
  EXPECT_THAT(ApplyError("kind: Other\n").message, HasSubstr("kind: must be PowerctlConfig"));
  EXPECT_THAT(ApplyError("- a\n- b\n").message, HasSubstr("top level must be a mapping"));
  EXPECT_THAT(ApplyError("a: 1\n---\nb: 2\n").message, HasSubstr("one YAML document"));
  EXPECT_THAT(ApplyError("extender: [1\n").message, HasSubstr("p.yaml:"));
  EXPECT_EQ(ApplyError("extender:\n  port: 0\n").code, ErrorCode::kInvalidInput);
}

TEST(ConfigLoaderTest, PolicyValidation) {
  EXPECT_THAT(
      ApplyError("policies:\n- name: p\n  strategies:\n    nosuch:\n      rules: []\n").message,
      HasSubstr("unknown strategy \"nosuch\""));
  EXPECT_THAT(ApplyError("policies:\n- name: p\n  strategies:\n    dontschedule:\n      rules:\n"
                         "      - {metricname: m, operator: LessThan}\n")
                  .message,
              HasSubstr("p.yaml:6: rules: dontschedule rules need a target"));
  EXPECT_THAT(ApplyError("policies:\n- name: p\n  strategies:\n    dontschedule:\n      rules:\n"
                         "      - {metricname: m/x, operator: LessThan, target: 1}\n")
                  .message,
              HasSubstr("metricname"));
  EXPECT_THAT(ApplyError("policies:\n- name: p\n  strategies:\n    dontschedule:\n      rules:\n"
                         "      - {metricname: m, operator: LessThan, target: 1.5}\n")
                  .message,
              HasSubstr("target: must be an integer"));
  EXPECT_THAT(ApplyError("policies:\n- name: p\n  strategies:\n    labeling:\n      rules:\n"
                         "      - {metricname: m, operator: LessThan, target: 1}\n")
                  .message,
              HasSubstr("labeling rules need labels"));
}

TEST(ConfigLoaderTest, LayersApplyInOrder) {
  ConfigSources sources;
  sources.environment = {
      {"POWERCTL_EXTENDER_WEIGHT", "4"}, {"POWERCTL_NAMESPACE", "from-env"}, {"HOME", "/x"}};
  sources.set_flags = {"extender.weight=6"};
  auto config = LoadConfig(sources);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->extender.weight, 6);
  EXPECT_EQ(config->namespace_, "from-env");
}

TEST(ConfigLoaderTest, SetFlagErrors) {
  ConfigSources sources;
  sources.set_flags = {"extender.wieght=3"};
  auto config = LoadConfig(sources);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("did you mean \"extender.weight\""));
  sources.set_flags = {"novalue"};
  EXPECT_THAT(LoadConfig(sources).error().message, HasSubstr("expected KEY=VALUE"));
}

TEST(ConfigLoaderTest, ResourceScoringTakesItsThreeChoices) {
  for (const char* choice : {kResourceScoringPack, kResourceScoringSpread, kResourceScoringNone}) {
    ConfigSources sources;
    sources.set_flags = {std::string("scheduler.resourceScoring=") + choice};
    auto config = LoadConfig(sources);
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->scheduler.resource_scoring, choice);
    EXPECT_TRUE(config->warnings.empty());
  }
  EXPECT_THAT(ApplyError("scheduler:\n  resourceScoring: binpack\n").message,
              HasSubstr("p.yaml:2: scheduler.resourceScoring: \"binpack\" is not one of: spread, "
                        "pack, none"));
}

TEST(ConfigLoaderTest, PowerFirstTrueIsResourceScoringNoneWithAWarning) {
  ConfigSources sources;
  sources.environment = {{"POWERCTL_SCHEDULER_POWER_FIRST", "true"}};
  auto config = LoadConfig(sources);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->scheduler.resource_scoring, kResourceScoringNone);
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("scheduler.resourceScoring: none"));
  // Said twice, the same way, it is no conflict.
  sources.set_flags = {"scheduler.resourceScoring=none"};
  EXPECT_TRUE(LoadConfig(sources).ok());
}

TEST(ConfigLoaderTest, PowerFirstFalseIsIgnoredWithAWarning) {
  ConfigSources sources;
  sources.set_flags = {"scheduler.powerFirst=false", "scheduler.resourceScoring=pack"};
  auto config = LoadConfig(sources);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->scheduler.resource_scoring, kResourceScoringPack);
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("false is ignored"));
}

TEST(ConfigLoaderTest, PowerFirstThatDisagreesWithResourceScoringIsAnError) {
  ConfigSources sources;
  sources.set_flags = {"scheduler.powerFirst=true", "scheduler.resourceScoring=pack"};
  auto config = LoadConfig(sources);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message,
              HasSubstr("scheduler.powerFirst: true and scheduler.resourceScoring: pack "
                        "disagree"));
  EXPECT_THAT(ApplyError("scheduler:\n  powerFirst: maybe\n").message,
              HasSubstr("p.yaml:2: scheduler.powerFirst: \"maybe\" is not true or false"));
}

TEST(ConfigWriterTest, DeprecatedKeysAreNotWritten) {
  PowerctlConfig config;
  config.scheduler.power_first = "true";
  for (ConfigStyle style : {ConfigStyle::kCommented, ConfigStyle::kPlain}) {
    std::string text = WriteConfigYaml(config, style);
    EXPECT_THAT(text, Not(HasSubstr("powerFirst")));
    EXPECT_THAT(text, HasSubstr("resourceScoring: spread"));
  }
}

TEST(ConfigLoaderTest, CrossFieldChecks) {
  ConfigSources sources;
  sources.set_flags = {"extender.port=8080"};
  EXPECT_THAT(LoadConfig(sources).error().message, HasSubstr("must differ"));
}

// The inputs of tests/fuzz/corpus/config_fuzzer/regression-*: each was a crash, hang or
// uncaught exception before, and must now be a clean kInvalidInput naming the line.
TEST(ConfigLoaderTest, FuzzRegressionsAreCleanErrors) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      // invalid-utf8-list-throws: yaml-cpp passed the byte through, and dumping it threw.
      {"telemetry:\n  sensors:\n    ambient: [\"\xea\"]\n", "p.yaml:3:15: text is not valid UTF-8"},
      // invalid-utf8-string
      {"extender:\n urlPrefixPath: /\xea", "p.yaml:2:17: text is not valid UTF-8"},
      // leading-comma-hang: yaml-cpp 0.7 reported empty documents at the ',' forever.
      {",", "p.yaml:1:1: unexpected ','"},
      // newline-in-string: would have broken the YAML and the ConfigMap powerctl writes.
      {"predictor:\n  model:\n    signature: \"a\\nb\"\n",
       "p.yaml:3: predictor.model.signature: must not contain control characters"},
      // regex-stack-overflow-*: std::regex recursed once per character. The schema caps every
      // value at 1024 characters now, and the validators are linear scanners (names_test).
      {"extender:\n  image: " + std::string(100000, 'a') + "\n",
       "p.yaml:2: extender.image: longer than 1024 characters"},
      {"extender:\n  cpuRequest: \"" + std::string(100000, '1') + "\"\n",
       "p.yaml:2: extender.cpuRequest: longer than 1024 characters"},
      {"policies:\n- name: p\n  strategies:\n    scheduleonmetric:\n      rules:\n"
       "      - metricname: " +
           std::string(100000, 'a') + "\n        operator: LessThan\n",
       "p.yaml:6: metricname: must match ^[a-zA-Z0-9_-]+$"},
  };
  for (const Case& c : cases) {
    const Error error = ApplyError(c.text);
    EXPECT_EQ(error.code, ErrorCode::kInvalidInput) << c.message;
    EXPECT_THAT(error.message, HasSubstr(c.message));
  }
}

TEST(ConfigSchemaTest, EnvVarNames) {
  EXPECT_EQ(EnvVarName("namespace"), "POWERCTL_NAMESPACE");
  EXPECT_EQ(EnvVarName("extender.opsPort"), "POWERCTL_EXTENDER_OPS_PORT");
  EXPECT_EQ(EnvVarName("scheduler.clientQPS"), "POWERCTL_SCHEDULER_CLIENT_QPS");
  EXPECT_EQ(EnvVarName("predictor.model.persistentVolumeClaim"),
            "POWERCTL_PREDICTOR_MODEL_PERSISTENT_VOLUME_CLAIM");
}

TEST(ConfigSchemaTest, EveryCheckSaysWhatItAcceptsAndAcceptsTheDefault) {
  PowerctlConfig defaults;
  for (const FieldSpec& field : ConfigFields()) {
    SCOPED_TRACE(std::string(field.path));
    EXPECT_EQ(field.check.fn == nullptr, field.check.accepts.empty());
    if (field.check.fn == nullptr) continue;
    FieldRef ref = field.ref(defaults);
    auto* value = std::get_if<std::string*>(&ref);
    ASSERT_NE(value, nullptr) << "checks apply to string values";
    // The default is valid, except where the key must be set (an image for the extender).
    if (!(*value)->empty()) {
      EXPECT_EQ(field.check.fn(**value), "");
    }
  }
  const FieldSpec* duration = FindConfigField("telemetry.maxAge");
  ASSERT_NE(duration, nullptr);
  EXPECT_NE(duration->check.fn("soon"), "");
  EXPECT_THAT(std::string(duration->check.accepts), HasSubstr("30s"));
}

TEST(ConfigWriterTest, WrittenConfigLoadsBackEqual) {
  PowerctlConfig config;
  config.namespace_ = "energy";
  config.extender.weight = 9;
  config.telemetry.sensors.cpu1 = {"CPU1 Temp", "Proc 1"};
  config.scheduler.resource_scoring = kResourceScoringNone;
  Policy p;
  p.name = "hot";
  PolicyRule rule{"temp", "GreaterThan", 80, true, {}};
  p.strategies["dontschedule"].rules.push_back(rule);
  config.policies.push_back(p);
  for (ConfigStyle style : {ConfigStyle::kCommented, ConfigStyle::kPlain}) {
    std::string text = WriteConfigYaml(config, style);
    PowerctlConfig back;
    Status s = ApplyConfigText(back, text, "w.yaml");
    ASSERT_TRUE(s.ok()) << s.error().message << "\n" << text;
    EXPECT_EQ(WriteConfigYaml(back, ConfigStyle::kPlain),
              WriteConfigYaml(config, ConfigStyle::kPlain));
    EXPECT_EQ(back.policies.size(), 1u);
    EXPECT_EQ(back.telemetry.sensors.cpu1, config.telemetry.sensors.cpu1);
  }
}

}  // namespace
}  // namespace powerctl::config
