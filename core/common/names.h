#pragma once
// Kubernetes name, label and quantity rules. Each returns "" when the value is
// valid, else a short phrase saying what is wrong (callers add the key).

#include <string>
#include <string_view>

namespace powerctl {

std::string ValidateDnsLabel(const std::string& value);      // RFC 1123 label, <= 63
std::string ValidateDnsSubdomain(const std::string& value);  // RFC 1123 subdomain, <= 253
std::string ValidateLabelValue(const std::string& value);    // label value, <= 63, may be empty
std::string ValidateQuantity(
    const std::string& value);  // resource quantity: 100m, 1.5, 64Mi, 2G, 1e3
std::string ValidateImageReference(const std::string& value);

// A TASPolicy rule's metricname: ^[a-zA-Z0-9_-]+$ (TAS uses it in cache keys), at most 253.
bool IsMetricName(std::string_view name);

}  // namespace powerctl
