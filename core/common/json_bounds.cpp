#include "core/common/json_bounds.h"

#include "core/common/json_scan.h"

#include <new>

namespace powerctl {

std::optional<std::string> JsonBoundsViolation(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return "is " + std::to_string(text.size()) + " bytes, more than " +
           std::to_string(limits.max_bytes);
  }
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (in_string) {
      i = FindJsonStringSpecial(text, i);  // the bytes before cannot end the string
      if (i == text.size()) break;
      if (text[i] == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (text[i] == '"') {
        in_string = false;
      }
      continue;
    }
    const char c = text[i];
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return "is nested deeper than " + std::to_string(limits.max_depth) + " levels at byte " +
               std::to_string(i);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

nlohmann::json ParseJsonBounded(std::string_view text, const JsonLimits& limits,
                                const nlohmann::json::parser_callback_t& callback) {
  if (JsonBoundsViolation(text, limits)) return nlohmann::json(nlohmann::json::value_t::discarded);
  try {
    return nlohmann::json::parse(text, callback, /*allow_exceptions=*/false);
  } catch (const std::bad_alloc&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace powerctl
