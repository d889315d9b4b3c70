#pragma once
// The nftables boundary: runs a script of nft commands as one transaction. libnftables in
// production (the same parser and netlink code as the nft tool, without a process per
// change); a fake in unit tests (tests/unit/fake_nft_executor.h).

#include "core/common/result.h"

#include <memory>
#include <string>

namespace powerctl::lb {

enum class NftMode {
  kApply,  // commit the transaction
  kCheck,  // parse and evaluate it against the kernel's current state, change nothing
};

class NftExecutor {
 public:
  virtual ~NftExecutor() = default;
  // Runs `script` (commands separated by newlines) as one transaction: all of it or none.
  // Failure: ErrorCode::kApi (kForbidden without CAP_NET_ADMIN) with nft's own error text.
  virtual Status Run(const std::string& script, NftMode mode) = 0;
};

// Each call uses a fresh libnftables context (a context is not thread-safe and keeps a
// cache of the kernel's rules that another program may have changed since), with output and
// errors buffered, not printed. Thread-safe.
std::unique_ptr<NftExecutor> MakeLibnftablesExecutor();

}  // namespace powerctl::lb
