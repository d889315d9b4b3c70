#pragma once
// Programming the load-balancing table so that a failure never breaks traffic: whatever goes
// wrong, our table is gone afterwards and kube-proxy's rules carry every Service as if
// powerctl were not there. The lb-agent calls these on every change.

#include "core/common/result.h"
#include "core/lb/nft_executor.h"
#include "core/lb/nft_ruleset.h"

#include <vector>

namespace powerctl::lb {

// Validates the Services, checks the ruleset with nft (dry run), then applies it in one
// transaction. No Services: the table is removed (nothing to balance). On any failure the
// table is removed and the error is returned (with the removal's error too if that failed),
// so the caller reports it and retries later.
Status ProgramNftTable(NftExecutor& nft, const std::vector<BalancedService>& services);

// Removes the table; succeeds when it is already absent.
Status RemoveNftTable(NftExecutor& nft);

}  // namespace powerctl::lb
