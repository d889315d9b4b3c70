#pragma once
// `-o jsonpath=TEMPLATE`: the subset of kubectl's JSONPath templates that reads fields out of
// a command's JSON document. The template is user input, so parsing is bounded (length, range
// nesting) and so is the text a template may produce.
//
//   literal text          printed as is; \n, \t, \r, \\, \{ and \} are escapes
//   {.a.b} {$.a} {@.a}    a field ($ the document, @ or nothing the current element)
//   {.a['b.c']} {.a[0]}   a key in brackets; an index, negative from the end
//   {.items[*].name}      every element ([*] or .*); [1:3] a slice
//   {"text"}              a quoted literal with the same escapes and \"
//   {range .items[*]}...{end}  the body once per element, `.` being that element
//
// A missing field prints nothing (kubectl's --allow-missing-template-keys); strings print
// bare, other values as compact JSON, several results of one expression space-separated.

#include "core/common/result.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl {

// One step of a path: `.name` / `['name']`, `[3]`, `[*]` / `.*`, `[1:3]`.
struct JsonPathStep {
  enum class Kind { kField, kIndex, kWildcard, kSlice };
  Kind kind = Kind::kField;
  std::string field;
  std::int64_t index = 0;
  std::optional<std::int64_t> slice_start, slice_end;
};

// A piece of a template: literal text, a path to print, or a range over a path.
struct JsonPathNode {
  enum class Kind { kText, kPath, kRange };
  Kind kind = Kind::kText;
  std::string text;
  bool from_document = false;  // `$`: the whole document, even inside a range
  std::vector<JsonPathStep> steps;
  std::vector<JsonPathNode> body;  // kRange
};

struct JsonPath {
  std::vector<JsonPathNode> nodes;
};

// Limits on what a template may ask for.
inline constexpr std::size_t kJsonPathMaxTemplate = 16 * 1024;
inline constexpr int kJsonPathMaxRangeDepth = 8;
inline constexpr std::size_t kJsonPathMaxOutput = 64ull * 1024 * 1024;

// The template parsed, or kInvalidInput naming the position and what is wrong there.
Result<JsonPath> ParseJsonPath(std::string_view text);

// `path` applied to `document`; kInvalidInput when the output would pass kJsonPathMaxOutput.
Result<std::string> RenderJsonPath(const JsonPath& path, const nlohmann::json& document);

}  // namespace powerctl
