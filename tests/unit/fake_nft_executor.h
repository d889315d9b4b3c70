#pragma once
// A scripted NftExecutor: records every script with its mode and fails the calls it is told to.

#include "core/lb/nft_executor.h"

#include <functional>
#include <string>
#include <vector>

namespace powerctl::lb {

class FakeNftExecutor final : public NftExecutor {
 public:
  struct Call {
    std::string script;
    NftMode mode;
  };
  // Returns the status of a call before it is recorded; OkStatus by default.
  std::function<Status(const std::string&, NftMode)> respond;
  std::vector<Call> calls;

  Status Run(const std::string& script, NftMode mode) override {
    calls.push_back({script, mode});
    return respond ? respond(script, mode) : OkStatus();
  }
};

}  // namespace powerctl::lb
