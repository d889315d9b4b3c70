// CPU and temperature sources over fakes: ipmi_exporter scraped per node, PromQL, the
// metrics API, sensor-name precedence, node mapping and per-node reasons.

#include "core/telemetry/sources.h"
#include "tests/unit/fake_transport.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

namespace powerctl::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using telemetry_test::FakeHttp;
using telemetry_test::ManualClock;
using telemetry_test::Reply;
using ::testing::HasSubstr;

const WallTime kWallNow{seconds(1700000100)};

std::string FormDecode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

// The PromQL of a Prometheus client request.
std::string QueryOf(const HttpClientRequest& r) {
  std::string form = FormDecode(r.body);
  std::size_t start = form.find("query=") + 6;
  return form.substr(start, form.find('&', start) - start);
}

NodeInfo SourcesNode(std::string name, std::vector<std::string> ips) {
  return NodeInfo{std::move(name), std::move(ips), {}, 8.0};
}

class TelemetrySourcesTest : public ::testing::Test {
 protected:
  TelemetrySourcesTest() {
    time_.clock = clock_.AsClock();
    time_.wall_now = [] { return kWallNow; };
  }
  ManualClock clock_;
  TimeBase time_;
};

constexpr char kNodeA[] = R"(# TYPE ipmi_temperature_celsius gauge
ipmi_temperature_celsius{id="1",name="Inlet Temp"} 19
ipmi_temperature_celsius{id="2",name="Ambient"} 20
ipmi_temperature_celsius{id="9",name="CPU1"} 42
ipmi_temperature_celsius{id="10",name="CPU2 Temp"} 56 1700000040000
ipmi_up{collector="ipmi"} 1
)";

constexpr char kNodeD[] = R"(ipmi_temperature_celsius{id="1",name="Inlet Temp"} 24
ipmi_temperature_celsius{id="9",name="CPU1"} NaN
ipmi_temperature_celsius{id="10",name="CPU2"} 300
)";

TEST_F(TelemetrySourcesTest, IpmiExporterDirect) {
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (r.url == "http://10.0.0.1:9290/metrics") return Reply(200, kNodeA);
    if (r.url == "http://10.0.0.2:9290/metrics") return Reply(500, "oops");
    if (r.url == "http://[fd00::4]:9290/metrics") return Reply(200, kNodeD);
    if (r.url == "http://10.0.0.5:9290/metrics")
      return Reply(200, "ipmi_up{collector=\"ipmi\"} 0\n");
    if (r.url == "http://10.0.0.6:9290/metrics") return Reply(200, "garbage{\n");
    return MakeError(ErrorCode::kNetwork, "cannot connect to " + r.url + ": Connection refused");
  });
  IpmiExporterOptions options;
  options.timeout = milliseconds(1500);
  options.parallelism = 3;
  auto source = MakeIpmiExporterTemperatureSource(http, options, time_);
  std::vector<NodeInfo> nodes = {SourcesNode("a", {"10.0.0.1"}), SourcesNode("b", {"10.0.0.2"}),
                                 SourcesNode("c", {}),           SourcesNode("d", {"fd00::4"}),
                                 SourcesNode("e", {"10.0.0.5"}), SourcesNode("f", {"10.0.0.6"}),
                                 SourcesNode("g", {"10.0.0.7"})};
  auto temps = source->Fetch(nodes);
  ASSERT_TRUE(temps.ok());
  ASSERT_EQ(temps->size(), nodes.size());
  EXPECT_EQ(http.requests().size(), 6u);  // c has no address
  for (const HttpClientRequest& r : http.requests()) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.timeout, milliseconds(1500));
  }

  const Temperatures& a = temps->at("a");
  EXPECT_EQ(a.ambient.value, 20.0);  // "Ambient" is configured before "Inlet Temp"
  EXPECT_EQ(a.ambient.source, "ipmi_exporter at http://10.0.0.1:9290/metrics sensor \"Ambient\"");
  EXPECT_EQ(a.ambient.observed_at, clock_.Now());
  EXPECT_EQ(a.cpu1.value, 42.0);
  EXPECT_EQ(a.cpu2.value, 56.0);  // the second configured name, "CPU2 Temp"
  EXPECT_EQ(a.cpu2.observed_at, clock_.Now() - seconds(60));  // its exposition timestamp

  EXPECT_EQ(temps->at("b").ambient.missing_reason, "HTTP 500 from http://10.0.0.2:9290/metrics");
  EXPECT_EQ(temps->at("c").cpu1.missing_reason, "the node has no InternalIP address to scrape");
  const Temperatures& d = temps->at("d");
  EXPECT_EQ(d.ambient.value, 24.0);  // falls back to "Inlet Temp"
  EXPECT_EQ(d.cpu1.missing_reason, "the sensor reads NaN (no reading)");
  EXPECT_THAT(d.cpu2.missing_reason, HasSubstr("outside the plausible"));
  EXPECT_THAT(temps->at("e").ambient.missing_reason,
              HasSubstr("no ipmi_temperature_celsius sensor named \"Ambient\" or \"Inlet Temp\""));
  EXPECT_THAT(temps->at("e").ambient.missing_reason, HasSubstr("ipmi_up{collector=\"ipmi\"} is 0"));
  EXPECT_THAT(temps->at("f").cpu2.missing_reason, HasSubstr("unreadable metrics: line 1:"));
  EXPECT_THAT(temps->at("g").cpu2.missing_reason, HasSubstr("Connection refused"));
}

TEST(TelemetryPickSensorsTest, FirstConfiguredNamePresentWinsAndItsHighestReading) {
  config::SensorNames names;
  names.ambient = {"Ambient", "Inlet Temp"};
  names.cpu1 = {"CPU1"};
  SteadyTime t{};
  names.cpu2 = {"CPU2"};
  std::vector<SensorSample> samples = {{"Inlet Temp", 18, t}, {"Ambient", NAN, t}, {"CPU1", NAN, t},
                                       {"CPU1", 255, t},      {"CPU1", 41, t},     {"CPU1", 40, t},
                                       {"CPU2", NAN, t},      {"CPU2", 300, t}};
  Temperatures picked = PickSensors(samples, names, "here");
  // "Ambient" is present, so it wins even though it has no reading.
  EXPECT_FALSE(picked.ambient.ok());
  EXPECT_EQ(picked.ambient.source, "here sensor \"Ambient\"");
  EXPECT_EQ(picked.cpu1.value, 41.0);  // of several series of that name, the highest plausible
  // Nothing plausible: the implausible reading, so its reason shows (not the NaN's).
  EXPECT_FALSE(picked.cpu2.ok());
  EXPECT_THAT(picked.cpu2.missing_reason, HasSubstr("300"));
  names.cpu2 = {};
  EXPECT_EQ(PickSensors(samples, names, "here").cpu2.missing_reason,
            "no sensor names are configured for cpu2 (telemetry.sensors)");
}

TEST(TelemetryPickSensorsTest, IpmiExporterUrl) {
  EXPECT_EQ(IpmiExporterUrl(SourcesNode("a", {"10.0.0.1", "10.0.0.2"}), 9290),
            "http://10.0.0.1:9290/metrics");
  EXPECT_EQ(IpmiExporterUrl(SourcesNode("a", {"fd00::1"}), 1, "/x"), "http://[fd00::1]:1/x");
  EXPECT_EQ(IpmiExporterUrl(SourcesNode("a", {}), 9290), "");
}

std::string Vector(const std::vector<std::pair<std::string, std::string>>& series) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (i > 0) out += ",";
    out +=
        R"({"metric":)" + series[i].first + R"(,"value":[1700000100,")" + series[i].second + "\"]}";
  }
  return out + "]}}";
}

// The `by` clause names only the labels the node mapping reads that Prometheus accepts as
// label names: a malformed configured one is left out rather than failing every query.
TEST_F(TelemetrySourcesTest, PrometheusTemperatureQueriesGroupByTheLabelsRead) {
  FakeHttp http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return Reply(200, Vector({}));
  });
  PrometheusClient prometheus(http, PrometheusOptions{"http://prom:9090", seconds(5), nullptr});
  PrometheusTemperatureOptions options;
  options.mapping.node_labels = {"host_name", "bad-label", "9lives", ""};
  options.mapping.instance_label = "target";
  auto temps =
      MakePrometheusTemperatureSource(prometheus, options, time_)->Fetch({SourcesNode("a", {})});
  ASSERT_TRUE(temps.ok()) << temps.error().message;
  ASSERT_EQ(http.requests().size(), 2u);
  for (const HttpClientRequest& request : http.requests()) {
    EXPECT_EQ(QueryOf(request).rfind("max by (name, host_name, target) (", 0), 0u)
        << QueryOf(request);
  }
  EXPECT_THAT(temps->at("a").ambient.missing_reason, HasSubstr("has no ipmi_temperature_celsius"));
}

TEST_F(TelemetrySourcesTest, PrometheusTemperatures) {
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    std::string q = QueryOf(r);
    if (q.find("(timestamp(") != std::string::npos) {
      return Reply(
          200, Vector({{R"({"instance":"10.0.0.1:9290","job":"ipmi","name":"Ambient","id":"1"})",
                        "1700000090"},
                       {R"({"instance":"10.0.0.1:9290","job":"ipmi","name":"CPU1","id":"9"})",
                        "1700000000"}}));
    }
    return Reply(
        200,
        Vector({
            {R"({"__name__":"ipmi_temperature_celsius","instance":"10.0.0.1:9290","job":"ipmi","name":"Ambient","id":"1"})",
             "21"},
            {R"({"__name__":"ipmi_temperature_celsius","instance":"10.0.0.1:9290","job":"ipmi","name":"CPU1","id":"9"})",
             "45"},
            {R"({"__name__":"ipmi_temperature_celsius","instance":"10.0.0.1:9290","job":"ipmi","name":"CPU2","id":"10"})",
             "NaN"},
            {R"({"__name__":"ipmi_temperature_celsius","instance":"bmc-17","node":"b","name":"Inlet Temp"})",
             "23.5"},
            {R"({"__name__":"ipmi_temperature_celsius","instance":"10.9.9.9:9290","name":"Ambient"})",
             "99"},
        }));
  });
  PrometheusClient prometheus(http, PrometheusOptions{"http://prom:9090", seconds(5), nullptr});
  auto source = MakePrometheusTemperatureSource(prometheus, {}, time_);
  auto temps = source->Fetch({SourcesNode("a", {"10.0.0.1"}), SourcesNode("b", {"10.0.0.2"}),
                              SourcesNode("c", {"10.0.0.3"})});
  ASSERT_TRUE(temps.ok()) << temps.error().message;
  ASSERT_EQ(http.requests().size(), 2u);
  // The timestamps first (their series are freed before the values arrive); Prometheus keeps
  // only the labels that place a reading.
  const std::string selector =
      "ipmi_temperature_celsius{name=~\"Ambient|Inlet Temp|CPU1|CPU1 Temp|CPU2|CPU2 Temp\"}";
  const std::string by = "max by (name, node, kubernetes_node, nodename, instance) ";
  EXPECT_EQ(QueryOf(http.requests()[1]),
            by + "(" + selector + " >= -40 <= 150) or " + by + "(" + selector + ")");
  EXPECT_EQ(QueryOf(http.requests()[0]), by + "(timestamp(" + selector + "))");

  const Temperatures& a = temps->at("a");
  EXPECT_EQ(a.ambient.value, 21.0);
  EXPECT_EQ(a.ambient.observed_at, clock_.Now() - seconds(10));  // from timestamp()
  EXPECT_EQ(a.cpu1.observed_at, clock_.Now() - seconds(100));
  EXPECT_EQ(a.cpu1.source, "Prometheus at http://prom:9090 sensor \"CPU1\"");
  EXPECT_EQ(a.cpu2.missing_reason, "the sensor reads NaN (no reading)");
  EXPECT_EQ(a.cpu2.observed_at, clock_.Now());    // no timestamp(): the evaluation time
  EXPECT_EQ(temps->at("b").ambient.value, 23.5);  // mapped by its "node" label
  EXPECT_THAT(temps->at("b").cpu1.missing_reason,
              HasSubstr("no ipmi_temperature_celsius sensor named \"CPU1\" or \"CPU1 Temp\""));
  EXPECT_THAT(temps->at("c").ambient.missing_reason,
              HasSubstr("Prometheus has no ipmi_temperature_celsius series for this node"));
  // One text per fetch, not one per node: b's missing CPU1 and c's missing series name the
  // same place, held once.
  EXPECT_EQ(temps->at("b").cpu1.source, "Prometheus at http://prom:9090");
  EXPECT_EQ(&temps->at("b").cpu1.source.str(), &temps->at("c").ambient.source.str());
  EXPECT_EQ(&temps->at("c").ambient.missing_reason.str(),
            &temps->at("c").cpu2.missing_reason.str());
}

TEST_F(TelemetrySourcesTest, PrometheusCpu) {
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    std::string q = QueryOf(r);
    if (q == DefaultCpuTimestampQuery({})) {
      return Reply(200, Vector({{R"({"instance":"10.0.0.1:9100"})", "1700000070.5"}}));
    }
    EXPECT_EQ(q, DefaultCpuQuery({}));
    return Reply(200, Vector({{R"({"instance":"10.0.0.1:9100"})", "1.25"},
                              {R"({"instance":"node-b:9100"})", "-1"},
                              {R"({"instance":"10.0.0.3:9100"})", "2"},
                              {R"({"instance":"c:9100"})", "2"},
                              {R"({"instance":"10.0.0.200:9100"})", "7"}}));
  });
  PrometheusClient prometheus(http, PrometheusOptions{"http://prom:9090", seconds(5), nullptr});
  auto source = MakePrometheusCpuSource(prometheus, {}, time_);
  EXPECT_EQ(source->Describe(), "Prometheus at http://prom:9090");
  auto cpu = source->Fetch({SourcesNode("a", {"10.0.0.1"}), SourcesNode("node-b", {"10.0.0.2"}),
                            SourcesNode("c", {"10.0.0.3"}), SourcesNode("d", {"10.0.0.4"})});
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->at("a").value, 1.25);
  EXPECT_EQ(cpu->at("a").observed_at, clock_.Now() - milliseconds(29500));
  EXPECT_EQ(cpu->at("node-b").missing_reason, "CPU usage -1 cores is not plausible");
  EXPECT_EQ(cpu->at("node-b").observed_at, clock_.Now());  // no timestamp series: query time
  EXPECT_EQ(cpu->at("c").missing_reason,
            "the CPU query returned 2 series for this node; it must return one per node");
  EXPECT_THAT(cpu->at("d").missing_reason,
              HasSubstr("the CPU query returned no series for this node"));
  EXPECT_EQ(cpu->size(), 4u);
  EXPECT_EQ(cpu->at("a").source, "Prometheus at http://prom:9090");
  EXPECT_EQ(&cpu->at("a").source.str(), &cpu->at("d").source.str());  // shared, not copied
}

TEST_F(TelemetrySourcesTest, PrometheusCpuKeepsTheNodeLabelThroughTheSum) {
  // The default query groups by every label the mapping reads, so a series whose instance is a
  // scrape address no node has still maps by its `node` label.
  EXPECT_THAT(DefaultCpuQuery({}), HasSubstr("by (instance, node, kubernetes_node, nodename)"));
  EXPECT_THAT(DefaultCpuTimestampQuery({}),
              HasSubstr("by (instance, node, kubernetes_node, nodename)"));
  FakeHttp http([](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    if (QueryOf(r) == DefaultCpuTimestampQuery({})) return Reply(200, Vector({}));
    return Reply(200, Vector({{R"({"instance":"10.9.9.9:9100","node":"a"})", "3"}}));
  });
  PrometheusClient prometheus(http, PrometheusOptions{"http://prom:9090", seconds(5), nullptr});
  auto cpu =
      MakePrometheusCpuSource(prometheus, {}, time_)->Fetch({SourcesNode("a", {"10.0.0.1"})});
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->at("a").value, 3);
}

TEST_F(TelemetrySourcesTest, PrometheusCpuQueryFromTheConfigIsSentAsIs) {
  std::vector<std::string> queries;
  FakeHttp http([&queries](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    queries.push_back(QueryOf(r));
    return Reply(200, Vector({{R"({"node":"a"})", "1.5"}}));
  });
  config::TelemetrySettings settings;
  settings.cpu_source = "prometheus";
  settings.temperature_source = "prometheus";
  settings.prometheus_url = "http://prom:9090";
  settings.prometheus_cpu_query = "sum by (node) (my_cpu_cores)";
  auto sources = MakeTelemetrySources(settings, SourceDependencies{&http, nullptr, time_, nullptr});
  ASSERT_TRUE(sources.ok()) << sources.error().message;
  auto cpu = sources->cpu->Fetch({SourcesNode("a", {})});
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->at("a").value, 1.5);
  // Only the user's query: its grouping is unknown, so no timestamp query is derived from it.
  EXPECT_EQ(queries, std::vector<std::string>{"sum by (node) (my_cpu_cores)"});
}

TEST_F(TelemetrySourcesTest, PrometheusDownFailsTheWholeSource) {
  FakeHttp http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return MakeError(ErrorCode::kNetwork, "cannot connect to http://prom:9090: Connection refused");
  });
  PrometheusClient prometheus(http, PrometheusOptions{"http://prom:9090", seconds(5), nullptr});
  auto cpu = MakePrometheusCpuSource(prometheus, {}, time_)->Fetch({SourcesNode("a", {})});
  ASSERT_FALSE(cpu.ok());
  EXPECT_THAT(cpu.error().message, HasSubstr("Connection refused"));
  EXPECT_FALSE(
      MakePrometheusTemperatureSource(prometheus, {}, time_)->Fetch({SourcesNode("a", {})}).ok());
}

TEST_F(TelemetrySourcesTest, MetricsApiCpu) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  auto* fake = transport.get();
  kube::Client kube(std::move(transport), kube::ClientOptions{});
  MetricsApiClient metrics(kube);
  auto item = [](const std::string& name, const std::string& cpu) {
    return nlohmann::json{{"metadata", {{"name", name}}},
                          {"timestamp", "2023-11-14T22:14:30Z"},  // 1700000070
                          {"window", "20s"},
                          {"usage", {{"cpu", cpu}, {"memory", "1Gi"}}}};
  };
  fake->responses.push_back(kube::fake::ApiReply(
      200, {{"items", {item("a", "1500m"), item("b", "bogus"), item("x", "1")}}}));
  auto source = MakeMetricsApiCpuSource(metrics, time_);
  EXPECT_EQ(source->Describe(), "metrics.k8s.io");
  auto cpu = source->Fetch({SourcesNode("a", {}), SourcesNode("b", {}), SourcesNode("c", {})});
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->size(), 3u);
  EXPECT_EQ(cpu->at("a").value, 1.5);
  EXPECT_EQ(cpu->at("a").observed_at, clock_.Now() - seconds(30));
  EXPECT_EQ(cpu->at("a").source, "metrics.k8s.io");
  EXPECT_THAT(cpu->at("b").missing_reason, HasSubstr("invalid quantity \"bogus\""));
  EXPECT_THAT(cpu->at("c").missing_reason,
              HasSubstr("metrics.k8s.io has no NodeMetrics for this node"));

  fake->responses.push_back(kube::fake::ApiReply(
      404,
      kube::fake::StatusBody(404, "NotFound", "the server could not find the requested resource")));
  EXPECT_FALSE(source->Fetch({SourcesNode("a", {})}).ok());
}

TEST_F(TelemetrySourcesTest, MakeTelemetrySourcesFollowsTheConfig) {
  FakeHttp http(
      [](const HttpClientRequest&) -> Result<HttpClientResponse> { return Reply(500, ""); });
  kube::Client kube(std::make_unique<kube::fake::FakeTransport>(), kube::ClientOptions{});
  SourceDependencies deps{&http, &kube, time_, nullptr};

  config::TelemetrySettings settings;  // defaults: metrics-api + ipmi-exporter
  auto defaults = MakeTelemetrySources(settings, deps);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(defaults->cpu->Describe(), "metrics.k8s.io");
  EXPECT_EQ(defaults->temperature->Describe(),
            "ipmi_exporter on each node's InternalIP, port 9290");
  EXPECT_FALSE(defaults->prometheus);
  EXPECT_EQ(defaults->max_age, seconds(120));
  EXPECT_EQ(defaults->refresh_interval, seconds(15));

  settings.cpu_source = "prometheus";
  settings.temperature_source = "prometheus";
  settings.prometheus_url = "http://prometheus.monitoring.svc:9090";
  auto prom = MakeTelemetrySources(settings, deps);
  ASSERT_TRUE(prom.ok()) << prom.error().message;
  EXPECT_EQ(prom->cpu->Describe(), "Prometheus at http://prometheus.monitoring.svc:9090");
  EXPECT_EQ(prom->temperature->Describe(), "Prometheus at http://prometheus.monitoring.svc:9090");
  EXPECT_FALSE(prom->metrics_api);

  auto error = [&](auto change) {
    config::TelemetrySettings s;
    change(s);
    auto r = MakeTelemetrySources(s, deps);
    return r.ok() ? std::string("(ok)") : r.error().message;
  };
  EXPECT_EQ(error([](auto& s) { s.cpu_source = "kubelet"; }),
            "telemetry.cpuSource \"kubelet\" is not one of metrics-api, prometheus");
  EXPECT_THAT(error([](auto& s) { s.temperature_source = "redfish"; }),
              HasSubstr("telemetry.temperatureSource \"redfish\""));
  EXPECT_THAT(error([](auto& s) { s.ipmi_exporter_port = 0; }),
              HasSubstr("telemetry.ipmiExporterPort 0"));
  EXPECT_THAT(error([](auto& s) { s.max_age = "soon"; }),
              HasSubstr("telemetry.maxAge: invalid duration"));
  EXPECT_EQ(error([](auto& s) { s.refresh_interval = "0s"; }),
            "telemetry.refreshInterval must be more than 0");
  EXPECT_THAT(
      error([](auto& s) {
        s.cpu_source = "prometheus";
        s.prometheus_url = "prometheus:9090";
      }),
      HasSubstr("telemetry.prometheusUrl \"prometheus:9090\" must be an http:// or https:// URL"));
}

}  // namespace
}  // namespace powerctl::telemetry
