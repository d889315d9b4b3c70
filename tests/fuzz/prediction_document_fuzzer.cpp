// Fuzzes ParsePredictionDocument, which reads the extender's ops JSON (GET /v1/predictions)
// that `powerctl predict` receives through the API server: it never throws, every accepted
// node has a name, and what it accepted survives a round trip through PredictionDocument.
//
// Run: tests/fuzz/run.sh prediction_document_fuzzer

#include "core/predict/node_power_json.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "prediction_document_fuzzer: %s\n  input: \"%.*s\"\n", what,
               static_cast<int>(input.size()), input.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  const auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(24 * 365);
  auto parsed = powerctl::predict::ParsePredictionDocument(doc, now);
  if (!parsed.ok()) {
    if (parsed.error().message.empty()) Fail("an error without a message", text);
    return 0;
  }
  for (const auto& node : parsed->nodes) {
    if (node.node.empty()) Fail("an accepted node without a name", text);
  }
  auto again = powerctl::predict::ParsePredictionDocument(
      powerctl::predict::PredictionDocument(parsed->nodes, parsed->cpu_added, now), now);
  if (!again.ok()) Fail("a document we wrote is refused", text);
  if (again->nodes.size() != parsed->nodes.size())
    Fail("the round trip changed the node count", text);
  for (std::size_t i = 0; i < parsed->nodes.size(); ++i) {
    const auto& a = parsed->nodes[i];
    const auto& b = again->nodes[i];
    if (a.node != b.node || a.watts_now != b.watts_now || a.watts_after != b.watts_after ||
        a.error != b.error) {
      Fail("the round trip changed a node", text);
    }
  }
  return 0;
}
