#include "core/setup/component_probes.h"

#include "core/common/encoding.h"
#include "core/common/json_fields.h"
#include "core/common/yaml.h"
#include "core/kube/resources.h"
#include "core/telemetry/exposition.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctime>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// Probes answer from memory; a process that takes longer is as good as down for a check.
constexpr std::chrono::milliseconds kProbeTimeout{3000};

// "https://HOST:PORT/path" -> "HOST" ("[::1]" keeps its brackets); "" when there is none.
std::string UrlHost(const std::string& url) {
  std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  std::string authority = url.substr(scheme + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    return close == std::string::npos ? "" : authority.substr(0, close + 1);
  }
  return authority.substr(0, authority.find(':'));
}

// A listener bound to every interface is reached on loopback from the same machine.
std::string Reachable(const std::string& host) {
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::" || host == "[::]") return "[::1]";
  return host;
}

bool ParseTime(const std::string& text, std::chrono::system_clock::time_point& out) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return false;
  // Years 1900-2200 only: system_clock's 64-bit nanoseconds overflow past 2262.
  if (tm.tm_year < 0 || tm.tm_year > 300) return false;
  out = std::chrono::system_clock::from_time_t(::timegm(&tm));
  return true;
}

std::string FirstLine(const std::string& body) {
  std::string line = body.substr(0, body.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

Result<HttpClientResponse> Get(HttpClient& http, const std::string& url) {
  HttpClientRequest request;
  request.url = url;
  request.timeout = kProbeTimeout;
  return http.Do(request);
}

}  // namespace

int OpsPort(const json& pod, int fallback) {
  for (const json& c : pod.value("spec", json::object()).value("containers", json::array())) {
    for (const json& p : c.value("ports", json::array())) {
      if (p.value("name", "") == "ops" && p.value("containerPort", 0) > 0)
        return p.value("containerPort", 0);
    }
  }
  return fallback;
}

Result<std::string> NormalizeOpsUrl(const std::string& url) {
  auto bad = [&url](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("extender URL \"{}\": {}", url, why));
  };
  if (url.rfind("http://", 0) != 0) {
    return bad(
        "want the extender's ops port as http://HOST:PORT (plain HTTP, its --ops-listen), e.g. "
        "http://127.0.0.1:8080");
  }
  std::string out = url;
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (out.find('/', 7) != std::string::npos) return bad("give no path: /readyz is added");
  if (UrlHost(out).empty()) return bad("no host");
  return out;
}

Result<ProcessTargets> ProcessTargetsFromSchedulerConfig(std::string_view yaml_text,
                                                         std::string_view source,
                                                         const config::PowerctlConfig& config) {
  POWERCTL_TRY(docs, ParseYamlDocuments(yaml_text, source));
  auto bad = [&source](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("{}: {}", source, why));
  };
  if (docs.size() != 1 || !docs[0].is_object() ||
      docs[0].value("kind", "") != "KubeSchedulerConfiguration") {
    return bad(
        "not a KubeSchedulerConfiguration (want the scheduler-config.yaml `powerctl generate "
        "scheduler --out-of-cluster` wrote)");
  }
  const json doc = json::parse(docs[0].dump());
  ProcessTargets targets;
  targets.scheduler_config = std::string(source);
  std::string url_prefix;
  for (const json& e : doc.value("extenders", json::array())) {
    if (e.is_object() && e.value("urlPrefix", "") != "") {
      url_prefix = e.value("urlPrefix", "");
      break;
    }
  }
  if (url_prefix.empty()) return bad("no extender with a urlPrefix");
  std::string host = UrlHost(url_prefix);
  if (host.empty()) return bad(fmt::format("extender urlPrefix \"{}\" names no host", url_prefix));
  targets.extender_ops_url = fmt::format("http://{}:{}", Reachable(host), config.extender.ops_port);
  targets.lease_namespace = StringField(doc, {"leaderElection", "resourceNamespace"});
  targets.lease_name = StringField(doc, {"leaderElection", "resourceName"});
  // Kubernetes 1.20 to 1.22 only: later versions serve /healthz on the secure port alone.
  std::string healthz = StringField(doc, {"healthzBindAddress"});
  if (!healthz.empty()) {
    std::size_t colon = healthz.rfind(':');
    std::string bind_host = colon == std::string::npos ? "" : healthz.substr(0, colon);
    std::string port = colon == std::string::npos ? "" : healthz.substr(colon + 1);
    if (!port.empty() && port != "0") {
      targets.scheduler_healthz_url =
          fmt::format("http://{}:{}/healthz", Reachable(bind_host), port);
    }
  }
  return targets;
}

DeploymentProbe ProbeDeployment(kube::Client& client, const std::string& ns,
                                const std::string& name) {
  DeploymentProbe probe;
  probe.namespace_ = ns;
  probe.name = name;
  auto progress = InspectRollout(client, {ns, name});
  if (!progress.ok()) {
    if (progress.error().code != ErrorCode::kNotFound) probe.error = progress.error().message;
    return probe;
  }
  probe.found = true;
  probe.progress = *progress;
  auto object =
      client.Get(kube::CollectionPath(*kube::FindResourceType("Deployment"), ns) + "/" + name);
  if (object.ok()) {
    const json& containers = object->value("spec", json::object())
                                 .value("template", json::object())
                                 .value("spec", json::object())
                                 .value("containers", json::array());
    if (containers.is_array() && !containers.empty() && containers[0].is_object())
      probe.image = containers[0].value("image", "");
  }
  return probe;
}

LeaseProbe ProbeLease(kube::Client& client, const std::string& ns, const std::string& name,
                      std::chrono::system_clock::time_point now) {
  LeaseProbe probe;
  probe.namespace_ = ns;
  probe.name = name;
  auto lease = client.Get(kube::CollectionPath(*kube::FindResourceType("Lease"), ns) + "/" + name);
  if (!lease.ok()) {
    if (lease.error().code != ErrorCode::kNotFound) probe.error = lease.error().message;
    return probe;
  }
  probe.found = true;
  const json& spec = lease->value("spec", json::object());
  probe.holder = spec.value("holderIdentity", "");
  int duration = spec.value("leaseDurationSeconds", 15);
  std::chrono::system_clock::time_point renewed;
  if (ParseTime(spec.value("renewTime", ""), renewed)) {
    probe.renewed_ago = std::chrono::duration_cast<std::chrono::seconds>(now - renewed);
    probe.fresh = now - renewed <= std::chrono::seconds(2 * duration + 5);
  }
  return probe;
}

ExtenderProbe ProbeExtender(HttpClient& http, const std::string& ops_url) {
  ExtenderProbe probe;
  probe.url = ops_url;
  auto health = Get(http, ops_url + "/healthz");
  if (!health.ok()) {
    probe.error = health.error().message;
    return probe;
  }
  probe.reachable = true;
  probe.live = health->status == 200;
  auto ready = Get(http, ops_url + "/readyz");
  if (!ready.ok()) {
    probe.error = ready.error().message;
    return probe;
  }
  // Untrusted: whatever answers on that port. Anything but the extender's document is "not
  // ready", with what it said.
  json doc = json::parse(ready->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("ready")) {
    probe.error = fmt::format("/readyz answered {} {}: not the extender's readiness document",
                              ready->status, FirstLine(ready->body));
    return probe;
  }
  probe.ready = ready->status == 200 && doc.value("ready", false);
  for (const json& d : doc.value("degraded", json::array())) {
    if (d.is_object())
      probe.degraded.push_back({StringField(d, {"name"}), StringField(d, {"reason"})});
  }
  // Telemetry ages are refreshed as /metrics renders; a missing or odd page only loses them.
  auto metrics = Get(http, ops_url + "/metrics");
  if (!metrics.ok() || metrics->status != 200) return probe;
  auto exposition = telemetry::ParseExposition(metrics->body);
  if (!exposition.ok()) return probe;
  for (const auto* build : telemetry::FindSamples(*exposition, "powerctl_build_info")) {
    if (auto version = build->labels.find("version"); version != build->labels.end()) {
      probe.version = ExcerptForMessage(version->second, 64);  // whatever answers the port
    }
  }
  for (const auto* failing :
       telemetry::FindSamples(*exposition, "powerctl_telemetry_refresh_failing")) {
    auto source = failing->labels.find("source");
    if (source == failing->labels.end()) continue;
    TelemetrySourceProbe t;
    t.source = source->second;
    t.failing = failing->value != 0;
    auto ages = telemetry::FindSamples(*exposition, "powerctl_telemetry_snapshot_age_seconds",
                                       {{"source", t.source}});
    if (!ages.empty()) t.age_seconds = ages.front()->value;
    probe.telemetry.push_back(std::move(t));
  }
  return probe;
}

ExtenderProbe ProbeExtenderService(kube::Client& client, const std::string& ns,
                                   const std::string& service) {
  ExtenderProbe probe;
  probe.url = fmt::format("service {}/{}", ns, service);
  auto ready = client.GetProxied(
      fmt::format("/api/v1/namespaces/{}/services/http:{}:ops/proxy/readyz", ns, service),
      kProbeTimeout);
  if (!ready.ok()) {
    probe.error = ready.error().message;
    return probe;
  }
  probe.reachable = probe.live = true;
  probe.ready = ready->is_object() && ready->value("ready", false);
  if (const json* list = FindField(*ready, {"degraded"}); list != nullptr && list->is_array()) {
    for (const json& d : *list) {
      if (d.is_object())
        probe.degraded.push_back({StringField(d, {"name"}), StringField(d, {"reason"})});
    }
  }
  return probe;
}

HealthProbe ProbeHealth(HttpClient& http, const std::string& url) {
  HealthProbe probe;
  probe.url = url;
  auto answer = Get(http, url);
  if (!answer.ok()) {
    probe.detail = answer.error().message;
    return probe;
  }
  probe.reachable = true;
  probe.healthy = answer->status == 200;
  probe.detail = fmt::format("{} {}", answer->status, FirstLine(answer->body));
  return probe;
}

}  // namespace powerctl::setup
