#include "core/kube/kubeconfig_contexts.h"

#include "core/kube/connection_internal.h"

namespace powerctl::kube {

std::vector<std::string> KubeconfigContexts(const ConnectionRequest& request) {
  constexpr std::size_t kMaxBytes = 8 << 20;  // as ResolveConnection reads them
  detail::Kubeconfig config;
  for (const std::string& path : detail::KubeconfigPaths(request)) {
    Result<std::string> text = detail::ReadFileLimited(path, kMaxBytes);
    if (text.ok()) (void)detail::MergeFile(path, *text, config);
  }
  std::vector<std::string> names;
  for (const auto& entry : config.contexts) names.push_back(entry.first);
  return names;
}

}  // namespace powerctl::kube
