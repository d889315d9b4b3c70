#include "core/lb/nft_program.h"

namespace powerctl::lb {
namespace {

Error RemoveAfter(NftExecutor& nft, Error error) {
  auto removed = RemoveNftTable(nft);
  if (!removed.ok()) {
    error.message += "; removing the table failed too: " + removed.error().message;
  } else {
    error.message += " (table removed: kube-proxy carries the traffic)";
  }
  return error;
}

}  // namespace

Status ProgramNftTable(NftExecutor& nft, const std::vector<BalancedService>& services) {
  if (services.empty()) return RemoveNftTable(nft);
  auto script = RenderNftRuleset(services);
  if (!script.ok()) return RemoveAfter(nft, script.error());
  // The check finds what only the kernel knows (a missing nat module, a kernel too old for an
  // expression) before anything changes, and tells that apart from a failed commit.
  if (auto checked = nft.Run(*script, NftMode::kCheck); !checked.ok()) {
    return RemoveAfter(nft, checked.error());
  }
  if (auto applied = nft.Run(*script, NftMode::kApply); !applied.ok()) {
    return RemoveAfter(nft, applied.error());
  }
  return OkStatus();
}

Status RemoveNftTable(NftExecutor& nft) {
  return nft.Run(RenderNftRemoval(), NftMode::kApply);
}

}  // namespace powerctl::lb
