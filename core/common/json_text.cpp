#include "core/common/json_text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iterator>

namespace powerctl {

void AppendEscapedJsonString(std::string& out, std::string_view text) {
  out += nlohmann::json(std::string(text))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AppendJsonNumber(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", value);  // shortest round-trip form
}

void AppendJsonNumber(std::string& out, std::int64_t value) {
  fmt::format_to(std::back_inserter(out), "{}", value);
}

}  // namespace powerctl
