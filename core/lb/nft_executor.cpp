#include "core/lb/nft_executor.h"

#include <nftables/libnftables.h>

#include <memory>
#include <string_view>

namespace powerctl::lb {
namespace {

struct CtxFree {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};
using CtxPtr = std::unique_ptr<nft_ctx, CtxFree>;

// nft's error buffer has the message, then a line of the input and a caret under the problem;
// for input from a buffer, nftables 1.0.6 shows the wrong line (the columns are right), so only
// the message is kept.
std::string FirstLine(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

class LibnftablesExecutor final : public NftExecutor {
 public:
  Status Run(const std::string& script, NftMode mode) override {
    CtxPtr ctx(nft_ctx_new(NFT_CTX_DEFAULT));
    if (!ctx) return MakeError(ErrorCode::kInternal, "nftables: cannot create a context");
    if (nft_ctx_buffer_output(ctx.get()) != 0 || nft_ctx_buffer_error(ctx.get()) != 0) {
      return MakeError(ErrorCode::kInternal, "nftables: cannot buffer output");
    }
    nft_ctx_set_dry_run(ctx.get(), mode == NftMode::kCheck);
    if (nft_run_cmd_from_buffer(ctx.get(), script.c_str()) == 0) return OkStatus();
    const char* err = nft_ctx_get_error_buffer(ctx.get());
    std::string message = err != nullptr ? FirstLine(err) : "";
    if (message.empty()) message = "failed without an error message";
    // Without CAP_NET_ADMIN every command fails with EPERM.
    const bool forbidden = message.find("Operation not permitted") != std::string::npos;
    return MakeError(
        forbidden ? ErrorCode::kForbidden : ErrorCode::kApi,
        std::string(mode == NftMode::kCheck ? "nftables check: " : "nftables: ") + message);
  }
};

}  // namespace

std::unique_ptr<NftExecutor> MakeLibnftablesExecutor() {
  return std::make_unique<LibnftablesExecutor>();
}

}  // namespace powerctl::lb
