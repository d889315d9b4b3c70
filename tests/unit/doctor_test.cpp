#include "core/setup/doctor.h"

#include "core/setup/doctor_lb.h"
#include "core/setup/doctor_tls.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace powerctl::setup {

// For gtest's messages: PASS, WARN, FAIL, SKIP.
void PrintTo(CheckStatus status, std::ostream* os) {
  *os << CheckStatusName(status);
}

namespace {

using json = nlohmann::json;
using kube::fake::DeploymentObject;
using kube::fake::FakeApiServer;
using kube::fake::LeaseObject;
using kube::fake::NodeMetricsObject;
using kube::fake::NodeObject;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kLeasePath[] =
    "/apis/coordination.k8s.io/v1/namespaces/powerctl/leases/powerctl-scheduler";
constexpr char kDoctorExtenderPath[] =
    "/apis/apps/v1/namespaces/powerctl/deployments/powerctl-extender";
// 2024-05-01T12:00:00Z, the doctor's `now`.
const std::chrono::system_clock::time_point kDoctorNow =
    std::chrono::system_clock::from_time_t(1714564800);

json AllRanges() {
  return {{"ambient/min", "18"}, {"ambient/max", "35"}, {"cpu1/min", "30"},
          {"cpu1/max", "90"},    {"cpu2/min", "30"},    {"cpu2/max", "90"}};
}

class DoctorTest : public ::testing::Test {
 protected:
  // A healthy install: both Deployments available, the lease renewed 5s ago, every node
  // labelled, metrics.k8s.io serving.
  DoctorTest() : client_(server_.MakeClient()) {
    server_.Put(
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "powerctl"}}}});
    // A line maintained on kDoctorNow, and its own kube-scheduler.
    server_.SetVersion("v1.29.4", "1", "29");
    json scheduler = DeploymentObject("powerctl", "powerctl-scheduler", "scheduler");
    scheduler["spec"]["template"]["spec"]["containers"][0]["image"] =
        "registry.k8s.io/kube-scheduler:v1.29.4";
    server_.Put(scheduler);
    server_.Put(DeploymentObject("powerctl", "powerctl-extender", "extender", 2));
    server_.Put(LeaseObject("powerctl", "powerctl-scheduler", "powerctl-scheduler-5f7b_0c1d",
                            "2024-05-01T11:59:55.123456Z"));
    for (const char* node : {"n1", "n2"}) {
      server_.Put(NodeObject(node, AllRanges()));
      server_.PutAt(std::string("/apis/metrics.k8s.io/v1beta1/nodes/") + node,
                    NodeMetricsObject(node));
    }
    // The extender's /metrics: no failed TLS handshake.
    server_.SetRawResponse(
        ExtenderMetricsPath("powerctl", "powerctl-extender-7d4b9c8f6-x2x9q", 8080), 200,
        "powerctl_tls_handshake_errors_total{reason=\"protocol\"} 0\n");
    input_.client = client_.get();
    input_.server = "https://10.0.0.1:6443";
    input_.now = kDoctorNow;
  }

  DoctorReport Run() { return RunDoctor(input_); }

  static const CheckResult& Check(const DoctorReport& report, const std::string& id) {
    for (const CheckResult& c : report.checks) {
      if (c.id == id) return c;
    }
    static const CheckResult missing{"(missing)", "", CheckStatus::kSkip, "no such check", ""};
    ADD_FAILURE() << "no check " << id;
    return missing;
  }

  static std::vector<std::string> Ids(const DoctorReport& report) {
    std::vector<std::string> ids;
    for (const CheckResult& c : report.checks) ids.push_back(c.id);
    return ids;
  }

  void SetLabels(const std::string& node, json labels) {
    json object = server_.Object("/api/v1/nodes/" + node);
    object["metadata"]["labels"] = std::move(labels);
    server_.PutExactly(object);
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  DoctorInput input_;
};

TEST_F(DoctorTest, WithoutAConnectionTheApiFailsAndEverythingElseIsSkipped) {
  input_.client = nullptr;
  input_.connection_error = "no kubeconfig: ~/.kube/config does not exist";
  DoctorReport report = Run();

  EXPECT_THAT(Ids(report), ElementsAreArray(DoctorCheckIds()));
  EXPECT_EQ(report.checks[0].status, CheckStatus::kFail);
  EXPECT_EQ(report.checks[0].message, "no kubeconfig: ~/.kube/config does not exist");
  EXPECT_FALSE(report.checks[0].fix.empty());
  for (std::size_t i = 1; i < report.checks.size(); ++i) {
    EXPECT_EQ(report.checks[i].status, CheckStatus::kSkip) << report.checks[i].id;
    EXPECT_THAT(report.checks[i].message, HasSubstr("not reachable")) << report.checks[i].id;
  }
  EXPECT_TRUE(report.failed());
  EXPECT_THAT(server_.requests(), IsEmpty());
}

TEST_F(DoctorTest, AnApiThatAnswersVersionWithAnErrorFailsAndSkipsTheRest) {
  server_.FailRequests("/version", 401);
  DoctorReport report = Run();

  EXPECT_EQ(report.checks[0].status, CheckStatus::kFail);
  EXPECT_THAT(report.checks[0].message, HasSubstr("unauthorized"));
  for (std::size_t i = 1; i < report.checks.size(); ++i) {
    EXPECT_EQ(report.checks[i].status, CheckStatus::kSkip) << report.checks[i].id;
  }
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(report.failed());
}

TEST_F(DoctorTest, AHealthyClusterPassesEveryCheckAndSkipsTheModelAndTheOptionalLbAgent) {
  DoctorReport report = Run();

  EXPECT_THAT(Ids(report), ElementsAreArray(DoctorCheckIds()));
  for (const CheckResult& c : report.checks) {
    if (c.id == "model-ready") {
      EXPECT_EQ(c.status, CheckStatus::kSkip) << c.message;
      EXPECT_THAT(c.message, HasSubstr("builtin"));
    } else if (c.id == "model-accuracy") {
      EXPECT_EQ(c.status, CheckStatus::kSkip) << c.message;
      EXPECT_THAT(c.message, HasSubstr("telemetry.modelAccuracy is off"));
    } else if (c.id == "power-source") {
      EXPECT_EQ(c.status, CheckStatus::kSkip) << c.message;
      EXPECT_EQ(c.message, "telemetry.powerSource is ipmi: no exporter generation to tell");
    } else if (c.id == "gpu-power") {
      EXPECT_EQ(c.status, CheckStatus::kSkip) << c.message;
      EXPECT_EQ(c.message, "telemetry.gpuPowerSource is none: GPU power is not read");
    } else if (c.id == "lb-agent") {
      EXPECT_EQ(c.status, CheckStatus::kSkip) << c.message;
      EXPECT_EQ(c.message,
                "no DaemonSet powerctl/powerctl-lb-agent: the lb-agent is optional (powerctl "
                "apply lb)");
    } else {
      EXPECT_EQ(c.status, CheckStatus::kPass) << c.id << ": " << c.message;
      EXPECT_EQ(c.fix, "") << c.id;
    }
  }
  EXPECT_FALSE(report.failed());
  EXPECT_EQ(Check(report, "api-reachable").message, "Kubernetes v1.29.4 at https://10.0.0.1:6443");
  EXPECT_EQ(Check(report, "kube-version").message,
            "1.29, maintained until 2025-02-28; kube-scheduler v1.29.4 is within the skew policy");
  EXPECT_EQ(Check(report, "scheduler-lease").message, "held by powerctl-scheduler-5f7b_0c1d");
  EXPECT_EQ(Check(report, "extender-ready").message,
            "deployment powerctl/powerctl-extender: 2/2 available");
  EXPECT_EQ(Check(report, "node-labels").message, "2 nodes labelled");
  EXPECT_EQ(Check(report, "telemetry").message, "metrics.k8s.io reports 2 nodes");
  // Doctor only reads.
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(DoctorTest, AStaleLeaseFailsWithAFix) {
  server_.Put(LeaseObject("powerctl", "powerctl-scheduler", "powerctl-scheduler-5f7b_0c1d",
                          "2024-05-01T11:50:00.000000Z"));
  DoctorReport report = Run();

  const CheckResult& lease = Check(report, "scheduler-lease");
  EXPECT_EQ(lease.status, CheckStatus::kFail);
  EXPECT_EQ(lease.message, "powerctl-scheduler-5f7b_0c1d stopped renewing the lease");
  EXPECT_EQ(lease.fix, "kubectl -n powerctl logs deployment/powerctl-scheduler");
  EXPECT_TRUE(report.failed());
}

TEST_F(DoctorTest, ALeaseRenewedWithinTwiceItsDurationIsFresh) {
  // 15s leases: 2 x 15 + 5 = 35s of slack.
  server_.Put(LeaseObject("powerctl", "powerctl-scheduler", "s", "2024-05-01T11:59:25Z"));
  EXPECT_EQ(Check(Run(), "scheduler-lease").status, CheckStatus::kPass);
  server_.Put(LeaseObject("powerctl", "powerctl-scheduler", "s", "2024-05-01T11:59:24Z"));
  EXPECT_EQ(Check(Run(), "scheduler-lease").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, ALeaseNobodyHoldsFails) {
  json lease = server_.Object(kLeasePath);
  lease["spec"].erase("holderIdentity");
  server_.PutExactly(lease);
  const CheckResult lease_check = Check(Run(), "scheduler-lease");

  EXPECT_EQ(lease_check.status, CheckStatus::kFail);
  EXPECT_EQ(lease_check.message, "nobody holds the lease");
}

TEST_F(DoctorTest, AMissingLeaseFailsSayingNoSchedulerStarted) {
  server_.Remove(kLeasePath);
  const CheckResult lease = Check(Run(), "scheduler-lease");

  EXPECT_EQ(lease.status, CheckStatus::kFail);
  EXPECT_THAT(lease.message, HasSubstr("does not exist"));
}

TEST_F(DoctorTest, TheLeaseIsSkippedWithoutLeaderElection) {
  input_.config.scheduler.leader_elect = false;
  server_.Remove(kLeasePath);
  DoctorReport report = Run();

  EXPECT_EQ(Check(report, "scheduler-lease").status, CheckStatus::kSkip);
  EXPECT_FALSE(report.failed());
}

TEST_F(DoctorTest, AnInvalidNodeLabelRangeFails) {
  json labels = AllRanges();
  labels["ambient/min"] = "40";
  labels["ambient/max"] = "20";
  SetLabels("n2", labels);
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "node-labels");
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_THAT(check.message, HasSubstr("n2: ambient/min=40 ambient/max=20"));
  EXPECT_THAT(check.fix, HasSubstr("powerctl label nodes"));
  EXPECT_TRUE(report.failed());
}

TEST_F(DoctorTest, ANonNumericNodeLabelFails) {
  json labels = AllRanges();
  labels["cpu2/max"] = "hot";
  SetLabels("n1", labels);
  EXPECT_EQ(Check(Run(), "node-labels").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, HalfARangeFails) {
  json labels = AllRanges();
  labels.erase("cpu1/max");
  SetLabels("n1", labels);
  const CheckResult check = Check(Run(), "node-labels");

  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_THAT(check.message, HasSubstr("n1: cpu1/min without cpu1/max"));
}

TEST_F(DoctorTest, AHexadecimalNodeLabelFails) {
  json labels = AllRanges();
  labels["ambient/min"] = "0x12";
  labels["ambient/max"] = "0x23";
  SetLabels("n1", labels);
  EXPECT_EQ(Check(Run(), "node-labels").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, AnUnlabelledNodeWarns) {
  server_.Put(NodeObject("n3"));
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "node-labels");
  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_THAT(check.message, HasSubstr("1 of 3 nodes have no temperature-range labels"));
  EXPECT_FALSE(check.fix.empty());
  EXPECT_FALSE(report.failed());
}

TEST_F(DoctorTest, AMissingDeploymentFailsWithTheApplyToRun) {
  server_.Remove(kDoctorExtenderPath);
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "extender-ready");
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_EQ(check.message, "deployment powerctl/powerctl-extender does not exist");
  // Apply it, or point doctor at the process that runs it.
  EXPECT_EQ(check.fix,
            "powerctl apply extender --wait; or, when the extender runs as a process, powerctl "
            "doctor --extender-url http://HOST:OPS_PORT");
  EXPECT_TRUE(report.failed());

  server_.Remove("/apis/apps/v1/namespaces/powerctl/deployments/powerctl-scheduler");
  EXPECT_EQ(Check(Run(), "scheduler-ready").fix,
            "powerctl apply scheduler --wait; or, when kube-scheduler runs as a process, powerctl "
            "doctor --scheduler-config FILE");
}

TEST_F(DoctorTest, AnUnavailableDeploymentFailsWithTheReason) {
  server_.SetDeploymentsAvailable(false);
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "scheduler-ready");
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_THAT(check.message, HasSubstr("0/1 available"));
  EXPECT_THAT(check.message, HasSubstr(FakeApiServer::kDefaultUnschedulable));
  EXPECT_EQ(check.fix, "kubectl -n powerctl describe deployment powerctl-scheduler");
}

TEST_F(DoctorTest, TheModelServerIsCheckedWhenThePredictorNeedsIt) {
  input_.config.predictor.backend = "tfserving-grpc";
  EXPECT_EQ(Check(Run(), "model-ready").status, CheckStatus::kFail);

  server_.Put(DeploymentObject("powerctl", "powerctl-model", "model"));
  EXPECT_EQ(Check(Run(), "model-ready").status, CheckStatus::kPass);
}

TEST_F(DoctorTest, MetricsApiNotServedFailsTelemetry) {
  server_.SetServeMetrics(false);
  const CheckResult check = Check(Run(), "telemetry");

  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_EQ(check.message, "metrics.k8s.io is not served");
  EXPECT_THAT(check.fix, HasSubstr("metrics-server"));
}

TEST_F(DoctorTest, MetricsApiWithoutNodesWarns) {
  server_.Remove("/apis/metrics.k8s.io/v1beta1/nodes/n1");
  server_.Remove("/apis/metrics.k8s.io/v1beta1/nodes/n2");
  EXPECT_EQ(Check(Run(), "telemetry").status, CheckStatus::kWarn);
}

TEST_F(DoctorTest, TelemetryFromPrometheusIsSkipped) {
  input_.config.telemetry.cpu_source = "prometheus";
  server_.SetServeMetrics(false);
  EXPECT_EQ(Check(Run(), "telemetry").status, CheckStatus::kSkip);
}

TEST_F(DoctorTest, AMissingPermissionWarnsAndNamesIt) {
  server_.Deny("patch", "secrets", "powerctl");
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "permissions");
  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_THAT(check.message, HasSubstr("patch secrets in namespace powerctl"));
  EXPECT_FALSE(check.fix.empty());
  EXPECT_FALSE(report.failed());  // a warning is not a failure
}

// ---- lb-agent ---------------------------------------------------------------------------------

// The /status an agent on `node` answers: two Services balanced, unless changed.
json AgentStatus(const std::string& node) {
  return json::parse(R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus",
    "node":")" + node +
                     R"(","mode":"nftables","synced":true,"lastSync":"2026-11-25T15:00:00Z",
    "lastError":"","services":[
      {"namespace":"shop","name":"web","state":"balanced","reason":"",
       "ports":[{"port":80,"protocol":"TCP","endpoints":[
         {"address":"10.1.0.1","port":8080,"node":"n1","weight":100,"basis":"predicted"}]}]},
      {"namespace":"shop","name":"api","state":"balanced","reason":"","ports":[]}]})");
}

class DoctorLbAgentTest : public DoctorTest {
 protected:
  // The DaemonSet after both nodes exist, so it runs a pod on each; each answers AgentStatus.
  DoctorLbAgentTest() {
    server_.Put(AgentDaemonSet());
    for (const char* node : {"n1", "n2"}) SetStatus(node, AgentStatus(node));
  }

  static json AgentDaemonSet() {
    json labels = {{"app.kubernetes.io/name", "powerctl"},
                   {"app.kubernetes.io/component", "lb-agent"}};
    return {{"apiVersion", "apps/v1"},
            {"kind", "DaemonSet"},
            {"metadata", {{"name", "powerctl-lb-agent"}, {"namespace", "powerctl"}}},
            {"spec",
             {{"selector", {{"matchLabels", labels}}},
              {"template", {{"metadata", {{"labels", labels}}}}}}}};
  }

  // The fake names the DaemonSet's pods powerctl-lb-agent-<node>; lb.opsPort is 9447.
  static std::string StatusPath(const std::string& node) {
    return "/api/v1/namespaces/powerctl/pods/powerctl-lb-agent-" + node + ":9447/proxy/status";
  }
  void SetStatus(const std::string& node, const json& status) {
    server_.SetRawResponse(StatusPath(node), 200, status.dump());
  }
};

TEST(DoctorLbAgentPathTest, StatusGoesThroughThePodProxyToTheOpsPort) {
  EXPECT_EQ(LbAgentStatusPath("power", "powerctl-lb-agent-abcde", 9447),
            "/api/v1/namespaces/power/pods/powerctl-lb-agent-abcde:9447/proxy/status");
}

TEST_F(DoctorLbAgentTest, EveryAgentSyncedPassesCountingNodesAndDistinctServices) {
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "lb-agent");
  EXPECT_EQ(check.status, CheckStatus::kPass) << check.message;
  EXPECT_EQ(check.message, "2 nodes balancing 2 Services");
  EXPECT_EQ(check.fix, "");
  EXPECT_EQ(server_.RequestsTo("GET", StatusPath("n1")).size(), 1u);
  EXPECT_EQ(server_.RequestsTo("GET", StatusPath("n2")).size(), 1u);
  EXPECT_THAT(server_.MutatingRequests(), IsEmpty());
}

TEST_F(DoctorLbAgentTest, TheOpsPortComesFromTheConfigWhenThePodDeclaresNone) {
  input_.config.lb.ops_port = 9999;
  Run();
  EXPECT_EQ(server_.RequestsTo("GET", StatusPath("n1")).size(), 0u);
  EXPECT_EQ(
      server_
          .RequestsTo("GET",
                      "/api/v1/namespaces/powerctl/pods/powerctl-lb-agent-n1:9999/proxy/status")
          .size(),
      1u);
}

TEST_F(DoctorLbAgentTest, AProgrammingErrorFailsNamingTheNodeAndTheError) {
  json status = AgentStatus("n2");
  status["lastError"] = "Error: Could not process rule: Operation not permitted";
  SetStatus("n2", status);
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "lb-agent");
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_EQ(check.message,
            "1 node balancing 2 Services; node n2: programming failed: kube-proxy carries the "
            "traffic: Error: Could not process rule: Operation not permitted");
  EXPECT_EQ(check.fix, "kubectl -n powerctl logs powerctl-lb-agent-n2");
  EXPECT_TRUE(report.failed());
}

TEST_F(DoctorLbAgentTest, SkippedServicesWarnOnceEachWithTheReason) {
  for (const char* node : {"n1", "n2"}) {
    json status = AgentStatus(node);
    status["services"][1]["state"] = "skipped";
    status["services"][1]["reason"] = "IPv6 ClusterIP: kube-proxy balances it";
    SetStatus(node, status);
  }
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "lb-agent");
  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_EQ(check.message,
            "2 nodes balancing 1 Service; Services skipped, kube-proxy balances them: shop/api "
            "(IPv6 ClusterIP: kube-proxy balances it)");
  EXPECT_EQ(check.fix, "powerctl lb weights api -n shop (what the agent sees of it)");
  EXPECT_FALSE(report.failed());
}

TEST_F(DoctorLbAgentTest, AFailedServiceFailsNamingItsNodes) {
  json status = AgentStatus("n1");
  status["services"][0]["state"] = "failed";
  status["services"][0]["reason"] = "no endpoint address";
  SetStatus("n1", status);
  const CheckResult check = Check(Run(), "lb-agent");

  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_THAT(check.message, HasSubstr("Service shop/web failed: no endpoint address on n1"));
}

TEST_F(DoctorLbAgentTest, AgentsNotReadyFailNamingTheirNodes) {
  server_.SetDeploymentsAvailable(false);
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "lb-agent");
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_EQ(check.message,
            "0 nodes balancing 0 Services; 0/2 agents ready; not ready on n1 (pod "
            "powerctl-lb-agent-n1, Pending); n2 (pod powerctl-lb-agent-n2, Pending)");
  EXPECT_EQ(check.fix, "kubectl -n powerctl describe daemonset powerctl-lb-agent");
  // Pending pods are not asked for their status.
  EXPECT_THAT(server_.RequestsTo("GET", StatusPath("n1")), IsEmpty());
}

TEST_F(DoctorLbAgentTest, AStatusThatCannotBeReadWarnsWithTheApiServersAnswer) {
  server_.SetRawResponse(StatusPath("n1"), 403,
                         R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                         R"("message":"pods \"powerctl-lb-agent-n1\" is forbidden",)"
                         R"("reason":"Forbidden","code":403})");
  DoctorReport report = Run();

  const CheckResult& check = Check(report, "lb-agent");
  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_THAT(check.message, HasSubstr("1 node balancing 2 Services; node n1: /status not "
                                       "readable through the API server: "));
  EXPECT_THAT(check.message, HasSubstr("forbidden"));
  EXPECT_THAT(check.fix, HasSubstr("get pods/proxy"));
}

TEST_F(DoctorLbAgentTest, AStatusOfTheWrongShapeWarnsNamingTheField) {
  json status = AgentStatus("n1");
  status["synced"] = "yes";
  SetStatus("n1", status);
  const CheckResult check = Check(Run(), "lb-agent");

  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_THAT(check.message, HasSubstr("node n1: lb-agent status: synced is not true or false"));
}

TEST_F(DoctorLbAgentTest, AnAgentThatHasNotSyncedYetWarns) {
  json status = AgentStatus("n1");
  status["synced"] = false;
  status["lastSync"] = nullptr;
  status["services"] = json::array();
  SetStatus("n1", status);
  const CheckResult check = Check(Run(), "lb-agent");

  EXPECT_EQ(check.status, CheckStatus::kWarn);
  EXPECT_EQ(check.message, "1 node balancing 2 Services; node n1: no sync finished yet");
}

// kube-scheduler and the extender as processes (out of the cluster): no Deployments exist, and
// each process answers (or not) on its own port.
class DoctorOutOfClusterTest : public DoctorTest {
 protected:
  DoctorOutOfClusterTest()
      : http_([this](const HttpClientRequest& r) -> Result<HttpClientResponse> {
          auto answer = answers_.find(r.url);
          if (answer == answers_.end())
            return MakeError(ErrorCode::kNetwork,
                             "cannot connect to " + r.url + ": Connection refused");
          return answer->second;
        }) {
    server_.Remove("/apis/apps/v1/namespaces/powerctl/deployments/powerctl-scheduler");
    server_.Remove(kDoctorExtenderPath);
    input_.http = &http_;
    input_.process.extender_ops_url = "http://127.0.0.1:8080";
    input_.process.scheduler_healthz_url = "http://127.0.0.1:10251/healthz";
    input_.process.scheduler_config = "out/scheduler-config.yaml";
    ExtenderUp(R"({"ready":true,"degraded":[]})");
    answers_["http://127.0.0.1:10251/healthz"] = telemetry_test::Reply(200, "ok");
  }

  void ExtenderUp(const std::string& readyz, long status = 200) {
    answers_["http://127.0.0.1:8080/healthz"] = telemetry_test::Reply(200, "ok\n");
    answers_["http://127.0.0.1:8080/readyz"] = telemetry_test::Reply(status, readyz + "\n");
    answers_["http://127.0.0.1:8080/metrics"] = telemetry_test::Reply(200, "");
  }
  void ExtenderDown() {
    for (const char* path : {"/healthz", "/readyz", "/metrics"})
      answers_.erase(std::string("http://127.0.0.1:8080") + path);
  }

  std::map<std::string, HttpClientResponse> answers_;
  telemetry_test::FakeHttp http_;
};

TEST_F(DoctorOutOfClusterTest, HealthyProcessesPassWithoutAnyDeployment) {
  DoctorReport report = Run();

  EXPECT_THAT(Ids(report), ElementsAreArray(DoctorCheckIds()));
  const CheckResult& extender = Check(report, "extender-ready");
  EXPECT_EQ(extender.status, CheckStatus::kPass) << extender.message;
  EXPECT_EQ(extender.message, "ready at http://127.0.0.1:8080");
  const CheckResult& scheduler = Check(report, "scheduler-ready");
  EXPECT_EQ(scheduler.status, CheckStatus::kPass) << scheduler.message;
  EXPECT_EQ(scheduler.message, "kube-scheduler answers http://127.0.0.1:10251/healthz: 200 ok");
  EXPECT_EQ(Check(report, "scheduler-lease").status, CheckStatus::kPass);
  EXPECT_FALSE(report.failed());
  for (const CheckResult& c : report.checks)
    EXPECT_THAT(c.message, ::testing::Not(HasSubstr("deployment"))) << c.id;
}

TEST_F(DoctorOutOfClusterTest, ADeadExtenderFailsWithHowToStartIt) {
  ExtenderDown();
  DoctorReport report = Run();

  const CheckResult& extender = Check(report, "extender-ready");
  EXPECT_EQ(extender.status, CheckStatus::kFail);
  EXPECT_EQ(extender.message,
            "no extender answers at http://127.0.0.1:8080: cannot connect to "
            "http://127.0.0.1:8080/healthz: Connection refused");
  EXPECT_EQ(extender.fix,
            "start it: powerctl schedule-server -c powerctl.yaml --ops-listen 127.0.0.1:8080 "
            "with the --listen and TLS flags of docs/setup.md, \"Out of the cluster\"");
  EXPECT_TRUE(report.failed());
}

TEST_F(DoctorOutOfClusterTest, AnExtenderThatIsNotReadyFailsNamingWhy) {
  ExtenderUp(R"({"ready":false,"degraded":[{"name":"cluster","reason":"not synced yet"}]})", 503);
  const CheckResult& extender = Check(Run(), "extender-ready");
  EXPECT_EQ(extender.status, CheckStatus::kFail);
  EXPECT_EQ(extender.message,
            "the extender at http://127.0.0.1:8080 is not ready: cluster: not synced yet");
}

TEST_F(DoctorOutOfClusterTest, ADegradedButReadyExtenderWarns) {
  ExtenderUp(
      R"({"ready":true,"degraded":[{"name":"telemetry/cpu","reason":"prometheus: refused"}]})");
  DoctorReport report = Run();
  const CheckResult& extender = Check(report, "extender-ready");
  EXPECT_EQ(extender.status, CheckStatus::kWarn);
  EXPECT_THAT(extender.message, HasSubstr("telemetry/cpu: prometheus: refused"));
  EXPECT_FALSE(report.failed());
}

TEST_F(DoctorOutOfClusterTest, SomethingElseOnThePortIsNotTheExtender) {
  answers_["http://127.0.0.1:8080/readyz"] = telemetry_test::Reply(404, "404 page not found");
  const CheckResult& extender = Check(Run(), "extender-ready");
  EXPECT_EQ(extender.status, CheckStatus::kFail);
  EXPECT_THAT(extender.message, HasSubstr("not the extender's readiness document"));
}

TEST_F(DoctorOutOfClusterTest, ADeadSchedulerFailsWithHowToStartIt) {
  answers_.erase("http://127.0.0.1:10251/healthz");
  const CheckResult& scheduler = Check(Run(), "scheduler-ready");
  EXPECT_EQ(scheduler.status, CheckStatus::kFail);
  EXPECT_THAT(scheduler.message, HasSubstr("no kube-scheduler answers at "
                                           "http://127.0.0.1:10251/healthz"));
  EXPECT_THAT(scheduler.fix, HasSubstr("kube-scheduler --config out/scheduler-config.yaml"));
}

TEST_F(DoctorOutOfClusterTest, WithoutAHealthEndpointTheLeaseTellsTheSchedulerRuns) {
  input_.process.scheduler_healthz_url.clear();
  EXPECT_EQ(Check(Run(), "scheduler-ready").message,
            "kube-scheduler powerctl-scheduler-5f7b_0c1d renews lease powerctl/powerctl-scheduler "
            "(no health endpoint known)");
  server_.Put(LeaseObject("powerctl", "powerctl-scheduler", "powerctl-scheduler-5f7b_0c1d",
                          "2024-05-01T11:50:00.000000Z"));
  DoctorReport stale = Run();
  EXPECT_EQ(Check(stale, "scheduler-ready").status, CheckStatus::kFail);
  // Out of the cluster there is no Deployment to read logs from.
  EXPECT_THAT(Check(stale, "scheduler-lease").fix, HasSubstr("kube-scheduler --config"));
}

TEST_F(DoctorOutOfClusterTest, TheModelServerIsWhatTheExtenderReaches) {
  input_.config.predictor.backend = "tfserving-grpc";
  ExtenderUp(R"({"ready":true,"degraded":[{"name":"model","reason":"m:8500: unavailable"}]})");
  const CheckResult& model = Check(Run(), "model-ready");
  EXPECT_EQ(model.status, CheckStatus::kFail);
  EXPECT_EQ(model.message, "model: m:8500: unavailable");
  ExtenderUp(R"({"ready":true,"degraded":[]})");
  EXPECT_EQ(Check(Run(), "model-ready").status, CheckStatus::kPass);
}

}  // namespace
}  // namespace powerctl::setup
