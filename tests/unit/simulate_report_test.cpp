// The HTML report's pieces: server types, the spread across seeds, the quoted command line.
#include "core/simulate/report_html.h"

#include <gtest/gtest.h>

namespace powerctl::simulate {
namespace {

Snapshot ReportNodes(const std::string& yaml_nodes) {
  auto parsed = ParseSnapshot("kind: ClusterSnapshot\nnodes:\n" + yaml_nodes, "t.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return *parsed;
}

std::vector<std::string> Names(const std::vector<ServerType>& types) {
  std::vector<std::string> names;
  for (const ServerType& t : types) names.push_back(t.name);
  return names;
}

TEST(ServerTypesTest, NumberedNamesOfTheSameHardwareAreOneType) {
  Snapshot s = ReportNodes(
      "- {name: gen2007-1, cpu: 8, memory: 16Gi}\n"
      "- {name: sr650-xeon8176-1, cpu: 112, memory: 448Gi}\n"
      "- {name: gen2007-12, cpu: 8, memory: 16Gi}\n"
      "- {name: sr650-xeon8176-2, cpu: 112, memory: 448Gi}\n");
  std::vector<ServerType> types = ServerTypes(s);
  EXPECT_EQ(Names(types), (std::vector<std::string>{"gen2007", "sr650-xeon8176"}));
  EXPECT_EQ(types[0].nodes, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(types[1].nodes, (std::vector<std::size_t>{1, 3}));
}

TEST(ServerTypesTest, TheInstanceTypeLabelWins) {
  Snapshot s = ReportNodes(
      "- {name: a-1, cpu: 8, memory: 16Gi, labels: {node.kubernetes.io/instance-type: "
      "m5.2xlarge}}\n"
      "- {name: b-1, cpu: 8, memory: 16Gi, labels: {node.kubernetes.io/instance-type: "
      "m5.2xlarge}}\n"
      "- {name: a-2, cpu: 8, memory: 16Gi, labels: {beta.kubernetes.io/instance-type: "
      "c5.xlarge}}\n");
  EXPECT_EQ(Names(ServerTypes(s)), (std::vector<std::string>{"m5.2xlarge", "c5.xlarge"}));
}

TEST(ServerTypesTest, NamesThatTellNothingFallBackToCoresAndMemory) {
  Snapshot s = ReportNodes(
      "- {name: alpha, cpu: 8, memory: 16Gi}\n"
      "- {name: beta, cpu: 8, memory: 16Gi}\n"
      "- {name: gamma, cpu: 32, memory: 64Gi}\n");
  std::vector<ServerType> types = ServerTypes(s);
  EXPECT_EQ(Names(types), (std::vector<std::string>{"8 cores, 16 GiB", "32 cores, 64 GiB"}));
  EXPECT_EQ(types[0].nodes, (std::vector<std::size_t>{0, 1}));
}

TEST(ServerTypesTest, OneNameOnDifferentHardwareSaysWhichIsWhich) {
  Snapshot s = ReportNodes(
      "- {name: worker-1, cpu: 8, memory: 16Gi}\n"
      "- {name: worker-2, cpu: 8, memory: 16Gi}\n"
      "- {name: worker-3, cpu: 32, memory: 64Gi}\n"
      "- {name: worker-4, cpu: 32, memory: 64Gi}\n");
  EXPECT_EQ(Names(ServerTypes(s)),
            (std::vector<std::string>{"worker (8 cores, 16 GiB)", "worker (32 cores, 64 GiB)"}));
}

TEST(SpreadOfTest, MeanMinMedianMax) {
  auto s = SpreadOf({4.0, 1.0, 3.0, 2.0});
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, 2.5);
  EXPECT_DOUBLE_EQ(s->min, 1);
  EXPECT_DOUBLE_EQ(s->median, 2.5);
  EXPECT_DOUBLE_EQ(s->max, 4);
  EXPECT_EQ(s->seeds, 4u);
  EXPECT_DOUBLE_EQ(SpreadOf({5.0, 1.0, 3.0})->median, 3);
  EXPECT_FALSE(SpreadOf({}).has_value());
  EXPECT_FALSE(SpreadOf({1.0, std::nullopt}).has_value());  // a seed never reached the load
}

TEST(ShellQuotedTest, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(ShellQuoted({"/usr/bin/powerctl", "simulate", "--load", "25,50", "--report",
                         "my report.html", "--set", "a=it's"}),
            "powerctl simulate --load 25,50 --report 'my report.html' --set 'a=it'\\''s'");
}

}  // namespace
}  // namespace powerctl::simulate
