// Readings (validation, staleness) and the node-name mapping of Prometheus series.

#include "core/telemetry/node_mapping.h"
#include "core/telemetry/readings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace powerctl::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

const SteadyTime kT0{std::chrono::hours(100)};

TEST(TelemetryReadingsTest, CpuValidation) {
  EXPECT_EQ(CpuReading(1.5, kT0, "s").value, 1.5);
  EXPECT_EQ(CpuReading(0, kT0, "s").value, 0.0);
  Reading nan = CpuReading(NAN, kT0, "metrics.k8s.io");
  EXPECT_FALSE(nan.ok());
  EXPECT_EQ(nan.missing_reason, "CPU usage is NaN");
  EXPECT_EQ(nan.source, "metrics.k8s.io");
  EXPECT_EQ(nan.observed_at, kT0);
  EXPECT_EQ(CpuReading(-0.1, kT0, "s").missing_reason, "CPU usage -0.1 cores is not plausible");
  EXPECT_FALSE(CpuReading(INFINITY, kT0, "s").ok());
}

TEST(TelemetryReadingsTest, TemperatureValidation) {
  EXPECT_EQ(TemperatureReading(24, kT0, "s").value, 24.0);
  EXPECT_EQ(TemperatureReading(-40, kT0, "s").value, -40.0);
  EXPECT_EQ(TemperatureReading(150, kT0, "s").value, 150.0);
  EXPECT_EQ(TemperatureReading(NAN, kT0, "s").missing_reason, "the sensor reads NaN (no reading)");
  EXPECT_EQ(TemperatureReading(150.5, kT0, "s").missing_reason,
            "temperature 150.5 C is outside the plausible -40..150 C");
  EXPECT_FALSE(TemperatureReading(-41, kT0, "s").ok());
  EXPECT_FALSE(TemperatureReading(-INFINITY, kT0, "s").ok());
}

TEST(TelemetryReadingsTest, StaleReadingsBecomeMissing) {
  Reading r = TemperatureReading(30, kT0, "ipmi");
  EXPECT_TRUE(WithMaxAge(r, kT0 + seconds(120), seconds(120)).ok());
  Reading stale = WithMaxAge(r, kT0 + seconds(181), seconds(120));
  EXPECT_FALSE(stale.ok());
  EXPECT_EQ(stale.missing_reason, "stale: measured 3m1s ago, more than the maximum age of 2m");
  EXPECT_EQ(stale.source, "ipmi");
  // From the future (clock skew): as if measured now.
  EXPECT_TRUE(WithMaxAge(r, kT0 - seconds(30), seconds(1)).ok());
  EXPECT_EQ(Age(r, kT0 - seconds(30)), milliseconds(0));
  EXPECT_EQ(Age(r, kT0 + seconds(5)), seconds(5));
  // A missing reading keeps its own reason.
  Reading missing = MissingReading("no sensor");
  EXPECT_EQ(WithMaxAge(missing, kT0 + std::chrono::hours(1), seconds(1)).missing_reason,
            "no sensor");

  NodeReading node;
  node.cpu_cores_used = CpuReading(1, kT0 + seconds(100), "c");
  node.ambient = TemperatureReading(20, kT0, "t");
  node.cpu1 = TemperatureReading(40, kT0, "t");
  node.cpu2 = MissingReading("none");
  NodeReading now = WithMaxAge(node, kT0 + seconds(150), seconds(60));
  EXPECT_TRUE(now.cpu_cores_used.ok());
  EXPECT_THAT(now.ambient.missing_reason, HasSubstr("stale: measured 2m30s ago"));
  EXPECT_FALSE(now.cpu1.ok());
  EXPECT_EQ(now.cpu2.missing_reason, "none");
}

TEST(TelemetryReadingsTest, TimeBaseMapsWallTimesToTheSteadyClock) {
  TimeBase time;
  time.clock.now = [] { return kT0; };
  time.wall_now = [] { return WallTime(seconds(1700000100)); };
  EXPECT_EQ(time.FromWall(WallTime(seconds(1700000000))), kT0 - seconds(100));
  EXPECT_EQ(time.FromWall(WallTime(seconds(1700000160))), kT0 + seconds(60));
}

NodeInfo Node(std::string name, std::vector<std::string> ips, std::vector<std::string> hosts = {}) {
  return NodeInfo{std::move(name), std::move(ips), std::move(hosts), std::nullopt};
}

TEST(TelemetryNodeMappingTest, InstanceHost) {
  EXPECT_EQ(InstanceHost("10.0.0.5:9100"), "10.0.0.5");
  EXPECT_EQ(InstanceHost("node-a:9100"), "node-a");
  EXPECT_EQ(InstanceHost("node-a"), "node-a");
  EXPECT_EQ(InstanceHost("[fd00::5]:9100"), "fd00::5");
  EXPECT_EQ(InstanceHost("fd00::5"), "fd00::5");
  EXPECT_EQ(InstanceHost("node-a:metrics"), "node-a:metrics");
  EXPECT_EQ(InstanceHost(""), "");
}

TEST(TelemetryNodeMappingTest, RulesInOrder) {
  NodeNameMapper mapper({Node("node-a", {"10.0.0.5"}, {"host-a"}), Node("node-b", {"fd00::6"}),
                         Node("10", {"10.0.0.7"})});
  auto map = [&](std::map<std::string, std::string> labels) {
    return mapper.Map(labels).value_or("(none)");
  };
  EXPECT_EQ(map({{"node", "node-b"}, {"instance", "10.0.0.5:9100"}}), "node-b");  // 1: node label
  EXPECT_EQ(map({{"kubernetes_node", "node-a"}}), "node-a");
  EXPECT_EQ(map({{"node", "unknown"}, {"instance", "10.0.0.5:9100"}}), "node-a");  // falls through
  EXPECT_EQ(map({{"instance", "node-a:9100"}}), "node-a");                         // 2: name
  EXPECT_EQ(map({{"instance", "NODE-A:9100"}}), "node-a");
  EXPECT_EQ(map({{"instance", "10.0.0.5:9100"}}), "node-a");  // 3: InternalIP
  EXPECT_EQ(map({{"instance", "[fd00::6]:9100"}}), "node-b");
  EXPECT_EQ(map({{"instance", "host-a:9290"}}), "node-a");                  // 4: Hostname
  EXPECT_EQ(map({{"instance", "node-b.cluster.example:9100"}}), "node-b");  // 5: first label
  EXPECT_EQ(map({{"instance", "10.0.0.99:9100"}}), "(none)");  // not "10" by its first part
  EXPECT_EQ(map({{"instance", "10.0.0.7:9100"}}), "10");
  EXPECT_EQ(map({{"job", "x"}}), "(none)");
  EXPECT_EQ(map({{"instance", ""}}), "(none)");
}

// MapPosition names the node by its place in the list, nodes without a name included, so
// a source can keep per-node results in a vector.
TEST(TelemetryNodeMappingTest, PositionsAreThoseOfTheList) {
  NodeNameMapper mapper({Node("", {"10.0.0.9"}), Node("a", {"10.0.0.1"}), Node("b", {"10.0.0.2"})});
  EXPECT_EQ(mapper.MapPosition({{"instance", "10.0.0.2:9100"}}), 2u);
  EXPECT_EQ(mapper.MapPosition({{"node", "a"}}), 1u);
  EXPECT_FALSE(mapper.MapPosition({{"instance", "10.0.0.9:9100"}}));  // a nameless node: none
  EXPECT_FALSE(mapper.MapPosition({{"instance", "10.0.0.3:9100"}}));
  EXPECT_EQ(mapper.Map({{"instance", "10.0.0.2:9100"}}), "b");
}

TEST(TelemetryNodeMappingTest, SharedAddressesMapToNoNode) {
  NodeNameMapper mapper({Node("a", {"10.0.0.1"}, {"shared"}), Node("b", {"10.0.0.1"}, {"shared"})});
  EXPECT_FALSE(mapper.Map({{"instance", "10.0.0.1:9100"}}));
  EXPECT_FALSE(mapper.Map({{"instance", "shared:9100"}}));
  EXPECT_EQ(mapper.Map({{"instance", "a:9100"}}), "a");
}

TEST(TelemetryNodeMappingTest, KeysClaimedTwiceByOneNodeStillNameIt) {
  // One node listing an address twice, a Hostname in capitals, names that differ only in case.
  NodeNameMapper mapper({Node("a", {"10.0.0.1", "10.0.0.1"}, {"Host-A.Example"}),
                         Node("Mixed", {"10.0.0.2"}), Node("mixed", {"10.0.0.3"})});
  EXPECT_EQ(mapper.Map({{"instance", "10.0.0.1:9100"}}), "a");
  EXPECT_EQ(mapper.Map({{"instance", "host-a.example:9100"}}), "a");
  EXPECT_FALSE(mapper.Map({{"node", "mixed"}}));                    // two nodes claim it
  EXPECT_EQ(mapper.Map({{"instance", "10.0.0.2:9100"}}), "Mixed");  // the Node's own spelling
  NodeNameMapper none({});
  EXPECT_FALSE(none.Map({{"instance", "a:1"}}));
}

TEST(TelemetryNodeMappingTest, CustomLabels) {
  NodeMappingOptions options;
  options.node_labels = {"host"};
  options.instance_label = "target";
  NodeNameMapper mapper({Node("a", {"10.0.0.1"})}, options);
  EXPECT_EQ(mapper.Map({{"host", "a"}}), "a");
  EXPECT_EQ(mapper.Map({{"target", "10.0.0.1"}}), "a");
  EXPECT_FALSE(mapper.Map({{"node", "a"}, {"instance", "10.0.0.1:1"}}));
}

TEST(TelemetryNodeMappingTest, NodeInfoFromJson) {
  auto node = nlohmann::json::parse(R"({
    "metadata": {"name": "worker-1"},
    "status": {
      "capacity": {"cpu": "16", "memory": "64Gi"},
      "addresses": [{"type": "InternalIP", "address": "10.0.0.5"},
                    {"type": "InternalIP", "address": "fd00::5"},
                    {"type": "Hostname", "address": "worker-1.local"},
                    {"type": "ExternalIP", "address": "1.2.3.4"},
                    {"type": 7}, "junk"]}})");
  NodeInfo info = NodeInfoFromJson(node);
  EXPECT_EQ(info.name, "worker-1");
  EXPECT_EQ(info.internal_ips, (std::vector<std::string>{"10.0.0.5", "fd00::5"}));
  EXPECT_EQ(info.hostnames, std::vector<std::string>{"worker-1.local"});
  EXPECT_EQ(info.cpu_capacity, 16.0);
  NodeInfo odd = NodeInfoFromJson(nlohmann::json::parse(
      R"({"metadata":{"name":5},"status":{"capacity":{"cpu":"many"},"addresses":{}}})"));
  EXPECT_EQ(odd.name, "");
  EXPECT_FALSE(odd.cpu_capacity);
  EXPECT_TRUE(NodeInfoFromJson(nlohmann::json()).internal_ips.empty());
}

}  // namespace
}  // namespace powerctl::telemetry
