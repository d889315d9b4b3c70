#pragma once
// doctor's "kube-version" check: the cluster's Kubernetes line (maintained, ended, or newer
// than this powerctl knows) and whether the power-aware kube-scheduler's image is within the
// version skew policy of the API server. `status` shows the same line.

#include "core/common/kube_version.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <chrono>
#include <optional>
#include <string>

namespace powerctl::setup {

inline constexpr char kKubeVersionCheckId[] = "kube-version";

struct KubeVersionFacts {
  std::string server_git_version;              // the API server's /version gitVersion
  std::optional<std::string> scheduler_image;  // the scheduler Deployment's image, when found
  std::chrono::sys_days today;
};

// The server's version (one GET /version) and the scheduler Deployment's image, on the day of
// `now`.
KubeVersionFacts CollectKubeVersionFacts(kube::Client& client, const ComponentChecks& components,
                                         std::chrono::system_clock::time_point now);

// PASS when the line is maintained and the scheduler (when its Deployment exists) is at the
// server's minor or one older; WARN for an ended line, a newer minor than the release table,
// a skewed or unreadable scheduler image; FAIL for a version powerctl cannot target at all.
CheckResult CheckKubeVersion(const KubeVersionFacts& facts);

}  // namespace powerctl::setup
