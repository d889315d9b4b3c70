#pragma once
// Intel Telemetry Aware Scheduling's TASPolicy objects (telemetry.intel.com/v1alpha1) as
// powerctl's Policy model: the labels and names TAS defines, decoding an object with the checks
// of the CRD schema (templates/policies.yaml) plus those TAS only made at run time, and the
// same checks on policies written in powerctl.yaml. Evaluation is scoring/policies.h.

#include "core/common/result.h"
#include "core/config/config.h"

#include <nlohmann/json_fwd.hpp>

#include <set>
#include <string>

namespace powerctl::config {

// Pods opt in with this label; the policy is looked up in the pod's namespace.
inline constexpr const char* kPolicyLabel = "telemetry-policy";
inline constexpr const char* kDontSchedule = "dontschedule";
inline constexpr const char* kScheduleOnMetric = "scheduleonmetric";
inline constexpr const char* kDeschedule = "deschedule";
inline constexpr const char* kLabeling = "labeling";
// Value of the `<policy>` node label on nodes that violate a deschedule strategy.
inline constexpr const char* kViolatingValue = "violating";
// Labeling strategies write `telemetry.aware.scheduling.<policy>/<key>` (as TAS does).
inline constexpr const char* kLabelingPrefix = "telemetry.aware.scheduling.";

// A TASPolicy object (as JSON) into a Policy. kInvalidInput naming the object and the field:
// `TASPolicy demo/p: spec.strategies.dontschedule.rules[0].operator: must be one of Equals,
// LessThan, GreaterThan (got "Lt")`. Checks what the CRD schema checks, plus what TAS only
// found at run time (unknown strategy names, malformed or conflicting labeling labels).
Result<Policy> PolicyFromJson(const nlohmann::json& object);

// The same checks on a Policy built another way (powerctl.yaml); `where` prefixes messages.
Status ValidatePolicy(const Policy& policy, const std::string& where);

// Every metric any strategy of the policy reads.
std::set<std::string> PolicyMetrics(const Policy& policy);

}  // namespace powerctl::config
