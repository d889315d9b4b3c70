// Drives core/lb's nftables programming for tests/integration/test_lb_netns.py, in place of the
// lb-agent's watch loop (built only with the tests; not part of the powerctl binary).
//
//   lb_nft_tool program SERVICES.json   ProgramNftTable with the Services in the file
//   lb_nft_tool program SERVICES.json --break-apply
//                                       the same, but the committed transaction gets a rule
//                                       the kernel refuses (after a clean check): the path
//                                       where nft itself fails half-way through programming
//   lb_nft_tool remove                  RemoveNftTable
//   lb_nft_tool render SERVICES.json    print the transaction, change nothing
//
// SERVICES.json: [{"namespace", "name", "cluster_ip", "port", "protocol",
//                  "endpoints": [{"ip", "port", "weight"}]}]
// Exit 0 on success; otherwise "error: MESSAGE" on stderr and exit 1 (2 for usage).
#include "core/lb/nft_executor.h"
#include "core/lb/nft_program.h"
#include "core/lb/nft_ruleset.h"
#include "tests/integration/lb_tool_services.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace lb = powerctl::lb;

namespace {

// Appends a jump to a chain that does not exist to the applied ruleset: nft parses it and
// the kernel refuses the transaction, so the previous table stays until Program removes it.
class BreakApply final : public lb::NftExecutor {
 public:
  explicit BreakApply(std::unique_ptr<lb::NftExecutor> real) : real_(std::move(real)) {}
  powerctl::Status Run(const std::string& script, lb::NftMode mode) override {
    if (mode != lb::NftMode::kApply || script == lb::RenderNftRemoval()) {
      return real_->Run(script, mode);
    }
    return real_->Run(
        script + "add rule ip " + lb::kNftTableName + " services jump no-such-chain\n", mode);
  }

 private:
  std::unique_ptr<lb::NftExecutor> real_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "remove") {
      auto nft = lb::MakeLibnftablesExecutor();
      auto s = lb::RemoveNftTable(*nft);
      return s.ok() ? 0 : lb_tool::Fail(s.error().message);
    }
    const bool broken = args.size() == 3 && args[2] == "--break-apply";
    if ((args.size() == 2 || broken) && args[0] == "program") {
      std::unique_ptr<lb::NftExecutor> nft = lb::MakeLibnftablesExecutor();
      if (broken) nft = std::make_unique<BreakApply>(std::move(nft));
      auto s = lb::ProgramNftTable(*nft, lb_tool::LoadServices(args[1]));
      return s.ok() ? 0 : lb_tool::Fail(s.error().message);
    }
    if (args.size() == 2 && args[0] == "render") {
      auto text = lb::RenderNftRuleset(lb_tool::LoadServices(args[1]));
      if (!text.ok()) return lb_tool::Fail(text.error().message);
      std::cout << *text;
      return 0;
    }
  } catch (const std::exception& e) {
    return lb_tool::Fail(e.what());
  }
  std::cerr << "usage: lb_nft_tool program FILE [--break-apply] | remove | render FILE\n";
  return 2;
}
