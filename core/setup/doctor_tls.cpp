#include "core/setup/doctor_tls.h"

#include "core/config/names.h"
#include "core/kube/resources.h"
#include "core/setup/component_probes.h"
#include "core/telemetry/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// A few pods tell whether kube-scheduler gets through; each read is a proxied request.
constexpr std::size_t kMaxPods = 5;
constexpr std::chrono::seconds kMetricsTimeout{10};
// The reasons the extender gives when the two sides' certificates do not fit together (the
// scheduler refused the extender's, or the extender refused the scheduler's). Their names are
// core/extender/tls_failure_log.h's, which setup may not include.
constexpr const char* kMismatchReasons[] = {"peer_rejected_certificate",
                                            "client_certificate_rejected"};

bool IsMismatch(const std::string& reason) {
  for (const char* r : kMismatchReasons) {
    if (reason == r) return true;
  }
  return false;
}

bool Running(const json& pod) {
  return pod.value("status", json::object()).value("phase", "") == "Running";
}

double Sum(const std::map<std::string, double>& counts, bool mismatch) {
  double total = 0;
  for (const auto& [reason, n] : counts) {
    if (IsMismatch(reason) == mismatch) total += n;
  }
  return total;
}

std::string Reasons(const std::map<std::string, double>& counts) {
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counts) {
    if (n > 0) parts.push_back(fmt::format("{} {}", n, reason));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

struct PodReading {
  std::string pod;
  ExtenderTlsCounts first, second;
  std::map<std::string, double> rise;  // reason -> increase between the reads
};

}  // namespace

std::string ExtenderMetricsPath(const std::string& ns, const std::string& pod, int port) {
  return fmt::format("{}/{}:{}/proxy/metrics",
                     kube::CollectionPath(*kube::FindResourceType("Pod"), ns), pod, port);
}

Result<ExtenderTlsCounts> ParseExtenderTlsCounts(std::string_view metrics_text) {
  POWERCTL_TRY(exposition, telemetry::ParseExposition(metrics_text));
  ExtenderTlsCounts counts;
  for (const auto* s : telemetry::FindSamples(exposition, "powerctl_tls_handshake_errors_total")) {
    auto reason = s->labels.find("reason");
    // An extender from before the reason label counts all failures in one sample.
    counts.handshake_errors[reason == s->labels.end() ? "unknown" : reason->second] += s->value;
  }
  for (const auto* s : telemetry::FindSamples(exposition, "powerctl_http_requests_total",
                                              {{"server", "scheduler"}})) {
    counts.scheduler_requests += s->value;
  }
  return counts;
}

CheckResult CheckExtenderTls(kube::Client& client, const config::PowerctlConfig& config,
                             const ExtenderTlsCheckOptions& options) {
  CheckResult r{kExtenderTlsCheckId, "kube-scheduler gets through the extender's TLS",
                CheckStatus::kSkip, "", ""};
  const std::string& ns = config.namespace_;
  const config::ObjectNames names = config::NamesFor(config);
  if (config.extender.tls_mode == "insecure") {
    r.message = "extender.tlsMode is insecure: no TLS between kube-scheduler and the extender";
    return r;
  }
  // The Deployment's own selector: what really picks its pods.
  auto deployment = client.Get(kube::CollectionPath(*kube::FindResourceType("Deployment"), ns) +
                               "/" + names.extender);
  if (!deployment.ok()) {
    r.message = deployment.error().code == ErrorCode::kNotFound
                    ? "no extender Deployment (see extender-ready)"
                    : "reading the extender Deployment: " + deployment.error().message;
    return r;
  }
  kube::ListOptions list;
  const json match_labels = deployment->value("spec", json::object())
                                .value("selector", json::object())
                                .value("matchLabels", json::object());
  for (const auto& [k, v] : match_labels.items()) {
    if (v.is_string())
      list.label_selector +=
          (list.label_selector.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  }
  auto pods = client.List(kube::CollectionPath(*kube::FindResourceType("Pod"), ns), list);
  if (!pods.ok()) {
    r.status = CheckStatus::kWarn;
    r.message = "listing the extender's pods: " + pods.error().message;
    r.fix = fmt::format("kubectl -n {} get pods -l {}", ns, list.label_selector);
    return r;
  }
  std::vector<const json*> running;
  for (const json& pod : *pods) {
    if (Running(pod) && running.size() < kMaxPods) running.push_back(&pod);
  }
  if (running.empty()) {
    r.message = "no extender pod is running (see extender-ready)";
    return r;
  }

  std::vector<std::string> unreadable;
  std::vector<PodReading> readings;
  auto read = [&](const json& pod) -> Result<ExtenderTlsCounts> {
    const std::string name = pod["metadata"].value("name", "");
    auto text = client.GetProxiedText(
        ExtenderMetricsPath(ns, name, OpsPort(pod, config.extender.ops_port)), kMetricsTimeout);
    if (!text.ok()) return text.error();
    return ParseExtenderTlsCounts(*text);
  };
  bool any_errors = false;
  for (const json* pod : running) {
    const std::string name = (*pod)["metadata"].value("name", "");
    auto counts = read(*pod);
    if (!counts.ok()) {
      unreadable.push_back(fmt::format("{}: {}", name, counts.error().message));
      continue;
    }
    any_errors = any_errors ||
                 Sum(counts->handshake_errors, true) + Sum(counts->handshake_errors, false) > 0;
    readings.push_back({name, *counts, *counts, {}});
  }
  // Only failures need a second look: are they still happening?
  if (any_errors) {
    if (options.sleep) {
      options.sleep(options.sample_interval);
    } else {
      std::this_thread::sleep_for(options.sample_interval);
    }
    for (PodReading& reading : readings) {
      auto pod = std::find_if(running.begin(), running.end(), [&](const json* p) {
        return (*p)["metadata"].value("name", "") == reading.pod;
      });
      auto counts = read(**pod);
      if (!counts.ok()) {
        unreadable.push_back(fmt::format("{}: {}", reading.pod, counts.error().message));
        continue;
      }
      reading.second = *counts;
      for (const auto& [reason, n] : counts->handshake_errors) {
        auto before = reading.first.handshake_errors.find(reason);
        const double rise =
            n - (before == reading.first.handshake_errors.end() ? 0 : before->second);
        if (rise > 0) reading.rise[reason] = rise;
      }
    }
  }

  const std::string seconds = fmt::format("{}s", options.sample_interval.count() / 1000.0);
  std::vector<std::string> failures, warnings, notes;
  for (const PodReading& p : readings) {
    const auto& errors = p.second.handshake_errors;
    if (Sum(p.rise, true) > 0) {
      failures.push_back(fmt::format("pod {}: {} failed TLS handshakes in {} ({})", p.pod,
                                     Sum(p.rise, true) + Sum(p.rise, false), seconds,
                                     Reasons(p.rise)));
    } else if (Sum(errors, true) > 0 && p.second.scheduler_requests == 0) {
      failures.push_back(
          fmt::format("pod {}: no scheduler request has got through since it started, and {} TLS "
                      "handshakes failed ({})",
                      p.pod, Sum(errors, true) + Sum(errors, false), Reasons(errors)));
    } else if (Sum(p.rise, false) > 0) {
      warnings.push_back(fmt::format("pod {}: {} failed TLS handshakes in {} ({})", p.pod,
                                     Sum(p.rise, false), seconds, Reasons(p.rise)));
    } else if (Sum(errors, true) + Sum(errors, false) > 0) {
      notes.push_back(fmt::format("pod {}: {} failed since it started, none in the last {}", p.pod,
                                  Sum(errors, true) + Sum(errors, false), seconds));
    }
  }
  for (const std::string& u : unreadable) warnings.push_back("metrics not readable: " + u);

  const std::string restart =
      fmt::format("kubectl -n {} rollout restart deployment/{}", ns, config.scheduler.name);
  if (!failures.empty()) {
    r.status = CheckStatus::kFail;
    r.message = fmt::format(
        "kube-scheduler and the extender reject each other's certificates{}: {}",
        config.extender.ignorable ? " (ignorable: true, so pods are scheduled without power scores)"
                                  : "",
        fmt::join(failures, "; "));
    r.fix = fmt::format(
        "apply both TLS Secrets ({}, {}) from one run: powerctl apply secrets --rotate-certs, or "
        "powerctl generate secrets --cert-dir DIR | kubectl apply -f - with the same DIR as "
        "before; then {}",
        names.extender_tls_secret, names.scheduler_tls_secret, restart);
  } else if (!warnings.empty()) {
    r.status = CheckStatus::kWarn;
    r.message = fmt::format("{}", fmt::join(warnings, "; "));
    r.fix = unreadable.empty()
                ? fmt::format("kubectl -n {} logs deployment/{} (the warnings name each peer)", ns,
                              names.extender)
                : "doctor needs get pods/proxy, and the API server must reach the pod's ops port";
  } else {
    r.status = CheckStatus::kPass;
    r.message = notes.empty() ? fmt::format("no failed TLS handshakes on {} extender pod{}",
                                            readings.size(), readings.size() == 1 ? "" : "s")
                              : fmt::format("{}", fmt::join(notes, "; "));
  }
  return r;
}

}  // namespace powerctl::setup
