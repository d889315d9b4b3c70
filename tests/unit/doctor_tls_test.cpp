#include "core/setup/doctor_tls.h"

#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace powerctl::setup {
namespace {

using kube::fake::DeploymentObject;
using kube::fake::FakeApiServer;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kPod[] = "powerctl-extender-7d4b9c8f6-x2x9q";

std::string Metrics(const std::string& errors, int scheduler_requests = 10) {
  return "# TYPE powerctl_tls_handshake_errors_total counter\n" + errors +
         "# TYPE powerctl_http_requests_total counter\n"
         "powerctl_http_requests_total{server=\"scheduler\",method=\"POST\","
         "path=\"/scheduler/filter\",code=\"200\"} " +
         std::to_string(scheduler_requests) +
         "\n"
         "powerctl_http_requests_total{server=\"ops\",method=\"GET\",path=\"/readyz\","
         "code=\"200\"} 50\n";
}

class DoctorTlsTest : public ::testing::Test {
 protected:
  DoctorTlsTest() : client_(server_.MakeClient()) {
    server_.Put(DeploymentObject("powerctl", "powerctl-extender", "extender", 1));
    path_ = ExtenderMetricsPath("powerctl", kPod, config_.extender.ops_port);
    // The second read sees `later_` (when set): what the extender counted meanwhile.
    options_.sleep = [this](std::chrono::milliseconds d) {
      slept_ = d;
      if (!later_.empty()) server_.SetRawResponse(path_, 200, later_);
    };
  }

  CheckResult Run(const std::string& now, const std::string& later = "") {
    server_.SetRawResponse(path_, 200, now);
    later_ = later;
    return CheckExtenderTls(*client_, config_, options_);
  }

  std::size_t MetricsReads() const {
    std::size_t n = 0;
    for (const auto& r : server_.requests()) n += r.method == "GET" && r.path == path_;
    return n;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  config::PowerctlConfig config_;
  ExtenderTlsCheckOptions options_;
  std::string path_, later_;
  std::optional<std::chrono::milliseconds> slept_;
};

TEST_F(DoctorTlsTest, NoFailedHandshakesPassesWithOneRead) {
  CheckResult r = Run(Metrics(""));
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.message;
  EXPECT_EQ(r.message, "no failed TLS handshakes on 1 extender pod");
  EXPECT_EQ(MetricsReads(), 1u);
  EXPECT_FALSE(slept_);
}

TEST_F(DoctorTlsTest, RisingCertificateMismatchFailsWithTheFix) {
  config_.extender.ignorable = true;
  CheckResult r =
      Run(Metrics("powerctl_tls_handshake_errors_total{reason=\"peer_rejected_certificate\"} 4\n"),
          Metrics("powerctl_tls_handshake_errors_total{reason=\"peer_rejected_certificate\"} 7\n"));
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.message, AllOf(HasSubstr("reject each other's certificates (ignorable: true, so "
                                         "pods are scheduled without power scores)"),
                               HasSubstr("pod " + std::string(kPod) +
                                         ": 3 failed TLS handshakes in 5s (3 "
                                         "peer_rejected_certificate)")));
  EXPECT_THAT(r.fix, AllOf(HasSubstr("powerctl-extender-tls, powerctl-scheduler-tls"),
                           HasSubstr("--cert-dir"),
                           HasSubstr("kubectl -n powerctl rollout restart "
                                     "deployment/powerctl-scheduler")));
  EXPECT_EQ(slept_, std::chrono::milliseconds(5000));
  EXPECT_EQ(MetricsReads(), 2u);
}

TEST_F(DoctorTlsTest, PastMismatchNoLongerRisingPasses) {
  const std::string m =
      Metrics("powerctl_tls_handshake_errors_total{reason=\"client_certificate_rejected\"} 2\n");
  CheckResult r = Run(m, m);
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.message;
  EXPECT_THAT(r.message, HasSubstr("2 failed since it started, none in the last 5s"));
}

TEST_F(DoctorTlsTest, MismatchAndNoSchedulerRequestEverFails) {
  const std::string m =
      Metrics("powerctl_tls_handshake_errors_total{reason=\"client_certificate_rejected\"} 2\n", 0);
  CheckResult r = Run(m, m);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.message, HasSubstr("no scheduler request has got through"));
}

TEST_F(DoctorTlsTest, OtherRisingFailuresWarn) {
  CheckResult r = Run(Metrics("powerctl_tls_handshake_errors_total{reason=\"protocol\"} 1\n"),
                      Metrics("powerctl_tls_handshake_errors_total{reason=\"protocol\"} 9\n"));
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_THAT(r.message, HasSubstr("8 failed TLS handshakes in 5s (8 protocol)"));
  EXPECT_THAT(r.fix, HasSubstr("logs deployment/powerctl-extender"));
}

TEST_F(DoctorTlsTest, UnreadableMetricsWarn) {
  server_.FailRequests(path_, 503);
  CheckResult r = CheckExtenderTls(*client_, config_, options_);
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_THAT(r.message, HasSubstr("metrics not readable: " + std::string(kPod)));
  EXPECT_THAT(r.fix, HasSubstr("pods/proxy"));
}

TEST_F(DoctorTlsTest, SkippedWithoutTlsOrWithoutAnExtender) {
  config_.extender.tls_mode = "insecure";
  EXPECT_EQ(CheckExtenderTls(*client_, config_, options_).status, CheckStatus::kSkip);
  config_.extender.tls_mode = "mtls";
  server_.Remove("/apis/apps/v1/namespaces/powerctl/deployments/powerctl-extender");
  CheckResult r = CheckExtenderTls(*client_, config_, options_);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_THAT(r.message, HasSubstr("extender-ready"));
}

TEST(ExtenderTlsCountsTest, ReadsReasonsAndAnOlderUnlabelledCounter) {
  auto counts = ParseExtenderTlsCounts(
      "powerctl_tls_handshake_errors_total 3\n"
      "powerctl_http_requests_total{server=\"scheduler\",code=\"200\"} 4\n"
      "powerctl_http_requests_total{server=\"scheduler\",code=\"400\"} 1\n");
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  EXPECT_EQ(counts->handshake_errors.at("unknown"), 3);
  EXPECT_EQ(counts->scheduler_requests, 5);
  EXPECT_FALSE(ParseExtenderTlsCounts("not { metrics").ok());
}

}  // namespace
}  // namespace powerctl::setup
