#pragma once
// `powerctl predict`: power per node now and after adding CPU, computed here from the
// configured telemetry sources and model, or asked of the running extender through the API
// server's service proxy to its ops port, so an admin off-cluster sees what the server sees.

#include "core/common/clock.h"
#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/predict/node_power.h"
#include "core/telemetry/gpu_power.h"
#include "core/telemetry/power_sources.h"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::report {

enum class PredictSource {
  kAuto,      // the extender when it answers, else local
  kLocal,     // always compute here
  kExtender,  // only the extender; an error when it cannot answer
};
Result<PredictSource> ParsePredictSource(const std::string& text);

struct PredictRequest {
  std::vector<std::string> nodes;  // by name; empty = all (or by selector)
  std::string selector;
  std::string cpu = "1";  // a CPU quantity: "1", "500m"
  PredictSource source = PredictSource::kAuto;
  // Also read each node's measured power (telemetry.powerSource over powerRateWindow) from
  // Prometheus, whoever predicts: `predict -o wide` shows it beside the prediction.
  bool measure_power = false;
};

struct PowerReport {
  bool from_extender = false;
  std::string
      answered_by;  // "extender powerctl/powerctl-extender (via the API server)", "local: ..."
  std::vector<std::string> warnings;  // e.g. why the extender was not used
  double cpu_added = 0;
  std::vector<predict::NodePower> nodes;
  telemetry::SteadyTime now{};  // what ages in `nodes` are relative to
  // With measure_power, when Prometheus answered: each node's measured power (or why there is
  // none), and the source's name. When it did not, a warning says why.
  std::optional<std::map<std::string, telemetry::MeasuredPower>> measured_power;
  std::string measured_source;
  // With measure_power and telemetry.gpuPowerSource set, when Prometheus answered: each node's
  // measured GPU watts and devices (or why there are none), and the source's name.
  std::optional<std::map<std::string, telemetry::GpuPower>> gpu_power;
  std::string gpu_source;
};

struct PredictDependencies {
  kube::Client* kube = nullptr;  // required
  HttpClient* http = nullptr;    // required for local predictions
  Clock clock;
  // When a pod started, against which it is judged to be in the usage metrics yet.
  std::function<std::chrono::system_clock::time_point()> wall_now = [] {
    return std::chrono::system_clock::now();
  };
  std::shared_ptr<spdlog::logger> log;
};

// kInvalidInput for a bad request (before any network use), kNotFound for a named node that
// does not exist, kNetwork/kApi when neither the extender nor local sources could answer.
// Per-node problems are in each NodePower's error, not a failure of the call.
Result<PowerReport> ReportPower(const PredictRequest& request, const config::PowerctlConfig& config,
                                const PredictDependencies& deps);

// Computes here, from powerctl.yaml's telemetry and predictor settings, for these Node
// objects: what `predict --source local` does, also used by `lb weights` for the nodes behind
// a Service. Each node's CPU is read as the scores read it (scoring/node_cpu.h): with
// `pods` (the cluster's Pod objects), the requests of the pods bound to a node but not yet in
// its usage metrics are added to its measured usage; null: nothing is added. Fails when the
// telemetry sources or the predictor cannot be set up or no readings come back; per-node
// problems are in each NodePower's error.
Result<PowerReport> PredictLocally(const std::vector<nlohmann::json>& node_objects,
                                   double cpu_added, const config::PowerctlConfig& config,
                                   const PredictDependencies& deps,
                                   const std::vector<nlohmann::json>* pods = nullptr);

// The service proxy path to the extender's ops JSON (exposed for tests and `explain`).
std::string ExtenderPredictionsPath(const config::PowerctlConfig& config,
                                    const std::vector<std::string>& nodes, const std::string& cpu);

}  // namespace powerctl::report
