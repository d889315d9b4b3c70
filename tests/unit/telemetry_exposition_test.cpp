// ParseExposition: the Prometheus text format as ipmi_exporter and node_exporter serve it.

#include "core/telemetry/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace powerctl::telemetry {
namespace {

using ::testing::HasSubstr;

// An ipmi_exporter /metrics page (a Dell BMC), verbatim.
constexpr char kIpmiExposition[] =
    R"exp(# HELP ipmi_bmc_info Constant metric with value '1' providing details about the BMC.
# TYPE ipmi_bmc_info gauge
ipmi_bmc_info{bmc_url="N/A",firmware_revision="1.66",manufacturer_id="Dell Inc. (674)",system_firmware_version="2.6.1"} 1
# HELP ipmi_chassis_power_state Current power state (1=on, 0=off).
# TYPE ipmi_chassis_power_state gauge
ipmi_chassis_power_state 1
# HELP ipmi_dcmi_power_consumption_watts Current power consumption in Watts.
# TYPE ipmi_dcmi_power_consumption_watts gauge
ipmi_dcmi_power_consumption_watts 240
# HELP ipmi_fan_speed_rpm Fan speed in rotations per minute.
# TYPE ipmi_fan_speed_rpm gauge
ipmi_fan_speed_rpm{id="12",name="Fan1A"} 4560
# HELP ipmi_power_watts Power reading in Watts.
# TYPE ipmi_power_watts gauge
ipmi_power_watts{id="90",name="Pwr Consumption"} 70
# HELP ipmi_scrape_duration_seconds Returns how long the scrape took to complete in seconds.
# TYPE ipmi_scrape_duration_seconds gauge
ipmi_scrape_duration_seconds 1.234
# HELP ipmi_sensor_value Generic data read from an IPMI sensor of unknown type, relying on labels for context.
# TYPE ipmi_sensor_value gauge
ipmi_sensor_value{id="139",name="Power Cable",type="Cable/Interconnect"} NaN
# HELP ipmi_temperature_celsius Temperature reading in degree Celsius.
# TYPE ipmi_temperature_celsius gauge
ipmi_temperature_celsius{id="18",name="Inlet Temp"} 24
# HELP ipmi_temperature_state Reported state of a temperature sensor (0=nominal, 1=warning, 2=critical).
# TYPE ipmi_temperature_state gauge
ipmi_temperature_state{id="18",name="Inlet Temp"} 0
# HELP ipmi_up '1' if a scrape of the IPMI device was successful, '0' otherwise.
# TYPE ipmi_up gauge
ipmi_up{collector="bmc"} 1
ipmi_up{collector="chassis"} 1
ipmi_up{collector="dcmi"} 1
ipmi_up{collector="ipmi"} 1
)exp";

Exposition MustParse(std::string_view text) {
  Result<Exposition> parsed = ParseExposition(text);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? parsed.value() : Exposition{};
}

std::string ErrorOf(std::string_view text, const ExpositionLimits& limits = {}) {
  Result<Exposition> parsed = ParseExposition(text, limits);
  if (parsed.ok()) return "(parsed)";
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidInput);
  return parsed.error().message;
}

TEST(ExpositionTest, ParsesTheIpmiExporterExample) {
  Exposition e = MustParse(kIpmiExposition);
  ASSERT_EQ(e.samples.size(), 13u);
  EXPECT_EQ(e.types.at("ipmi_temperature_celsius"), "gauge");
  EXPECT_EQ(e.help.at("ipmi_up"),
            "'1' if a scrape of the IPMI device was successful, '0' otherwise.");

  const ExpositionSample& info = e.samples[0];
  EXPECT_EQ(info.name, "ipmi_bmc_info");
  EXPECT_EQ(info.labels.at("manufacturer_id"), "Dell Inc. (674)");
  EXPECT_EQ(info.labels.at("bmc_url"), "N/A");
  EXPECT_EQ(info.value, 1);
  EXPECT_FALSE(info.timestamp_ms);

  auto temps = FindSamples(e, "ipmi_temperature_celsius");
  ASSERT_EQ(temps.size(), 1u);
  EXPECT_EQ(temps[0]->labels.at("name"), "Inlet Temp");
  EXPECT_EQ(temps[0]->labels.at("id"), "18");
  EXPECT_EQ(temps[0]->value, 24);

  auto power = FindSamples(e, "ipmi_dcmi_power_consumption_watts");
  ASSERT_EQ(power.size(), 1u);
  EXPECT_TRUE(power[0]->labels.empty());
  EXPECT_EQ(power[0]->value, 240);

  EXPECT_DOUBLE_EQ(FindSamples(e, "ipmi_scrape_duration_seconds")[0]->value, 1.234);
  EXPECT_TRUE(std::isnan(FindSamples(e, "ipmi_sensor_value")[0]->value));
  EXPECT_EQ(FindSamples(e, "ipmi_up").size(), 4u);
  auto ipmi_up = FindSamples(e, "ipmi_up", {{"collector", "ipmi"}});
  ASSERT_EQ(ipmi_up.size(), 1u);
  EXPECT_EQ(ipmi_up[0]->value, 1);
}

TEST(ExpositionTest, LabelEscapes) {
  Exposition e = MustParse(R"(m{a="back\\slash",b="say \"hi\"",c="two\nlines",d=""} 1)");
  ASSERT_EQ(e.samples.size(), 1u);
  EXPECT_EQ(e.samples[0].labels.at("a"), "back\\slash");
  EXPECT_EQ(e.samples[0].labels.at("b"), "say \"hi\"");
  EXPECT_EQ(e.samples[0].labels.at("c"), "two\nlines");
  EXPECT_EQ(e.samples[0].labels.at("d"), "");
}

TEST(ExpositionTest, HelpEscapes) {
  Exposition e = MustParse("# HELP m  a \\\\ b \\n c \\x\nm 1\n");
  EXPECT_EQ(e.help.at("m"), "a \\ b \n c \\x");
}

TEST(ExpositionTest, SpecialValuesAndTimestamps) {
  Exposition e = MustParse(
      "a NaN\nb +Inf\nc -Inf\nd 1.703613275e+09 1700000000123\ne -0.5 -12\nf 1E3\ng inf\n"
      "h .5\n");
  ASSERT_EQ(e.samples.size(), 8u);
  EXPECT_TRUE(std::isnan(e.samples[0].value));
  EXPECT_EQ(e.samples[1].value, INFINITY);
  EXPECT_EQ(e.samples[2].value, -INFINITY);
  EXPECT_DOUBLE_EQ(e.samples[3].value, 1703613275.0);
  EXPECT_EQ(e.samples[3].timestamp_ms, 1700000000123);
  EXPECT_EQ(e.samples[4].value, -0.5);
  EXPECT_EQ(e.samples[4].timestamp_ms, -12);
  EXPECT_EQ(e.samples[5].value, 1000);
  EXPECT_EQ(e.samples[6].value, INFINITY);
  EXPECT_EQ(e.samples[7].value, 0.5);
}

TEST(ExpositionTest, LenientWhitespaceCommentsAndLineEndings) {
  Exposition e =
      MustParse("\n# just a comment\n#\n   \r\nm { a = \"1\" , b=\"2\", } 3 \t\r\n\tn\t4\n# EOF\n");
  ASSERT_EQ(e.samples.size(), 2u);
  EXPECT_EQ(e.samples[0].labels.size(), 2u);
  EXPECT_EQ(e.samples[0].value, 3);
  EXPECT_EQ(e.samples[1].name, "n");
  EXPECT_TRUE(MustParse("").samples.empty());
  EXPECT_EQ(MustParse("m{} 1").samples.size(), 1u);  // no final newline either
}

TEST(ExpositionTest, ErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("ok 1\n\n9bad 1\n"), "line 3: invalid metric name at \"9bad 1\"");
  EXPECT_THAT(ErrorOf("m 1\nm{a=\"x} 1\n"), HasSubstr("line 2: unterminated value of label \"a\""));
  EXPECT_THAT(ErrorOf("m{a=\"\\t\"} 1"), HasSubstr("line 1: invalid escape sequence"));
  EXPECT_THAT(ErrorOf("m{a=\"1\",a=\"2\"} 1"), HasSubstr("duplicate label \"a\""));
  EXPECT_THAT(ErrorOf("m{a=1} 1"), HasSubstr("expected '\"'"));
  EXPECT_THAT(ErrorOf("m{a \"1\"} 1"), HasSubstr("expected '=' after label name \"a\""));
  EXPECT_THAT(ErrorOf("m{a=\"1\" b=\"2\"} 1"), HasSubstr("expected ',' or '}'"));
  EXPECT_THAT(ErrorOf("m{a=\"1\""), HasSubstr("unterminated label set"));
  EXPECT_THAT(ErrorOf("m{-=\"1\"} 1"), HasSubstr("invalid label name"));
  EXPECT_THAT(ErrorOf("m"), HasSubstr("line 1: missing value for \"m\""));
  EXPECT_THAT(ErrorOf("m abc"), HasSubstr("invalid value \"abc\""));
  EXPECT_THAT(ErrorOf("m 1e999"), HasSubstr("invalid value"));
  EXPECT_THAT(ErrorOf("m +-1"), HasSubstr("invalid value"));
  EXPECT_THAT(ErrorOf("m nan(1)"), HasSubstr("invalid value"));
  EXPECT_THAT(ErrorOf("m 1 12.5"), HasSubstr("invalid timestamp \"12.5\""));
  EXPECT_THAT(ErrorOf("m 1 12 extra"), HasSubstr("unexpected text after the timestamp"));
  EXPECT_THAT(ErrorOf("# TYPE m gauge\n# TYPE m counter\n"),
              HasSubstr("line 2: second TYPE line for \"m\""));
  EXPECT_THAT(ErrorOf("# TYPE m bogus\n"), HasSubstr("unknown metric type \"bogus\""));
  EXPECT_THAT(ErrorOf("# HELP\n"), HasSubstr("invalid metric name in HELP line"));
  EXPECT_THAT(ErrorOf("# HELP m a\n# HELP m b\n"), HasSubstr("second HELP line"));
}

TEST(ExpositionTest, LongInputIsQuotedShortly) {
  std::string error = ErrorOf("m " + std::string(1000, 'x'));
  EXPECT_LT(error.size(), 120u);
  EXPECT_THAT(error, HasSubstr("...\""));
}

TEST(ExpositionTest, QuotedInputIsCutBetweenCharacters) {
  std::string accents;
  for (int i = 0; i < 30; ++i) accents += "\xc3\xa9";
  const std::string error = ErrorOf("m a" + accents + "\n");
  EXPECT_THAT(error, HasSubstr("\"a\xc3\xa9"));
  EXPECT_THAT(error, HasSubstr("...\""));
  EXPECT_NO_THROW((void)nlohmann::json(error).dump()) << error;
}

TEST(ExpositionTest, Limits) {
  ExpositionLimits limits;
  limits.max_bytes = 10;
  EXPECT_THAT(ErrorOf("metric_name 1\n", limits), HasSubstr("larger than the limit of 10"));
  limits = {};
  limits.max_samples = 2;
  EXPECT_EQ(ErrorOf("a 1\nb 2\nc 3\n", limits), "line 3: more than 2 samples");
  limits = {};
  limits.max_labels = 1;
  EXPECT_THAT(ErrorOf("a{x=\"1\",y=\"2\"} 1", limits), HasSubstr("more than 1 labels"));
}

TEST(ExpositionTest, FindSamplesMatchesEveryLabel) {
  Exposition e = MustParse(
      "t{name=\"CPU1\",id=\"1\"} 40\nt{name=\"CPU2\",id=\"2\"} 41\nt{name=\"CPU1\",id=\"3\"} 42\n");
  EXPECT_EQ(FindSamples(e, "t").size(), 3u);
  auto cpu1 = FindSamples(e, "t", {{"name", "CPU1"}});
  ASSERT_EQ(cpu1.size(), 2u);
  EXPECT_EQ(cpu1[0]->value, 40);  // input order
  EXPECT_EQ(FindSamples(e, "t", {{"name", "CPU1"}, {"id", "3"}}).size(), 1u);
  EXPECT_TRUE(FindSamples(e, "t", {{"missing", ""}}).empty());
  EXPECT_TRUE(FindSamples(e, "u").empty());
}

TEST(ExpositionTest, ParseGoFloat) {
  EXPECT_EQ(ParseGoFloat("240"), 240.0);
  EXPECT_EQ(ParseGoFloat("241.5"), 241.5);
  EXPECT_EQ(ParseGoFloat("1e-07"), 1e-07);
  EXPECT_EQ(ParseGoFloat("+Inf"), INFINITY);
  EXPECT_EQ(ParseGoFloat("-Infinity"), -INFINITY);
  EXPECT_TRUE(std::isnan(*ParseGoFloat("NaN")));
  EXPECT_FALSE(ParseGoFloat(""));
  EXPECT_FALSE(ParseGoFloat("-"));
  EXPECT_FALSE(ParseGoFloat("1,5"));
  EXPECT_FALSE(ParseGoFloat("0x10"));
  EXPECT_FALSE(ParseGoFloat(" 1"));
}

}  // namespace
}  // namespace powerctl::telemetry
