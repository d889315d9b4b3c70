#include "core/lb/balancer.h"
#include "core/lb/nft_program.h"

namespace powerctl::lb {
namespace {

class NftBalancer final : public Balancer {
 public:
  explicit NftBalancer(std::unique_ptr<NftExecutor> nft) : nft_(std::move(nft)) {}
  const char* Mode() const override { return "nftables"; }
  Status Program(const std::vector<BalancedService>& services) override {
    return ProgramNftTable(*nft_, services);
  }
  Status Remove() override { return RemoveNftTable(*nft_); }

 private:
  std::unique_ptr<NftExecutor> nft_;
};

}  // namespace

std::unique_ptr<Balancer> MakeNftBalancer(std::unique_ptr<NftExecutor> nft) {
  return std::make_unique<NftBalancer>(std::move(nft));
}

}  // namespace powerctl::lb
