#pragma once
// Failed TLS handshakes on the scheduler port, made visible. With extender.ignorable: true,
// kube-scheduler schedules without the extender when it cannot reach it, so certificates that
// do not match (Secrets from two different `generate` runs, a scheduler that kept an old CA)
// switch power scoring off without an error anywhere. Each failure gets a reason from a fixed
// set (the `reason` label of powerctl_tls_handshake_errors_total) and a warning is logged at
// most once per interval, counting the failures since the last one.

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace powerctl::extender {

// The reasons, as metric label values.
inline constexpr std::string_view kTlsPeerRejectedCertificate = "peer_rejected_certificate";
inline constexpr std::string_view kTlsClientCertificateRejected = "client_certificate_rejected";
inline constexpr std::string_view kTlsNoClientCertificate = "no_client_certificate";
inline constexpr std::string_view kTlsProtocol = "protocol";
inline constexpr std::string_view kTlsTimeout = "timeout";
inline constexpr std::string_view kTlsClosed = "closed";
inline constexpr std::string_view kTlsOther = "other";

// OpenSSL's / Asio's text for a failed handshake -> one of the reasons above:
//   peer_rejected_certificate    the client refused this server's certificate (an alert such
//                                as "tlsv1 alert unknown ca", "sslv3 alert bad certificate")
//   client_certificate_rejected  this server refused the client's ("certificate verify failed")
//   no_client_certificate        mTLS, and the client sent none
//   protocol                     TLS below 1.2, no shared cipher, plain HTTP to the TLS port
//   timeout, closed, other
std::string_view ClassifyTlsFailure(std::string_view message);

// True for the reasons that mean the two sides' certificates do not fit together.
bool IsCertificateMismatch(std::string_view reason);

// One rate-limited warning, for more than the log (a Kubernetes Event on the extender's pod).
struct TlsWarning {
  std::string remote;       // the peer's address
  std::string reason;       // one of the reasons above
  std::string message;      // OpenSSL's words, cut short, and what to do
  std::uint64_t count = 0;  // failures since the previous warning, this one included
};

class TlsFailureLog {
 public:
  using Clock = std::chrono::steady_clock;
  // `on_warning` (may be null) runs on the reporting I/O thread with each warning: it must
  // only queue.
  explicit TlsFailureLog(std::shared_ptr<spdlog::logger> log,
                         std::chrono::seconds interval = std::chrono::seconds(60),
                         std::function<void(const TlsWarning&)> on_warning = nullptr);

  // Logs at trace always, and a warning when none was logged within the interval. Returns the
  // reason. Thread-safe: every I/O thread reports here.
  std::string_view Record(const std::string& remote, const std::string& message,
                          Clock::time_point now = Clock::now());

 private:
  std::shared_ptr<spdlog::logger> log_;
  std::chrono::seconds interval_;
  std::function<void(const TlsWarning&)> on_warning_;
  std::mutex mutex_;
  bool warned_ = false;
  Clock::time_point last_warning_{};
  std::uint64_t since_warning_ = 0;  // failures since the last warning, this one included
};

}  // namespace powerctl::extender
