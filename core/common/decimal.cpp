#include "core/common/decimal.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

namespace powerctl {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Advances `i` over digits; returns how many there were.
std::size_t Digits(std::string_view text, std::size_t& i) {
  std::size_t start = i;
  while (i < text.size() && IsDigit(text[i])) ++i;
  return i - start;
}

// Whether `text` has the form's grammar; the conversion is left to std::from_chars.
bool Matches(std::string_view text, DecimalForm form) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || (text[i] == '+' && form == DecimalForm::kScientific)))
    ++i;
  std::size_t integer = Digits(text, i);
  std::size_t fraction = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    fraction = Digits(text, i);
    // "5." and ".5" are Go's; the fixed form wants digits on both sides of the point.
    if (form == DecimalForm::kFixed && (integer == 0 || fraction == 0)) return false;
  }
  if (integer + fraction == 0) return false;
  if (form == DecimalForm::kScientific && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (Digits(text, i) == 0) return false;
  }
  return i == text.size();
}

}  // namespace

std::optional<double> ParseDecimal(std::string_view text, DecimalForm form) {
  if (!Matches(text, form)) return std::nullopt;
  // from_chars takes no leading '+'.
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // Out of range ("1e999") is an error in Go too, not infinity.
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::string FormatDecimal(double value, int max_decimals) {
  std::string text = fmt::format("{:.{}f}", value, max_decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

}  // namespace powerctl
