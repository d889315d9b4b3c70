#include "core/setup/doctor_consolidate.h"

#include "core/consolidate/marked_nodes.h"
#include "core/consolidate/node_marks.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"

#include <fmt/format.h>

#include <memory>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// The nodes' measured watts, one instant query for all, as the model-accuracy check reads
// them; nodes without a reading (switched off: nothing left to scrape) are left out.
Result<std::map<std::string, double>> MeasuredWatts(HttpClient& http,
                                                    const config::PowerctlConfig& config,
                                                    const std::vector<json>& nodes) {
  POWERCTL_TRY(reading, telemetry::PowerReadingFromSettings(config.telemetry));
  telemetry::PrometheusClient prometheus(
      http, telemetry::PrometheusOptions{config.telemetry.prometheus_url, std::chrono::seconds(5),
                                         nullptr});
  std::vector<telemetry::NodeInfo> infos;
  for (const json& node : nodes) infos.push_back(telemetry::NodeInfoFromJson(node));
  POWERCTL_TRY(measured,
               telemetry::FetchMeasuredPower(prometheus, infos, reading.spec, reading.window));
  std::map<std::string, double> watts;
  for (const auto& [name, power] : measured)
    if (power.watts) watts[name] = *power.watts;
  return watts;
}

}  // namespace

CheckResult CheckDrainedNodes(kube::Client& client, std::chrono::system_clock::time_point now,
                              const config::PowerctlConfig& config, HttpClient* http) {
  CheckResult r{kDrainedNodesCheckId, "Nodes drained by consolidate are still empty and off",
                CheckStatus::kPass, "", ""};
  consolidate::MeasureNodePower measure;
  std::unique_ptr<HttpClient> owned;
  std::string unmeasured;  // why measured power could not be read
  if (config.telemetry.model_accuracy) {
    if (http == nullptr) {
      owned = MakeCurlHttpClient();
      http = owned.get();
    }
    measure = [&](const std::vector<json>& drained) -> std::map<std::string, double> {
      auto watts = MeasuredWatts(*http, config, drained);
      if (watts.ok()) return std::move(watts).value();
      unmeasured = watts.error().message;
      return {};
    };
  }
  auto nodes = consolidate::InspectMarkedNodes(client, now, measure);
  if (!nodes.ok()) {
    r.status = CheckStatus::kWarn;
    r.message = "cannot read the drained nodes: " + nodes.error().message;
    r.fix = "grant list on nodes and pods (powerctl apply consolidate has the ClusterRole)";
    return r;
  }
  if (nodes->empty()) {
    r.message = "no node is drained";
    return r;
  }
  int drained = 0, draining = 0;
  double saved = 0;
  std::vector<std::string> drifted;
  bool stuck = false;
  for (const consolidate::MarkedNode& n : *nodes) {
    if (n.mark.state == consolidate::kPowerStateDraining) {
      ++draining;
      stuck = stuck || !n.drift.empty();
    } else {
      ++drained;
      saved += n.mark.expected_watts_saved;
    }
    if (!n.drift.empty())
      drifted.push_back(fmt::format("{}: {}", n.name, fmt::join(n.drift, "; ")));
  }
  r.message = fmt::format("{} drained (about {:.0f} W saved once switched off)", drained, saved);
  if (draining > 0) r.message += fmt::format(", {} draining", draining);
  if (!unmeasured.empty()) {
    r.message +=
        fmt::format(" (measured power not read, the kubelet's heartbeat judges: {})", unmeasured);
  }
  if (drifted.empty()) return r;
  r.status = CheckStatus::kWarn;
  r.message += fmt::format("; {} drifted: {}", drifted.size(), fmt::join(drifted, " | "));
  r.fix = stuck ? "rerun powerctl consolidate apply (it finishes draining nodes first), or take a "
                  "node back with powerctl consolidate undo NODE"
                : "take a node back with powerctl consolidate undo NODE, or drain it again with "
                  "powerctl consolidate apply; a node still on needs its --on-drained hook (or "
                  "cluster-autoscaler) to switch it off";
  return r;
}

}  // namespace powerctl::setup
