#pragma once
// `powerctl calibrate`: fits each node's built-in model to its measured power against its CPU
// utilisation, both read from Prometheus over a past window, and writes the fit as the node's
// powerctl.io/* annotations: the measured curve (power-curve) together with the exponent form
// (idle-watts, max-watts, curve), or the exponent form alone.

#include "core/common/result.h"
#include "core/kube/client.h"
#include "core/predict/calibrate.h"
#include "core/setup/apply.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::setup {

// Prometheus refuses range queries with more points per series than this.
inline constexpr long kMaxRangePoints = 11000;

// Which form of the built-in model is fitted and written.
enum class CalibrationForm {
  // powerctl.io/power-curve, which the model then follows, and the exponent form's
  // annotations beside it for tools that read only those.
  kCurve,
  // idle-watts, max-watts and curve; a power-curve annotation is removed, since it would
  // silently override them.
  kExponent,
};

// "curve" or "exponent"; anything else is an error naming both (exit code 2).
Result<CalibrationForm> ParseCalibrationForm(std::string_view text);
std::string_view CalibrationFormName(CalibrationForm form);

struct CalibrateRequest {
  std::vector<std::string> nodes;  // by name, or:
  std::string selector;            // -l
  bool all = false;                // --all
  std::chrono::seconds window{std::chrono::hours(24 * 7)};
  // Resolution of the range queries, and the averaging window of each point: power and
  // utilisation are both averaged over the same `step` so they describe the same interval.
  std::chrono::seconds step{std::chrono::minutes(5)};
  predict::CalibrationOptions fit;
  CalibrationForm form = CalibrationForm::kCurve;
  // Where measured power comes from (telemetry.powerSource); counters are averaged over each
  // `step` like the utilisation. Its mapping is replaced by `mapping` plus the source's label.
  telemetry::PowerQuerySpec power;
  bool skip_unfit = false;  // write the nodes that fit, leave the others alone
  DryRunMode dry_run = DryRunMode::kNone;
  telemetry::NodeMappingOptions mapping;
  std::optional<telemetry::WallTime> end;  // end of the window; default: now
};

// Pure checks of the request (selection, window, step, thresholds).
Status ValidateCalibrateRequest(const CalibrateRequest& request);

// The PromQL used for each point: utilisation as a fraction of capacity (node_exporter) and
// mean watts from the power source, both over `step`, grouped so each series maps to one node.
std::string UtilisationQuery(const CalibrateRequest& request);
Result<telemetry::PowerQuery> PowerWattsQuery(const CalibrateRequest& request);

struct NodeCalibration {
  std::string node;
  CalibrationForm form = CalibrationForm::kCurve;
  predict::CalibrationFit fit;  // the exponent form (always fitted: the curve fills from it)
  predict::CurveFit curve;      // the curve form (only with CalibrationForm::kCurve)
  // How much of the load range the history covered: the utilisation spread (max - min, 0..1)
  // and the 10 % load steps of the curve measured rather than filled (0..11; 0 without a
  // curve fit).
  double load_range_covered = 0;
  int measured_steps = 0;
  // Why the node is not written ("" when it is): the chosen form's refusal, no history, or
  // annotations the model would not accept together.
  std::string refused;
  // With the kepler source: the zones its watts sum ("RAPL package+dram", "hwmon ...").
  std::string power_zones;
  std::map<std::string, std::string> annotations;  // what is (or would be) written
  std::vector<std::string> removed;                // annotations that are (or would be) removed
  bool changed = false;                            // the annotations differ from the node's
};

struct CalibrationReport {
  std::vector<NodeCalibration> nodes;
  telemetry::PowerSource power_source = telemetry::PowerSource::kIpmi;
  std::string power_measures;  // what the fitted watts cover (PowerQuery::measures)
  bool whole_server = true;    // false: the curve models CPU and memory power only
  // Set when nothing was written because a node could not be calibrated (without
  // skip_unfit); names the nodes and why.
  std::string not_written;
};

// Queries Prometheus, fits every selected node, then (when every node fits, or with
// skip_unfit for those that do) checks permission and patches the annotations. Cluster or
// Prometheus failures are errors; a node that cannot be calibrated is reported, not an error.
Result<CalibrationReport> CalibrateNodes(kube::Client& client,
                                         const telemetry::PrometheusClient& prometheus,
                                         const CalibrateRequest& request);

// Each node's measured power curve (11 points, 0-100 % load) as `calibrate
// --dry-run=client` fits it from `power`'s history, for the snapshot `simulate` exports: the
// nodes whose history does not fit are left out. Nothing is written to the cluster. An error
// says why there are none at all (no power source, Prometheus or the cluster failing).
Result<std::map<std::string, std::vector<double>>> MeasuredPowerCurves(
    kube::Client& client, const telemetry::PrometheusClient& prometheus,
    const telemetry::PowerQuerySpec& power);

}  // namespace powerctl::setup
