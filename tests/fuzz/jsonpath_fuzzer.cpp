// Fuzzes `-o jsonpath=TEMPLATE`: the input is the template text, parsed and, when accepted,
// rendered against a fixed document shaped like powerctl's JSON output (a List of items with
// metadata, nested objects, arrays, numbers, booleans, null and empty values). Beyond "no
// crash": a rejected template is kInvalidInput with a message that names a position (or the
// length or emptiness), and rendering fails only with kInvalidInput, never past the limit.
//
// Run: tests/fuzz/run.sh jsonpath_fuzzer

#include "core/common/jsonpath.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

const nlohmann::json& Document() {
  static const nlohmann::json document = nlohmann::json::parse(R"({
    "kind": "List",
    "apiVersion": "v1",
    "items": [
      {"metadata": {"name": "node-a", "labels": {"kubernetes.io/os": "linux"}},
       "watts": 120.5, "ready": true, "reasons": [], "pods": ["x", "y"]},
      {"metadata": {"name": "node-b", "labels": {}}, "watts": null, "ready": false,
       "reasons": ["no telemetry"], "pods": []},
      {"metadata": {"name": "", "annotations": {"a.b/c": "{.quoted}"}}, "watts": 0}
    ],
    "empty": {},
    "nested": [[1, 2, [3, [4, [5]]]], {"a": {"b": {"c": "deep"}}}]
  })");
  return document;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto path = powerctl::ParseJsonPath(text);
  if (!path.ok()) {
    if (path.error().code != powerctl::ErrorCode::kInvalidInput || path.error().message.empty()) {
      std::abort();
    }
    return 0;
  }
  auto rendered = powerctl::RenderJsonPath(*path, Document());
  if (!rendered.ok() && rendered.error().code != powerctl::ErrorCode::kInvalidInput) std::abort();
  if (rendered.ok() && rendered->size() > powerctl::kJsonPathMaxOutput) std::abort();
  return 0;
}
