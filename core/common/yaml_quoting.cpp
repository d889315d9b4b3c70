// UTF-8 checks and the emitter's quoting rules: which strings may be written
// plain or as a literal block, and double-quoting with escapes otherwise.

#include "core/common/yaml_internal.h"

#include <algorithm>
#include <cstddef>

namespace powerctl::detail {
namespace {

// Decodes one code point at s[*i], advancing *i. Returns false (advancing one
// byte) on invalid UTF-8: overlong forms, surrogates, > U+10FFFF, truncation.
bool DecodeUtf8(std::string_view s, std::size_t* i, char32_t* cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(*i);
  std::size_t len = 0;
  char32_t value = 0;
  char32_t min = 0;
  if (b0 < 0x80) {
    *cp = b0;
    ++*i;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    value = b0 & 0x1F;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    value = b0 & 0x0F;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    value = b0 & 0x07;
    min = 0x10000;
  } else {
    ++*i;
    return false;
  }
  if (*i + len > s.size()) {
    ++*i;
    return false;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char b = byte(*i + k);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return false;
    }
    value = (value << 6) | (b & 0x3F);
  }
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    ++*i;
    return false;
  }
  *i += len;
  *cp = value;
  return true;
}

// Code points that must not appear raw in plain or block scalars: YAML's
// non-printable set, plus NEL/LS/PS which YAML 1.1 readers (go-yaml, hence
// kubectl) treat as line breaks and the BOM, which readers may strip.
bool NeedsEscape(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

// Anything a YAML 1.1 or 1.2 reader might resolve to something other than a
// string. Deliberately broad: a needlessly quoted string costs nothing.
bool LooksLikeNonString(std::string_view s) {
  if (!ResolvePlain(s).is_string()) return true;
  static constexpr std::string_view kWords[] = {
      "y",     "Y",     "yes", "Yes",  "YES",  "n",    "N",    "no",   "No",   "NO",
      "on",    "On",    "ON",  "off",  "Off",  "OFF",  "true", "True", "TRUE", "false",
      "False", "FALSE", "~",   "null", "Null", "NULL", "=",    "<<"};
  for (std::string_view w : kWords) {
    if (s == w) return true;
  }
  const char c0 = s[0];
  // Numbers, times (12:30), dates (2024-01-01, which go-yaml turns into
  // timestamps), version-like strings (1.2.3), sexagesimals, 1_000, 0b101.
  if (IsDigit(c0)) return true;
  if ((c0 == '+' || c0 == '-' || c0 == '.') && s.size() > 1 && (IsDigit(s[1]) || s[1] == '.')) {
    return true;
  }
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; });
  return lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan";
}

// Every code point is valid UTF-8 and printable; `allow_newline` for blocks.
bool PrintableText(std::string_view s, bool allow_newline) {
  std::size_t i = 0;
  while (i < s.size()) {
    char32_t cp = 0;
    if (!DecodeUtf8(s, &i, &cp)) return false;
    if (cp == '\n' && allow_newline) continue;
    if (NeedsEscape(cp)) return false;
  }
  return true;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < s.size()) {
    if (!DecodeUtf8(s, &i, &cp)) return false;
  }
  return true;
}

std::string QuoteString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  const auto append_u = [&](char32_t cp) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    char32_t cp = 0;
    if (!DecodeUtf8(s, &i, &cp)) {
      out += "\xEF\xBF\xBD";  // U+FFFD: neither JSON nor YAML can carry raw bytes
      continue;
    }
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (NeedsEscape(cp)) {
          append_u(cp);
        } else {
          out.append(s.substr(start, i - start));
        }
    }
  }
  out += '"';
  return out;
}

bool PlainOk(std::string_view s) {
  if (s.empty() || LooksLikeNonString(s)) return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s[0]) != std::string_view::npos) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) {
    return false;
  }
  return PrintableText(s, /*allow_newline=*/false);
}

bool LiteralOk(std::string_view s) {
  if (s.find('\n') == std::string_view::npos) return false;
  if (!PrintableText(s, /*allow_newline=*/true)) return false;
  const std::size_t end = s.find_last_not_of('\n');
  if (end == std::string_view::npos) return false;  // only newlines
  std::size_t start = 0;
  while (start <= end) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos || nl > end) nl = end + 1;
    const std::string_view line = s.substr(start, nl - start);
    if (!line.empty() && line.back() == ' ') return false;
    start = nl + 1;
  }
  return true;
}

}  // namespace powerctl::detail
