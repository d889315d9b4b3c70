#pragma once
// Plain decimal numbers, as they appear in node labels and annotations. std::strtod also
// reads hexadecimal ("0x12"), "inf", "nan" and leading spaces; WAO's MinimizePower plugin
// reads labels with Go's strconv.ParseFloat, which rejects "0x12", and a value that
// one reader accepts and the other rejects makes a node silently unscored. So powerctl
// accepts only the forms every reader agrees on.

#include <optional>
#include <string>
#include <string_view>

namespace powerctl {

enum class DecimalForm {
  // [+-]digits[.digits][(e|E)[+-]digits], or a fraction without integer digits (".5") or
  // without fraction digits ("5."), as Go's ParseFloat reads them. For temperature labels.
  kScientific,
  // -?digits[.digits], nothing else: "135.5". What powerctl.io/* annotations hold, and what
  // their reader (std::from_chars, fixed format) accepts.
  kFixed,
};

// The value of `text`, or nullopt when it is not a finite number of that form.
std::optional<double> ParseDecimal(std::string_view text,
                                   DecimalForm form = DecimalForm::kScientific);

// `value` in kFixed form with at most `max_decimals` fraction digits, trailing zeros and a
// trailing point removed: 135.50 -> "135.5", 2.0 -> "2", -0.0 -> "0".
std::string FormatDecimal(double value, int max_decimals);

}  // namespace powerctl
