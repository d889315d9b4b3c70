#pragma once
// doctor's "extender-tls" check: does kube-scheduler get through the extender's TLS? With
// extender.ignorable: true a failed handshake is no error anywhere kube-scheduler reports: it
// just schedules without power scores. The extender counts its failed handshakes by reason
// (powerctl_tls_handshake_errors_total); this check reads each running extender pod's
// /metrics through the API server's pod proxy and, when the count is not zero, reads it again
// a few seconds later to see whether failures are still happening.

#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace powerctl::setup {

inline constexpr char kExtenderTlsCheckId[] = "extender-tls";

struct ExtenderTlsCheckOptions {
  std::chrono::milliseconds sample_interval{5000};       // between the two reads of /metrics
  std::function<void(std::chrono::milliseconds)> sleep;  // null: std::this_thread::sleep_for
};

// SKIP when extender.tlsMode is insecure or no extender pod runs (extender-ready tells why).
// FAIL when failures that mean mismatched certificates (the scheduler refused the extender's,
// or the extender refused the scheduler's) rose between the two reads, or when there are such
// failures and kube-scheduler never got a request through; WARN when other failures rose or a
// pod's metrics cannot be read; PASS otherwise, naming failures seen since start.
CheckResult CheckExtenderTls(kube::Client& client, const config::PowerctlConfig& config,
                             const ExtenderTlsCheckOptions& options = {});

// powerctl_tls_handshake_errors_total by reason, and the scheduler port's answered requests,
// from an extender's /metrics text. kInvalidInput when the text does not parse.
struct ExtenderTlsCounts {
  std::map<std::string, double> handshake_errors;  // reason -> count
  double scheduler_requests = 0;
};
Result<ExtenderTlsCounts> ParseExtenderTlsCounts(std::string_view metrics_text);

// /api/v1/namespaces/NS/pods/POD:PORT/proxy/metrics
std::string ExtenderMetricsPath(const std::string& ns, const std::string& pod, int port);

}  // namespace powerctl::setup
