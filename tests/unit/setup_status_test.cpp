#include "core/setup/status.h"
#include "tests/unit/fake_api_server.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using kube::fake::DeploymentObject;
using kube::fake::FakeApiServer;
using kube::fake::LeaseObject;
using telemetry_test::Reply;
using ::testing::HasSubstr;

const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::from_time_t(1714564800);  // 2024-05-01T12:00:00Z

class StatusTest : public ::testing::Test {
 protected:
  StatusTest()
      : client_(server_.MakeClient()),
        http_([this](const HttpClientRequest& r) -> Result<HttpClientResponse> {
          auto answer = answers_.find(r.url);
          if (answer == answers_.end())
            return MakeError(ErrorCode::kNetwork, "cannot connect to " + r.url);
          return answer->second;
        }) {
    server_.Put(
        LeaseObject("powerctl", "powerctl-scheduler", "sched-1", "2024-05-01T11:59:55.000000Z"));
    input_.client = client_.get();
    input_.server = "https://10.0.0.1:6443";
    input_.now = kNow;
  }

  // Both as processes, both healthy, telemetry 3s old.
  void OutOfCluster() {
    input_.http = &http_;
    input_.process.extender_ops_url = "http://127.0.0.1:8080";
    input_.process.scheduler_healthz_url = "http://127.0.0.1:10251/healthz";
    answers_["http://127.0.0.1:10251/healthz"] = Reply(200, "ok");
    answers_["http://127.0.0.1:8080/healthz"] = Reply(200, "ok\n");
    answers_["http://127.0.0.1:8080/readyz"] = Reply(200, R"({"ready":true,"degraded":[]})");
    answers_["http://127.0.0.1:8080/metrics"] =
        Reply(200,
              "powerctl_build_info{version=\"0.9.2\",commit=\"abc\"} 1\n"
              "powerctl_telemetry_refresh_failing{source=\"cpu\"} 0\n"
              "powerctl_telemetry_snapshot_age_seconds{source=\"cpu\"} 3\n");
  }

  const ComponentStatus& Component(const StatusReport& r, const std::string& name) {
    for (const ComponentStatus& c : r.components) {
      if (c.name == name) return c;
    }
    ADD_FAILURE() << "no component " << name;
    static const ComponentStatus missing;
    return missing;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  std::map<std::string, HttpClientResponse> answers_;
  telemetry_test::FakeHttp http_;
  DoctorInput input_;
};

TEST_F(StatusTest, InTheClusterTheInstalledVersionIsTheExtendersImageTag) {
  json extender = DeploymentObject("powerctl", "powerctl-extender", "extender");
  extender["spec"]["template"]["spec"]["containers"][0]["image"] =
      "registry.example.com:5000/powerctl:0.4.1";
  server_.Put(extender);
  server_.Put(DeploymentObject("powerctl", "powerctl-scheduler", "scheduler"));
  StatusReport r = CollectStatus(input_);

  EXPECT_EQ(r.mode, "in-cluster");
  EXPECT_FALSE(r.client_version.empty());
  EXPECT_EQ(r.installed_version, "0.4.1");
  EXPECT_EQ(r.installed_image, "registry.example.com:5000/powerctl:0.4.1");
  EXPECT_EQ(r.api, "Kubernetes v1.20.2 at https://10.0.0.1:6443");
  EXPECT_TRUE(Component(r, "scheduler").ready);
  EXPECT_EQ(Component(r, "extender").where, "deployment powerctl/powerctl-extender");
  EXPECT_TRUE(Component(r, "extender").ready);
  EXPECT_FALSE(Component(r, "model").checked);  // the builtin model has no server
  EXPECT_TRUE(r.AllReady());
  // The line is doctor's kube-version verdict: 1.20 has ended, the image "x" names no version.
  EXPECT_FALSE(r.kubernetes_line_ok);
  EXPECT_EQ(r.kubernetes_line,
            "1.20, end of life since 2022-02-28; the scheduler's image x names no Kubernetes "
            "version");
}

TEST_F(StatusTest, TheLineOfAMaintainedClusterWithItsOwnSchedulerIsOk) {
  server_.SetVersion("v1.36.2", "1", "36");
  json scheduler = DeploymentObject("powerctl", "powerctl-scheduler", "scheduler");
  scheduler["spec"]["template"]["spec"]["containers"][0]["image"] =
      "registry.k8s.io/kube-scheduler:v1.35.9";
  server_.Put(scheduler);
  input_.now = std::chrono::sys_days{std::chrono::year_month_day{
      std::chrono::year{2026}, std::chrono::month{12}, std::chrono::day{2}}};
  StatusReport r = CollectStatus(input_);
  EXPECT_TRUE(r.kubernetes_line_ok) << r.kubernetes_line;
  EXPECT_EQ(r.kubernetes_line,
            "1.36, maintained until 2027-06-28; kube-scheduler v1.35.9 is within the skew policy");
}

TEST_F(StatusTest, InTheClusterTheExtendersDegradedDependenciesComeThroughItsService) {
  server_.Put(DeploymentObject("powerctl", "powerctl-extender", "extender"));
  server_.Put(DeploymentObject("powerctl", "powerctl-scheduler", "scheduler"));
  server_.SetRawResponse(
      "/api/v1/namespaces/powerctl/services/http:powerctl-extender:ops/proxy/readyz", 200,
      R"({"ready":true,"degraded":[{"name":"model","reason":"m:8500: down"}]})");
  StatusReport r = CollectStatus(input_);
  EXPECT_EQ(r.degraded, std::vector<std::string>{"model: m:8500: down"});
  EXPECT_FALSE(r.telemetry_known);  // ages are on /metrics, which the proxy read does not parse
}

TEST_F(StatusTest, AnAvailableSchedulerThatHoldsNoLeaseIsNotReady) {
  server_.Put(DeploymentObject("powerctl", "powerctl-extender", "extender"));
  server_.Put(DeploymentObject("powerctl", "powerctl-scheduler", "scheduler"));
  server_.Remove("/apis/coordination.k8s.io/v1/namespaces/powerctl/leases/powerctl-scheduler");
  StatusReport r = CollectStatus(input_);
  EXPECT_FALSE(Component(r, "scheduler").ready);
  EXPECT_THAT(Component(r, "scheduler").detail, HasSubstr("lease"));
  EXPECT_FALSE(r.AllReady());
}

TEST_F(StatusTest, OutOfTheClusterHealthyProcessesAreReadyWithTelemetryAges) {
  OutOfCluster();
  StatusReport r = CollectStatus(input_);

  EXPECT_EQ(r.mode, "out-of-cluster");
  EXPECT_EQ(r.installed_version, "0.9.2");  // the extender's powerctl_build_info
  EXPECT_EQ(Component(r, "extender").where, "process http://127.0.0.1:8080");
  EXPECT_EQ(Component(r, "scheduler").where, "process http://127.0.0.1:10251/healthz");
  EXPECT_TRUE(r.AllReady()) << r.NotReady();
  ASSERT_TRUE(r.telemetry_known);
  ASSERT_EQ(r.telemetry.size(), 1u);
  EXPECT_EQ(r.telemetry[0].source, "cpu");
  EXPECT_EQ(r.telemetry[0].age_seconds, 3.0);
}

TEST_F(StatusTest, ADegradedExtenderIsReadyAndListsWhatIsDegradedOnce) {
  OutOfCluster();
  answers_["http://127.0.0.1:8080/readyz"] =
      Reply(200, R"({"ready":true,"degraded":[{"name":"telemetry/cpu","reason":"refused"}]})");
  StatusReport r = CollectStatus(input_);
  EXPECT_TRUE(Component(r, "extender").ready);
  EXPECT_EQ(Component(r, "extender").detail,
            "ready at http://127.0.0.1:8080, 1 degraded (neutral power scores there)");
  EXPECT_EQ(r.degraded, std::vector<std::string>{"telemetry/cpu: refused"});
  EXPECT_TRUE(r.AllReady());
}

TEST_F(StatusTest, ADeadExtenderIsNotReadyWithDoctorsVerdictAndFix) {
  OutOfCluster();
  answers_.erase("http://127.0.0.1:8080/healthz");
  StatusReport r = CollectStatus(input_);
  DoctorReport doctor = RunDoctor(input_);

  const ComponentStatus& extender = Component(r, "extender");
  EXPECT_FALSE(extender.ready);
  for (const CheckResult& c : doctor.checks) {
    if (c.id != "extender-ready") continue;
    EXPECT_EQ(extender.detail, c.message);
    EXPECT_EQ(extender.fix, c.fix);
  }
  EXPECT_THAT(extender.fix, HasSubstr("powerctl schedule-server"));
  EXPECT_FALSE(r.telemetry_known);
  EXPECT_FALSE(r.AllReady());
  EXPECT_THAT(r.NotReady(), HasSubstr("extender (no extender answers at"));
}

TEST_F(StatusTest, AnUnreachableApiIsNotReady) {
  input_.client = nullptr;
  input_.connection_error = "no kubeconfig";
  StatusReport r = CollectStatus(input_);
  EXPECT_FALSE(r.api_reachable);
  EXPECT_FALSE(r.AllReady());
  EXPECT_THAT(r.NotReady(), HasSubstr("no kubeconfig"));
}

TEST_F(StatusTest, WaitReturnsOnceEverythingIsReady) {
  OutOfCluster();
  answers_.erase("http://127.0.0.1:8080/healthz");
  telemetry_test::ManualClock manual;
  Clock clock = manual.AsClock();
  int looks = 0;
  StatusReport last;
  Status waited = WaitForStatus(input_, std::chrono::seconds(30), clock, last,
                                [this, &looks](const StatusReport&) {
                                  // The extender comes up after the second look.
                                  if (++looks == 2)
                                    answers_["http://127.0.0.1:8080/healthz"] = Reply(200, "ok\n");
                                });
  EXPECT_TRUE(waited.ok()) << waited.error().message;
  EXPECT_EQ(looks, 3);
  EXPECT_TRUE(last.AllReady());
}

TEST_F(StatusTest, WaitTimesOutAsACheckFailureNamingWhatIsNotReady) {
  OutOfCluster();
  answers_.erase("http://127.0.0.1:8080/healthz");
  telemetry_test::ManualClock manual;
  StatusReport last;
  Status waited = WaitForStatus(input_, std::chrono::seconds(5), manual.AsClock(), last);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().code, ErrorCode::kCheckFailed);
  EXPECT_THAT(waited.error().message, HasSubstr("timed out after 5s waiting for: extender ("));
  EXPECT_FALSE(last.AllReady());
}

}  // namespace
}  // namespace powerctl::setup
