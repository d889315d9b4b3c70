// Plain scalar resolution: the YAML 1.2 core schema, with integers that have a
// leading zero read as octal the way YAML 1.1 (and kubectl) read file modes.

#include "core/common/yaml_internal.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace powerctl::detail {
namespace {

bool IsNullWord(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> BoolWord(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

bool AllOf(std::string_view s, bool (*pred)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), pred);
}
bool IsOctalDigit(char c) {
  return c >= '0' && c <= '7';
}
bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? exactly.
bool IsCoreFloat(std::string_view s) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

std::optional<double> ParseFloat(std::string_view s) {
  const bool negative = !s.empty() && s[0] == '-';
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  if (!IsCoreFloat(s)) return std::nullopt;
  double value = 0;
  // from_chars, not strtod: it ignores the process locale (a "," decimal
  // point would otherwise change what a manifest means).
  const auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ec == std::errc::result_out_of_range) {
    const auto e = body.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && e + 1 < body.size() && body[e + 1] == '-';
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc() || ptr != body.data() + body.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

// Integers: [-+]?[0-9]+ (leading 0 and only 0-7 digits: octal, as YAML 1.1
// and kubectl read file modes), 0o[0-7]+, 0x[0-9a-fA-F]+. Returns nullopt if
// `s` is not an integer; a string Json if it is one too large to represent
// (hex/octal), a double for large decimals (as go-yaml does).
std::optional<Json> ParseInteger(std::string_view s) {
  int base = 10;
  bool negative = false;
  std::string_view digits = s;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    digits = s.substr(2);
    if (!AllOf(digits, base == 16 ? IsHexDigit : IsOctalDigit)) return std::nullopt;
  } else {
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (!AllOf(digits, IsDigit)) return std::nullopt;
    if (digits.size() > 1 && digits[0] == '0' && AllOf(digits, IsOctalDigit)) base = 8;
  }
  std::uint64_t magnitude = 0;
  const auto [ptr, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  constexpr std::uint64_t kMinMagnitude =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
  const bool fits = ec == std::errc() && (!negative || magnitude <= kMinMagnitude);
  if (!fits) {
    if (base != 10) return Json(std::string(s));
    return Json(ParseFloat(s).value_or(0.0));
  }
  if (negative) {
    // -(2^63) has no positive int64 counterpart, so negate in unsigned space.
    return Json(static_cast<std::int64_t>(~magnitude + 1));
  }
  if (magnitude <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Json(static_cast<std::int64_t>(magnitude));
  }
  return Json(magnitude);
}

}  // namespace

Json ResolvePlain(std::string_view s) {
  if (IsNullWord(s)) return Json(nullptr);
  if (auto b = BoolWord(s)) return Json(*b);
  if (auto i = ParseInteger(s)) return std::move(*i);
  if (auto f = ParseFloat(s)) return Json(*f);
  return Json(std::string(s));
}

}  // namespace powerctl::detail
