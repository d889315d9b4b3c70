#include "core/setup/cluster_facts.h"

#include "core/common/json_fields.h"
#include "core/common/kube_version.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// The labels the common Prometheus installs put on the Service that serves queries:
// kube-prometheus and the prometheus-community chart (recommended labels), older charts.
constexpr const char* kPrometheusSelectors[] = {"app.kubernetes.io/name=prometheus",
                                                "app=prometheus"};

// Services of these names are not the query API (prometheus-operator's headless
// "prometheus-operated" is, but so is the named one, which is preferred when both exist).
bool IsSidecarService(const std::string& name) {
  return name.find("alertmanager") != std::string::npos ||
         name.find("pushgateway") != std::string::npos ||
         name.find("node-exporter") != std::string::npos;
}

}  // namespace

std::optional<std::string> PrometheusUrlFromService(const json& service) {
  const json& meta = service.value("metadata", json::object());
  std::string name = meta.value("name", "");
  std::string ns = meta.value("namespace", "");
  if (name.empty() || ns.empty() || IsSidecarService(name)) return std::nullopt;
  const json& ports = service.value("spec", json::object()).value("ports", json::array());
  if (!ports.is_array()) return std::nullopt;
  std::optional<int> chosen;
  for (const json& port : ports) {
    if (!port.is_object() || !port.contains("port") || !port["port"].is_number_integer()) continue;
    int number = port["port"].get<int>();
    std::string port_name = port.value("name", "");
    // The web port by name or Prometheus's own number wins over any other port.
    if (port_name == "web" || port_name == "http" || port_name == "http-web" || number == 9090) {
      chosen = number;
      break;
    }
    if (!chosen) chosen = number;
  }
  if (!chosen || *chosen < 1 || *chosen > 65535) return std::nullopt;
  return fmt::format("http://{}.{}.svc:{}", name, ns, *chosen);
}

Result<ClusterFacts> DetectClusterFacts(kube::Client& client) {
  ClusterFacts facts;
  POWERCTL_TRY(server, client.Version());
  facts.server_version = server.git_version;
  if (auto version = KubeVersion::Parse(server.git_version); version.ok()) {
    facts.minor_version = version->MinorString();
    facts.notes.push_back(fmt::format("the cluster runs Kubernetes {} ({})", server.git_version,
                                      version->SupportSummary(TodayUtc())));
  } else {
    facts.notes.push_back(
        fmt::format("the cluster runs Kubernetes {}, which powerctl does not "
                    "support: {}",
                    server.git_version, version.error().message));
  }
  facts.metrics_api = client.Get("/apis/metrics.k8s.io/v1beta1").ok();
  facts.notes.push_back(facts.metrics_api ? "metrics.k8s.io is served (metrics-server)"
                                          : "metrics.k8s.io is not served (no metrics-server)");
  for (const char* selector : kPrometheusSelectors) {
    kube::ListOptions options;
    options.label_selector = selector;
    options.limit = 50;  // one page is plenty; the first usable Service is taken
    auto services = client.List("/api/v1/services", options);
    if (!services.ok()) break;  // e.g. forbidden: no Prometheus default, nothing more to say
    for (const json& service : *services) {
      if (auto url = PrometheusUrlFromService(service)) {
        facts.prometheus_url = *url;
        break;
      }
    }
    if (facts.prometheus_url) break;
  }
  if (facts.prometheus_url) facts.notes.push_back("Prometheus at " + *facts.prometheus_url);
  return facts;
}

std::vector<std::string> ApplyClusterFacts(const ClusterFacts& facts,
                                           const std::vector<std::string>& preset,
                                           config::PowerctlConfig& config) {
  auto chosen = [&](std::string_view key) {
    return std::find(preset.begin(), preset.end(), key) != preset.end();
  };
  std::vector<std::string> set;
  if (facts.minor_version && !chosen("kubernetesVersion")) {
    config.kubernetes_version = *facts.minor_version;
    set.push_back("kubernetesVersion=" + config.kubernetes_version);
  }
  if (!facts.metrics_api && facts.prometheus_url && !chosen("telemetry.cpuSource")) {
    config.telemetry.cpu_source = "prometheus";
    set.push_back("telemetry.cpuSource=prometheus");
  }
  if (facts.prometheus_url && !chosen("telemetry.prometheusUrl")) {
    config.telemetry.prometheus_url = *facts.prometheus_url;
    set.push_back("telemetry.prometheusUrl=" + config.telemetry.prometheus_url);
  }
  return set;
}

}  // namespace powerctl::setup
