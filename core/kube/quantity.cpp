#include "core/kube/quantity.h"

#include "core/common/encoding.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace powerctl::kube {
namespace {

__extension__ typedef __int128 Int128;  // GCC and clang; -Wpedantic-clean

constexpr int kMaxDigits = 18;      // fits uint64 and leaves room for 1024^6 in 128 bits
constexpr int kMaxExponent = 1000;  // "1e999999999" must not loop or overflow int

Error InvalidQuantity(std::string_view text, const std::string& why) {
  return MakeError(ErrorCode::kInvalidInput,
                   "invalid quantity \"" + ExcerptForMessage(text, 64) + "\": " + why);
}

// The value of a suffix as (power of ten, power of 1024); false for an unknown suffix.
bool DecodeSuffix(std::string_view suffix, int& exponent10, int& binary_power) {
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
      {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::string_view kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (const auto& [name, power] : kDecimal) {
    if (suffix == name) {
      exponent10 = power;
      return true;
    }
  }
  for (int i = 0; i < 6; ++i) {
    if (suffix == kBinary[i]) {
      binary_power = i + 1;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<Quantity> ParseQuantity(std::string_view text) {
  Quantity q;
  std::size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) q.negative = text[pos++] == '-';
  std::string digits;  // integer and fraction digits, without the point
  int fraction_digits = 0;
  bool seen_digit = false, seen_point = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
      if (!(digits.empty() && c == '0')) digits += c;  // leading zeros carry nothing
      if (seen_point) ++fraction_digits;
      if (digits.size() > kMaxDigits + 64) return InvalidQuantity(text, "too many digits");
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return InvalidQuantity(text, "expected a number");
  // Trailing zeros move into the exponent so only significant digits are kept.
  int exponent10 = -fraction_digits;
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exponent10;
  }
  if (static_cast<int>(digits.size()) > kMaxDigits) {
    return InvalidQuantity(text, "more than " + std::to_string(kMaxDigits) + " significant digits");
  }
  std::string_view suffix = text.substr(pos);
  int suffix10 = 0;
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(suffix[1])) || suffix[1] == '+' ||
       suffix[1] == '-')) {
    std::string_view number = suffix.substr(1);
    if (number[0] == '+') number.remove_prefix(1);
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), suffix10);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        std::abs(suffix10) > kMaxExponent) {
      return InvalidQuantity(text, "invalid exponent");
    }
  } else if (!DecodeSuffix(suffix, suffix10, q.binary_power)) {
    return InvalidQuantity(
        text, "unknown suffix \"" + ExcerptForMessage(suffix, 8) +
                  "\" (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<N>)");
  }
  if (digits.empty()) return Quantity{};  // zero, whatever the sign and suffix
  q.exponent10 = exponent10 + suffix10;
  for (char c : digits) q.digits = q.digits * 10 + static_cast<std::uint64_t>(c - '0');
  return q;
}

Result<std::int64_t> Quantity::Scaled(int scale) const {
  auto too_big = [] { return MakeError(ErrorCode::kInvalidInput, "quantity is out of range"); };
  Int128 value = digits;
  for (int i = 0; i < binary_power; ++i) value *= 1024;  // < 2^60 * 2^60: no overflow
  const Int128 limit = static_cast<Int128>(std::numeric_limits<std::int64_t>::max()) + 1;
  int shift = exponent10 - scale;
  if (value == 0) return std::int64_t{0};
  if (shift >= 0) {
    for (int i = 0; i < shift; ++i) {
      value *= 10;
      if (value > limit) return too_big();
    }
    if (negative) value = -value;
  } else {
    bool inexact = false;
    for (int i = 0; i < -shift && value != 0; ++i) {
      inexact = inexact || value % 10 != 0;
      value /= 10;
    }
    // ceil(): positive values round up; for negative ones dropping digits already rounds up.
    if (negative) {
      value = -value;
    } else if (inexact) {
      value += 1;
    }
  }
  if (value >= limit || value < -limit) return too_big();
  return static_cast<std::int64_t>(value);
}

double Quantity::ToDouble() const {
  long double value = static_cast<long double>(digits) * std::pow(10.0L, exponent10) *
                      std::pow(1024.0L, binary_power);
  return static_cast<double>(negative ? -value : value);
}

Result<double> ParseCpuCores(std::string_view text) {
  POWERCTL_TRY(q, ParseQuantity(text));
  Result<std::int64_t> nanocores = q.Scaled(-9);
  if (!nanocores.ok()) return InvalidQuantity(text, "out of range for CPU");
  return static_cast<double>(*nanocores) / 1e9;
}

Result<double> ParseBytes(std::string_view text) {
  POWERCTL_TRY(q, ParseQuantity(text));
  Result<std::int64_t> bytes = q.Scaled(0);
  // Beyond int64 bytes (8 EiB) only a double can say how much; that is precise enough.
  if (!bytes.ok()) return q.ToDouble();
  return static_cast<double>(*bytes);
}

}  // namespace powerctl::kube
