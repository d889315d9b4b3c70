// Fuzzes the YAML reader (ParseYamlDocuments) and checks the round-trip property
// documented in core/common/yaml.h: for every stream that parses,
//   ParseYamlDocuments(EmitYamlDocuments(docs)) == docs
// compared strictly (same JSON type, same key order, same float bits).
//
// Run: tests/fuzz/run.sh yaml_fuzzer   (see that script for the flags used)

#include "core/common/yaml.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

using Json = nlohmann::ordered_json;

// Stricter than nlohmann's operator==, which treats 1 == 1.0 and -0.0 == 0.0 as equal and
// would hide an integer that comes back as a float. Two explicit exceptions to bit-exact
// comparison, both legitimate:
//  * NaN: `.nan` emits as `.nan` and parses back as NaN, but NaN != NaN under ==, so two
//    NaNs count as equal here (the parser only ever produces the one quiet NaN).
//  * nothing else: -0.0 must come back as -0.0 (EmitYaml writes "-0.0"), so the sign of
//    zero is compared too.
bool SameValue(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::value_t::object: {
      if (a.size() != b.size()) return false;
      auto ib = b.begin();
      for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
        if (ia.key() != ib.key() || !SameValue(ia.value(), ib.value())) return false;
      }
      return true;
    }
    case Json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (!SameValue(a[i], b[i])) return false;
      }
      return true;
    }
    case Json::value_t::number_float: {
      const double x = a.get<double>();
      const double y = b.get<double>();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    default:
      return a == b;
  }
}

[[noreturn]] void Fail(const char* what, std::string_view emitted) {
  std::fprintf(stderr, "yaml_fuzzer: %s\n--- emitted YAML ---\n%.*s\n--- end ---\n", what,
               static_cast<int>(emitted.size()), emitted.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // Tighter than the defaults so one input stays fast; the limits themselves are exercised
  // (inputs that hit them must fail cleanly, not crash).
  powerctl::YamlLimits limits;
  limits.max_depth = 64;
  limits.max_nodes = 20000;
  limits.max_bytes = 1 << 20;

  auto docs = powerctl::ParseYamlDocuments(text, "fuzz.yaml", limits);
  if (!docs.ok()) return 0;

  const std::string emitted = powerctl::EmitYamlDocuments(*docs);

  // The emitted stream has no aliases, so it is never more nodes than the expanded input,
  // but it can be much larger in bytes (an alias of a long string is written out in full).
  powerctl::YamlLimits reparse_limits = limits;
  reparse_limits.max_bytes = static_cast<std::size_t>(-1);
  auto again = powerctl::ParseYamlDocuments(emitted, "emitted.yaml", reparse_limits);
  if (!again.ok()) {
    std::fprintf(stderr, "yaml_fuzzer: error: %s\n", again.error().message.c_str());
    Fail("EmitYamlDocuments output does not parse", emitted);
  }
  if (again->size() != docs->size()) Fail("document count changed in the round trip", emitted);
  for (std::size_t i = 0; i < docs->size(); ++i) {
    if (!SameValue((*docs)[i], (*again)[i])) {
      std::fprintf(stderr, "yaml_fuzzer: document %zu\n  before: %s\n  after:  %s\n", i,
                   (*docs)[i].dump(-1, ' ', false, Json::error_handler_t::replace).c_str(),
                   (*again)[i].dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
      Fail("value changed in the round trip", emitted);
    }
  }
  return 0;
}
