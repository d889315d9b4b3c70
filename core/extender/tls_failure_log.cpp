#include "core/extender/tls_failure_log.h"

#include "core/common/encoding.h"

#include <algorithm>
#include <cctype>

namespace powerctl::extender {
namespace {

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::string_view ClassifyTlsFailure(std::string_view message) {
  const std::string m = AsciiLower(message);
  if (Has(m, "alert") && (Has(m, "certificate") || Has(m, "unknown ca")))
    return kTlsPeerRejectedCertificate;
  if (Has(m, "peer did not return a certificate")) return kTlsNoClientCertificate;
  if (Has(m, "certificate verify failed") || Has(m, "certificate")) {
    return kTlsClientCertificateRejected;
  }
  if (Has(m, "version") || Has(m, "protocol") || Has(m, "cipher") || Has(m, "http request"))
    return kTlsProtocol;
  if (Has(m, "timed out") || Has(m, "timeout") || Has(m, "canceled") || Has(m, "cancelled"))
    return kTlsTimeout;
  if (Has(m, "truncated") || Has(m, "end of file") || Has(m, "eof") || Has(m, "reset") ||
      Has(m, "broken pipe"))
    return kTlsClosed;
  return kTlsOther;
}

bool IsCertificateMismatch(std::string_view reason) {
  return reason == kTlsPeerRejectedCertificate || reason == kTlsClientCertificateRejected;
}

TlsFailureLog::TlsFailureLog(std::shared_ptr<spdlog::logger> log, std::chrono::seconds interval,
                             std::function<void(const TlsWarning&)> on_warning)
    : log_(std::move(log)), interval_(interval), on_warning_(std::move(on_warning)) {}

std::string_view TlsFailureLog::Record(const std::string& remote, const std::string& message,
                                       Clock::time_point now) {
  const std::string_view reason = ClassifyTlsFailure(message);
  if (!log_ && !on_warning_) return reason;
  // The peer's address and OpenSSL's reason text only: never bytes the peer sent.
  const std::string what = ExcerptForMessage(message, 200);
  if (log_) log_->trace("TLS handshake with {} failed: {}", remote, what);
  std::uint64_t count = 0;
  {
    std::lock_guard lock(mutex_);
    ++since_warning_;
    if (warned_ && now - last_warning_ < interval_) return reason;
    warned_ = true;
    last_warning_ = now;
    count = since_warning_;
    since_warning_ = 0;
  }
  const std::string hint =
      IsCertificateMismatch(reason)
          ? ". If this is kube-scheduler, the two TLS Secrets do not fit together and, with "
            "extender.ignorable: true, pods are scheduled without power scores: apply both "
            "Secrets from one `powerctl generate` (or the same --cert-dir) and restart the "
            "scheduler (`powerctl doctor` checks this)"
          : "";
  if (log_ && count <= 1) {
    log_->warn("TLS handshake with {} failed on the scheduler port ({}): {}{}", remote, reason,
               what, hint);
  } else if (log_) {
    log_->warn(
        "{} TLS handshakes failed on the scheduler port since the last such warning; the latest "
        "with {} ({}): {}{}",
        count, remote, reason, what, hint);
  }
  if (on_warning_) on_warning_(TlsWarning{remote, std::string(reason), what + hint, count});
  return reason;
}

}  // namespace powerctl::extender
