// Fuzzes the V2 inference protocol response parser (ParseV2Response) with model-server
// bodies: for 1-4 rows, an accepted body gives exactly one Prediction per row, each with
// either watts (finite, 0..kMaxNodeWatts) or a reason; a rejected body has a message with the
// documented prefix; nested "data" arrays of any depth are refused without deep recursion.
//
// Run: tests/fuzz/run.sh v2_response_fuzzer

#include "core/predict/builtin_model.h"
#include "core/predict/v2_rest.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "v2_response_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (std::size_t rows = 1; rows <= 4; ++rows) {
    auto parsed = powerctl::predict::ParseV2Response(body, rows);
    if (!parsed.ok()) {
      const std::string& m = parsed.error().message;
      if (m.rfind("invalid response from model server: ", 0) != 0 &&
          m.rfind("model server error: ", 0) != 0) {
        Fail("an error without the documented prefix", body, m);
      }
      continue;
    }
    if (parsed->size() != rows) Fail("wrong number of predictions", body, std::to_string(rows));
    for (const auto& p : *parsed) {
      if (p.watts.has_value() == !p.error.empty()) {
        Fail("a row has both or neither of watts and a reason", body, p.error);
      }
      if (p.watts && (!std::isfinite(*p.watts) || *p.watts < 0 ||
                      *p.watts > powerctl::predict::kMaxNodeWatts)) {
        Fail("a row has watts out of range", body, std::to_string(*p.watts));
      }
    }
  }
  return 0;
}
