#include "core/setup/doctor_version.h"

#include <fmt/format.h>

namespace powerctl::setup {
namespace {

// "registry.k8s.io/kube-scheduler:v1.36.2" -> "v1.36.2"; "" when untagged or by digest.
std::string ImageTag(const std::string& image) {
  if (image.find('@') != std::string::npos) return "";
  std::size_t slash = image.rfind('/');
  std::size_t colon = image.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return "";
  return image.substr(colon + 1);
}

// The scheduler half of the message; sets `warn` when the image is skewed or unreadable.
std::string SchedulerPart(const KubeVersion& server, const std::optional<std::string>& image,
                          bool& warn) {
  if (!image) return "no scheduler Deployment to compare";
  auto scheduler = KubeVersion::Parse(ImageTag(*image));
  if (!scheduler.ok()) {
    warn = true;
    return fmt::format("the scheduler's image {} names no Kubernetes version", *image);
  }
  std::string problem = SchedulerSkewProblem(server, *scheduler);
  if (!problem.empty()) {
    warn = true;
    return problem;
  }
  return fmt::format("kube-scheduler {} is within the skew policy", ImageTag(*image));
}

}  // namespace

KubeVersionFacts CollectKubeVersionFacts(kube::Client& client, const ComponentChecks& components,
                                         std::chrono::system_clock::time_point now) {
  KubeVersionFacts facts;
  if (auto version = client.Version(); version.ok())
    facts.server_git_version = version->git_version;
  if (components.scheduler_deployment && components.scheduler_deployment->found)
    facts.scheduler_image = components.scheduler_deployment->image;
  facts.today = std::chrono::floor<std::chrono::days>(now);
  return facts;
}

CheckResult CheckKubeVersion(const KubeVersionFacts& facts) {
  CheckResult r{kKubeVersionCheckId, "Kubernetes line is maintained and the scheduler matches it",
                CheckStatus::kPass, "", ""};
  if (facts.server_git_version.empty()) {
    r.status = CheckStatus::kWarn;
    r.message = "the API server's /version could not be read";
    r.fix = "run `powerctl doctor` again; check the API server's health";
    return r;
  }
  auto server = KubeVersion::Parse(facts.server_git_version);
  if (!server.ok()) {
    r.status = CheckStatus::kFail;
    r.message = server.error().message;
    r.fix = "powerctl targets Kubernetes 1.20 and later";
    return r;
  }
  bool warn = false;
  std::string scheduler = SchedulerPart(*server, facts.scheduler_image, warn);
  r.message = fmt::format("{}; {}", server->SupportSummary(facts.today), scheduler);
  if (server->SupportOn(facts.today) == KubeLineSupport::kEnded) {
    r.status = CheckStatus::kWarn;
    r.fix =
        "upgrade the cluster to a maintained line, then `powerctl apply` to render its "
        "scheduler";
  } else if (server->SupportOn(facts.today) == KubeLineSupport::kNewerThanKnown) {
    r.status = CheckStatus::kWarn;
    r.fix = fmt::format(
        "upgrade powerctl to a release that knows {}; until then the 1.{} "
        "configuration is rendered",
        server->MinorString(), KubeVersion::kNewestKnownMinor);
  }
  if (warn) {
    r.status = CheckStatus::kWarn;
    if (r.fix.empty())
      r.fix = "run `powerctl apply`: it renders the scheduler for the server's version";
  }
  return r;
}

}  // namespace powerctl::setup
