#include "core/extender/tls_failure_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <vector>

namespace powerctl::extender {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The texts OpenSSL 3 and Asio give for the failures kube-scheduler and scanners cause.
TEST(TlsFailureLogTest, ClassifiesHandshakeFailures) {
  EXPECT_EQ(ClassifyTlsFailure("tlsv1 alert unknown ca (SSL routines)"),
            kTlsPeerRejectedCertificate);
  EXPECT_EQ(ClassifyTlsFailure("sslv3 alert bad certificate (SSL routines)"),
            kTlsPeerRejectedCertificate);
  EXPECT_EQ(ClassifyTlsFailure("certificate verify failed (SSL routines)"),
            kTlsClientCertificateRejected);
  EXPECT_EQ(ClassifyTlsFailure("peer did not return a certificate (SSL routines)"),
            kTlsNoClientCertificate);
  EXPECT_EQ(ClassifyTlsFailure("unsupported protocol (SSL routines)"), kTlsProtocol);
  EXPECT_EQ(ClassifyTlsFailure("wrong version number (SSL routines)"), kTlsProtocol);
  EXPECT_EQ(ClassifyTlsFailure("http request (SSL routines)"), kTlsProtocol);
  EXPECT_EQ(ClassifyTlsFailure("The socket was closed due to a timeout"), kTlsTimeout);
  EXPECT_EQ(ClassifyTlsFailure("stream truncated (SSL routines)"), kTlsClosed);
  EXPECT_EQ(ClassifyTlsFailure("End of file"), kTlsClosed);
  EXPECT_EQ(ClassifyTlsFailure("something new"), kTlsOther);
  EXPECT_TRUE(IsCertificateMismatch(kTlsPeerRejectedCertificate));
  EXPECT_TRUE(IsCertificateMismatch(kTlsClientCertificateRejected));
  EXPECT_FALSE(IsCertificateMismatch(kTlsProtocol));
}

class TlsFailureLogWarnings : public ::testing::Test {
 protected:
  TlsFailureLogWarnings()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(captured_)),
        logger_(std::make_shared<spdlog::logger>("tls-test", sink_)) {
    logger_->set_level(spdlog::level::warn);
    logger_->set_pattern("%l %v");
  }
  std::ostringstream captured_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

TEST_F(TlsFailureLogWarnings, WarnsAtOnceThenAtMostOncePerIntervalWithTheCount) {
  TlsFailureLog log(logger_, 60s);
  const auto t0 = TlsFailureLog::Clock::time_point{} + 1000s;
  EXPECT_EQ(log.Record("10.0.0.5:41234", "tlsv1 alert unknown ca (SSL routines)", t0),
            kTlsPeerRejectedCertificate);
  EXPECT_THAT(captured_.str(),
              AllOf(HasSubstr("warning TLS handshake with 10.0.0.5:41234 failed on the scheduler "
                              "port (peer_rejected_certificate): tlsv1 alert unknown ca"),
                    HasSubstr("ignorable: true"), HasSubstr("restart the scheduler")));
  captured_.str("");
  for (int i = 1; i <= 5; ++i) log.Record("10.0.0.5:41234", "tlsv1 alert unknown ca", t0 + i * 1s);
  EXPECT_EQ(captured_.str(), "");  // within the minute: counted, not logged
  log.Record("10.0.0.6:5000", "certificate verify failed", t0 + 61s);
  EXPECT_THAT(captured_.str(), HasSubstr("6 TLS handshakes failed on the scheduler port since the "
                                         "last such warning; the latest with 10.0.0.6:5000 "
                                         "(client_certificate_rejected)"));
}

TEST_F(TlsFailureLogWarnings, EachWarningAndOnlyThoseReachTheCallback) {
  std::vector<TlsWarning> warnings;
  TlsFailureLog log(nullptr, 60s, [&](const TlsWarning& w) { warnings.push_back(w); });
  const auto t0 = TlsFailureLog::Clock::time_point{} + 1000s;
  log.Record("10.0.0.5:1", "tlsv1 alert unknown ca", t0);
  for (int i = 1; i <= 3; ++i) log.Record("10.0.0.5:1", "tlsv1 alert unknown ca", t0 + i * 1s);
  log.Record("10.0.0.6:2", "certificate verify failed", t0 + 61s);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].count, 1u);
  EXPECT_EQ(warnings[0].reason, kTlsPeerRejectedCertificate);
  EXPECT_THAT(warnings[0].message,
              AllOf(HasSubstr("unknown ca"), HasSubstr("restart the scheduler")));
  EXPECT_EQ(warnings[1].count, 4u);
  EXPECT_EQ(warnings[1].remote, "10.0.0.6:2");
}

TEST_F(TlsFailureLogWarnings, OtherReasonsWarnWithoutTheSchedulerHint) {
  TlsFailureLog log(logger_, 60s);
  log.Record("10.0.0.9:1", "unsupported protocol", TlsFailureLog::Clock::time_point{});
  EXPECT_THAT(captured_.str(),
              AllOf(HasSubstr("(protocol): unsupported protocol"), Not(HasSubstr("ignorable"))));
}

}  // namespace
}  // namespace powerctl::extender
