#include "core/common/yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace powerctl {
namespace {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------
// UTF-8 and character classes
// ---------------------------------------------------------------------------

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

bool IsValidUtf8(std::string_view s) {
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < s.size()) {
    if (!DecodeUtf8(s, &i, &cp)) return false;
  }
  return true;
}

// Code points that must not appear raw in plain or block scalars: YAML's
// non-printable set, plus NEL/LS/PS which YAML 1.1 readers (go-yaml, hence
// kubectl) treat as line breaks and the BOM, which readers may strip.
bool NeedsEscape(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Double-quoted scalar with JSON escapes. JSON's escape set is a subset of
// YAML's, so the text is valid as both (the template engine relies on this).
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

// ---------------------------------------------------------------------------
// Plain scalar resolution (YAML 1.2 core schema, leading-zero octal as 1.1)
// ---------------------------------------------------------------------------

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

Json ResolvePlain(std::string_view s) {
  if (IsNullWord(s)) return Json(nullptr);
  if (auto b = BoolWord(s)) return Json(*b);
  if (auto i = ParseInteger(s)) return std::move(*i);
  if (auto f = ParseFloat(s)) return Json(*f);
  return Json(std::string(s));
}

// ---------------------------------------------------------------------------
// Flow-depth pre-scan
// ---------------------------------------------------------------------------

// yaml-cpp 0.7 buffers every token of a nested flow collection before it
// reports the first event (about 230 bytes per unclosed bracket: 8 MiB of
// "[" costs ~1.9 GB and 2 s), so the depth check in the event handler comes
// too late for flow nesting. This scan finds flow nesting deeper than the
// limit first. It is a light lexer, not a parser: it skips comments, quoted
// and block scalars, and counts "[" / "{" only where a token can start, so
// brackets inside plain scalars (`a[0]`) do not count. Where it has to guess
// it guesses toward counting; the event handler still enforces the exact
// limit on whatever gets through.
class FlowDepthScanner {
 public:
  FlowDepthScanner(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  // Returns the 0-based line/column of the first opener nested too deep.
  std::optional<std::pair<int, int>> Run() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // BOM
    bool line_begin = true;
    while (i_ < text_.size()) {
      if (line_begin) {
        line_begin = false;
        BeginLine();
        continue;
      }
      const char c = text_[i_];
      if (c == '\n') {
        EndLine();
        Bump();
        line_begin = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        Bump();
        continue;
      }
      // yaml-cpp starts a comment at "#" after a blank or at a token
      // boundary ('s'#x, [a]#x); only inside a plain scalar is it text.
      if (c == '#' && (PrevIsBlank() || !prev_plain_)) {
        in_plain_ = false;  // a comment ends a plain scalar
        SkipToEol();
        continue;
      }
      if (depth_ > 0) {
        if (FlowChar(c)) return std::make_pair(line_, col_);
      } else {
        bool block_scalar = false;
        if (BlockChar(c, &block_scalar)) return std::make_pair(line_, col_);
        if (block_scalar) {
          // Now at the start of the first line after the block scalar.
          line_begin = true;
          in_plain_ = false;
          carried_n_ = kUnknown;
        }
      }
    }
    return std::nullopt;
  }

 private:
  static constexpr int kUnknown = -2;

  char Peek(std::size_t k) const { return i_ + k < text_.size() ? text_[i_ + k] : '\0'; }
  bool BlankAt(std::size_t k) const {
    const char c = Peek(k);
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
  }
  bool PrevIsBlank() const {
    return i_ == 0 || text_[i_ - 1] == ' ' || text_[i_ - 1] == '\t' || text_[i_ - 1] == '\n';
  }
  void Bump() {
    if (text_[i_] == '\n') {
      ++line_;
      col_ = 0;
    } else {
      ++col_;
    }
    ++i_;
  }
  void SkipToEol() {
    while (i_ < text_.size() && text_[i_] != '\n') Bump();
  }
  bool IsDocumentMarker() const {
    return col_ == 0 && (text_.substr(i_, 3) == "---" || text_.substr(i_, 3) == "...") &&
           BlankAt(3);
  }

  // Handles indentation at the start of a line in block context.
  void BeginLine() {
    blank_line_ = false;
    int spaces = 0;
    while (Peek(static_cast<std::size_t>(spaces)) == ' ') ++spaces;
    if (depth_ > 0) return;  // whitespace is insignificant in flow context
    if (IsDocumentMarker()) {
      Bump();
      Bump();
      Bump();
      indent_ = 0;
      line_n_ = kUnknown;
      in_plain_ = false;
      at_start_ = true;
      carried_n_ = -1;
      return;
    }
    for (int k = 0; k < spaces; ++k) Bump();
    const char c = Peek(0);
    // Blank lines fold into a plain scalar; comment lines end it. Neither
    // changes which indentation the next node's parent has.
    if (c == '\n' || c == '\0' || c == '\r' || c == '#') {
      blank_line_ = true;
      if (c == '#') in_plain_ = false;
      return;
    }
    indent_ = spaces;
    line_n_ = kUnknown;
    props_col_ = kUnknown;  // properties on an earlier line belong to a collection
    if (in_plain_ && indent_ > plain_n_) {
      at_start_ = false;  // continuation of a multi-line plain scalar
    } else {
      in_plain_ = false;
      at_start_ = true;
    }
  }

  void EndLine() {
    if (depth_ > 0 || blank_line_) return;
    // A line ending in "key:" or "-" hands its indentation to a node on the
    // next line; that is the parent indentation for the next line's node.
    if (in_plain_ || !at_start_) {
      carried_n_ = kUnknown;
    } else if (line_n_ != kUnknown) {
      carried_n_ = line_n_;
    }  // else only properties: they belong to the next line's node, same parent
  }

  int ParentIndent() const {
    if (line_n_ != kUnknown) return line_n_;
    if (carried_n_ != kUnknown) return carried_n_;
    return indent_ - 1;
  }

  // A node's column includes its properties ("&a key: v" starts at "&").
  void StartToken() {
    token_col_ = props_col_ != kUnknown ? props_col_ : col_;
    props_col_ = kUnknown;
  }

  bool Open() {
    ++depth_;
    at_start_ = true;
    json_like_ = false;
    return depth_ > max_depth_;
  }

  // One significant character in flow context. Returns true if too deep.
  bool FlowChar(char c) {
    prev_plain_ = false;
    switch (c) {
      case '[':
      case '{':
        if (Open()) return true;
        Bump();
        return false;
      case ']':
      case '}':
        --depth_;
        Bump();
        at_start_ = false;
        json_like_ = true;
        in_plain_ = false;
        return false;
      case ',':
        at_start_ = true;
        json_like_ = false;
        Bump();
        return false;
      case ':':
        // Value indicator when followed by a blank or flow indicator, or
        // right after a JSON-like node ("a":1); else part of a plain scalar.
        if (BlankAt(1) || json_like_ ||
            std::string_view(",[]{}").find(Peek(1)) != std::string_view::npos) {
          at_start_ = true;
          json_like_ = false;
        } else {
          at_start_ = false;
          prev_plain_ = true;
        }
        Bump();
        return false;
      default:
        break;
    }
    if (at_start_ && (c == '"' || c == '\'')) {
      SkipQuoted(c);
      at_start_ = false;
      json_like_ = true;
      return false;
    }
    if (at_start_ && (c == '!' || c == '&' || c == '*')) {
      SkipProperty();
      at_start_ = c != '*';
      json_like_ = false;
      return false;
    }
    if (at_start_ && c == '?' && BlankAt(1)) {
      Bump();
      return false;
    }
    at_start_ = false;
    json_like_ = false;
    prev_plain_ = true;
    Bump();
    return false;
  }

  // One significant character in block context. Returns true if too deep;
  // sets *block_scalar when it skipped a block scalar (now at a line start).
  bool BlockChar(char c, bool* block_scalar) {
    prev_plain_ = false;
    if (!at_start_) {
      if (c == ':' && BlankAt(1)) {  // end of an implicit key
        line_n_ = token_col_;
        at_start_ = true;
        in_plain_ = false;
      } else {
        prev_plain_ = in_plain_;
      }
      Bump();
      return false;
    }
    if (c == '[' || c == '{') {
      StartToken();
      if (Open()) return true;
      Bump();
      return false;
    }
    if ((c == '-' || c == '?' || c == ':') && BlankAt(1)) {
      // "&a : v" has an empty key that consists of its properties.
      line_n_ = (c == ':' && props_col_ != kUnknown) ? props_col_ : col_;
      props_col_ = kUnknown;
      Bump();
      return false;
    }
    if (c == '"' || c == '\'') {
      StartToken();
      SkipQuoted(c);
      at_start_ = false;
      return false;
    }
    if (c == '|' || c == '>') {
      props_col_ = kUnknown;
      SkipBlockScalar(ParentIndent());
      *block_scalar = true;
      return false;
    }
    if (c == '!' || c == '&' || c == '*') {
      if (c == '*') {
        StartToken();
      } else if (props_col_ == kUnknown) {
        props_col_ = col_;
      }
      SkipProperty();
      at_start_ = c != '*';
      return false;
    }
    if (c == '%' && col_ == 0) {
      SkipToEol();
      return false;
    }
    // A plain scalar starts; remember what a continuation line must exceed.
    StartToken();
    plain_n_ = ParentIndent();
    in_plain_ = true;
    prev_plain_ = true;
    at_start_ = false;
    Bump();
    return false;
  }

  void SkipQuoted(char quote) {
    Bump();
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (quote == '"' && c == '\\') {
        Bump();
        if (i_ < text_.size()) Bump();
        continue;
      }
      if (c == quote) {
        Bump();
        if (quote == '\'' && Peek(0) == '\'') {  // '' is an escaped quote
          Bump();
          continue;
        }
        return;
      }
      Bump();
    }
  }

  void SkipProperty() {
    while (i_ < text_.size() && !BlankAt(0) &&
           (depth_ == 0 || std::string_view(",[]{}").find(text_[i_]) == std::string_view::npos)) {
      Bump();
    }
  }

  // Skips a block scalar's header and every following line that is blank or
  // indented more than `n`. `n` is never below the real parent indentation,
  // so the scan may stop early (and count more) but never skips structure.
  void SkipBlockScalar(int n) {
    SkipToEol();
    while (i_ < text_.size()) {
      Bump();  // the '\n'
      std::size_t k = 0;
      while (Peek(k) == ' ') ++k;
      std::size_t j = k;
      while (Peek(j) == ' ' || Peek(j) == '\t' || Peek(j) == '\r') ++j;
      const bool blank = Peek(j) == '\n' || Peek(j) == '\0';
      if (!blank && (static_cast<int>(k) <= n || IsDocumentMarker())) return;
      SkipToEol();
    }
  }

  std::string_view text_;
  int max_depth_;
  std::size_t i_ = 0;
  int line_ = 0;
  int col_ = 0;
  int depth_ = 0;
  bool at_start_ = true;
  bool json_like_ = false;
  int indent_ = 0;
  int line_n_ = kUnknown;
  int carried_n_ = -1;
  int token_col_ = 0;
  int props_col_ = kUnknown;  // column of the current node's first property
  bool prev_plain_ = false;   // the last significant character was plain text
  bool blank_line_ = false;   // the current line is blank or only a comment
  bool in_plain_ = false;
  int plain_n_ = -1;
};

// ---------------------------------------------------------------------------
// Event handler building JSON
// ---------------------------------------------------------------------------

struct ConversionError {
  YAML::Mark mark;
  std::string message;
};

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(std::string_view text, const YamlLimits& limits, std::vector<Json>* docs)
      : text_(text), limits_(limits), docs_(docs) {
    // yaml-cpp's Mark::pos is a byte offset after any UTF-8 BOM. It re-encodes
    // UTF-16/32 input, and then offsets do not map back to `text`.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") {
      pos_offset_ = 3;
    } else if (text.size() >= 2 &&
               (text[0] == '\0' || text[1] == '\0' || text.substr(0, 2) == "\xFE\xFF" ||
                text.substr(0, 2) == "\xFF\xFE")) {
      check_quotes_ = false;
    }
  }

  // The innermost open collection, for "unclosed" syntax errors.
  std::optional<YAML::Mark> InnermostOpen() const {
    if (stack_.empty()) return std::nullopt;
    return stack_.back().mark;
  }

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp 0.7 never consumes a token that cannot start a node (a stray
    // "," or a "]" after a complete node, e.g. the comma-first typo
    // "- a\n, b\n- c") and reports empty documents at it forever. A real
    // document consumes at least one token, so a repeated start means that.
    if (mark.pos == last_document_pos_) {
      const std::size_t i = static_cast<std::size_t>(mark.pos) + pos_offset_;
      const bool known = check_quotes_ && i < text_.size();
      throw ConversionError{
          mark, known ? "unexpected '" + std::string(1, text_[i]) + "'" : "unexpected token"};
    }
    last_document_pos_ = mark.pos;
    // Anchors are per document in YAML, and yaml-cpp restarts their ids.
    anchors_.clear();
    anchor_names_.clear();
    stack_.clear();
    root_ = Json();
  }

  void OnDocumentEnd() override {
    if (!root_.is_null()) docs_->push_back(std::move(root_));
    root_ = Json();
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    static const std::string kNullKey = "null";
    Count(mark, 1, 0);
    Complete(mark, anchor, Json(nullptr), kNullKey, 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Count(mark, 1, value.size());
    // yaml-cpp passes raw bytes through; a string that is not UTF-8 would
    // make every later nlohmann::json::dump() of the manifest throw.
    if (!IsValidUtf8(value)) throw ConversionError{mark, "text is not valid UTF-8"};
    if (tag == "!") CheckQuoteClosed(mark);
    Complete(mark, anchor, Resolve(mark, tag, value), value, value.size());
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      // yaml-cpp knows the anchor, so we are still inside the node it names.
      throw ConversionError{mark,
                            "alias *" + anchor_names_[anchor] + " refers to a node containing it"};
    }
    const Anchored& anchored = it->second;
    Count(mark, anchored.nodes, anchored.bytes);
    if (Depth() + anchored.height > limits_.max_depth) DepthError(mark);
    AddToParent(mark, Json(anchored.value), anchored.height,
                anchored.scalar ? &anchored.key_text : nullptr);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, /*is_map=*/false);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, /*is_map=*/true);
  }
  void OnMapEnd() override { Close(); }

  void OnAnchor(const YAML::Mark& /*mark*/, const std::string& name) override {
    pending_anchor_name_ = name;
  }

 private:
  struct Frame {
    Json value;
    bool is_map = false;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    std::size_t first_node = 0;
    std::size_t first_byte = 0;
    int child_height = 0;
    bool has_key = false;
    std::string key;
    std::unordered_map<std::string, int> key_lines;  // for duplicate detection
  };

  struct Anchored {
    Json value;
    std::size_t nodes = 0;
    std::size_t bytes = 0;  // of scalar text
    int height = 0;         // 0 for scalars, else 1 + deepest child
    bool scalar = false;
    std::string key_text;  // the scalar's text, for aliases used as keys
  };

  int Depth() const { return static_cast<int>(stack_.size()); }

  [[noreturn]] void DepthError(const YAML::Mark& mark) const {
    throw ConversionError{mark, "collections nested deeper than max_depth (" +
                                    std::to_string(limits_.max_depth) + ")"};
  }

  // Aliases expand as they are converted, so both counts include every use:
  // nodes stop "billion laughs" trees, bytes stop one long string aliased
  // thousands of times (few nodes, gigabytes of text).
  void Count(const YAML::Mark& mark, std::size_t nodes, std::size_t bytes) {
    node_count_ += nodes;
    if (node_count_ > limits_.max_nodes) {
      throw ConversionError{mark, "more than max_nodes (" + std::to_string(limits_.max_nodes) +
                                      ") nodes; aliases count each time they are used"};
    }
    text_bytes_ += bytes;
    if (text_bytes_ > limits_.max_bytes) {
      throw ConversionError{mark, "more than max_bytes (" + std::to_string(limits_.max_bytes) +
                                      ") bytes of text; aliases count each time they are used"};
    }
  }

  void RememberAnchorName(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) anchor_names_[anchor] = pending_anchor_name_;
  }

  Json Resolve(const YAML::Mark& mark, const std::string& tag, const std::string& value) const {
    if (tag == "?") return ResolvePlain(value);
    if (tag.substr(0, kTagPrefix.size()) != kTagPrefix) return Json(value);  // "!" or custom
    const std::string_view type = std::string_view(tag).substr(kTagPrefix.size());
    const Json resolved = ResolvePlain(value);
    const auto mismatch = [&]() -> ConversionError {
      return ConversionError{mark, "!!" + std::string(type) + " value " + QuoteString(value) +
                                       " is not a valid " + std::string(type)};
    };
    if (type == "null") {
      if (!resolved.is_null()) throw mismatch();
      return resolved;
    }
    if (type == "bool") {
      if (!resolved.is_boolean()) throw mismatch();
      return resolved;
    }
    if (type == "int") {
      if (!resolved.is_number_integer()) throw mismatch();
      return resolved;
    }
    if (type == "float") {
      if (!resolved.is_number()) throw mismatch();
      return Json(resolved.get<double>());
    }
    return Json(value);  // !!str, !!binary, !!timestamp, ...: keep the text
  }

  // yaml-cpp 0.7 accepts a quoted scalar that is never closed and makes the
  // rest of the stream its text, so `image: "nginx:1.25` silently swallows
  // every line after it. The mark says exactly where the scalar starts.
  void CheckQuoteClosed(const YAML::Mark& mark) const {
    if (!check_quotes_ || mark.pos < 0) return;
    std::size_t i = static_cast<std::size_t>(mark.pos) + pos_offset_;
    if (i >= text_.size()) return;
    const char quote = text_[i];
    if (quote != '"' && quote != '\'') return;  // a block scalar, or properties first
    for (++i; i < text_.size(); ++i) {
      if (quote == '"' && text_[i] == '\\') {
        ++i;
      } else if (text_[i] == quote) {
        if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
          ++i;  // '' is an escaped quote
        } else {
          return;
        }
      }
    }
    throw ConversionError{mark, "quoted string is not closed"};
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    if (!stack_.empty() && stack_.back().is_map && !stack_.back().has_key) {
      throw ConversionError{mark, "mapping keys must be scalars"};
    }
    Count(mark, 1, 0);
    if (Depth() + 1 > limits_.max_depth) DepthError(mark);
    RememberAnchorName(anchor);
    Frame frame;
    frame.value = is_map ? Json::object() : Json::array();
    frame.is_map = is_map;
    frame.mark = mark;
    frame.anchor = anchor;
    frame.first_node = node_count_ - 1;
    frame.first_byte = text_bytes_;
    stack_.push_back(std::move(frame));
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    const int height = 1 + frame.child_height;
    if (frame.anchor != YAML::NullAnchor) {
      anchors_[frame.anchor] = Anchored{frame.value,
                                        node_count_ - frame.first_node,
                                        text_bytes_ - frame.first_byte,
                                        height,
                                        false,
                                        {}};
    }
    AddToParent(frame.mark, std::move(frame.value), height, nullptr);
  }

  void Complete(const YAML::Mark& mark, YAML::anchor_t anchor, Json value,
                const std::string& key_text, std::size_t bytes) {
    if (anchor != YAML::NullAnchor) {
      RememberAnchorName(anchor);
      anchors_[anchor] = Anchored{value, 1, bytes, 0, true, key_text};
    }
    AddToParent(mark, std::move(value), 0, &key_text);
  }

  // `key_text` is the node's text when it is a scalar, else null.
  void AddToParent(const YAML::Mark& mark, Json value, int height, const std::string* key_text) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    parent.child_height = std::max(parent.child_height, height);
    if (!parent.is_map) {
      parent.value.get_ref<Json::array_t&>().push_back(std::move(value));
      return;
    }
    if (!parent.has_key) {
      if (key_text == nullptr) throw ConversionError{mark, "mapping keys must be scalars"};
      const auto [it, inserted] = parent.key_lines.emplace(*key_text, mark.line + 1);
      if (!inserted) {
        throw ConversionError{mark, "duplicate key " + QuoteString(*key_text) +
                                        " (first defined at line " + std::to_string(it->second) +
                                        ")"};
      }
      parent.key = *key_text;
      parent.has_key = true;
      return;
    }
    // ordered_map::emplace searches linearly for the key, which makes large
    // mappings quadratic; key_lines already rules out duplicates, so append.
    parent.value.get_ref<Json::object_t&>().emplace_back(std::move(parent.key), std::move(value));
    parent.has_key = false;
  }

  std::string_view text_;
  std::size_t pos_offset_ = 0;
  bool check_quotes_ = true;  // whether marks map to offsets in text_
  int last_document_pos_ = -1;
  const YamlLimits& limits_;
  std::vector<Json>* docs_;
  std::vector<Frame> stack_;
  Json root_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::unordered_map<YAML::anchor_t, std::string> anchor_names_;
  std::string pending_anchor_name_;
  // Over the whole stream: the memory bound is per call.
  std::size_t node_count_ = 0;
  std::size_t text_bytes_ = 0;
};

std::string Location(std::string_view source, int line0, int col0) {
  std::string out(source);
  if (line0 >= 0) out += ":" + std::to_string(line0 + 1) + ":" + std::to_string(col0 + 1);
  return out;
}

Error InvalidAt(std::string_view source, const YAML::Mark& mark, const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput,
                   Location(source, mark.is_null() ? -1 : mark.line, mark.column) + ": " + message);
}

// ---------------------------------------------------------------------------
// Emitter
// ---------------------------------------------------------------------------

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

bool PlainOk(std::string_view s) {
  if (s.empty() || LooksLikeNonString(s)) return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s[0]) != std::string_view::npos) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) {
    return false;
  }
  return PrintableText(s, /*allow_newline=*/false);
}

// A literal block reproduces the string exactly only for well-behaved text:
// printable (no tabs, no \r), at least one non-empty line, no line that is
// only spaces and no trailing spaces (both are easy to lose in editors and
// are ambiguous next to indentation).
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

// Appends the header after an indicator ("key:" / "-") and the lines at
// `content_indent`. The indentation indicator is relative to the parent
// collection, which sits 2 columns left of the content.
void AppendLiteral(std::string_view s, int content_indent, std::string& out) {
  const std::size_t end = s.find_last_not_of('\n');
  const std::size_t trailing = s.size() - end - 1;
  const std::size_t first = s.find_first_not_of('\n');
  out += '|';
  if (s[first] == ' ') out += '2';
  if (trailing == 0) out += '-';
  if (trailing > 1) out += '+';
  out += '\n';
  std::size_t start = 0;
  while (start <= end) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos || nl > end) nl = end + 1;
    const std::string_view line = s.substr(start, nl - start);
    if (!line.empty()) {
      out.append(static_cast<std::size_t>(content_indent), ' ');
      out.append(line);
    }
    out += '\n';
    start = nl + 1;
  }
  // The first trailing newline ended the last line above; keep the rest.
  if (trailing > 1) out.append(trailing - 1, '\n');
}

std::string NumberText(const Json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return ".nan";
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  }
  return v.dump();
}

// Text of a non-container value, or of an empty container, on one line.
std::string InlineScalar(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      return PlainOk(s) ? s : QuoteString(s);
    }
    case Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return NumberText(v);
    case Json::value_t::object:
      return "{}";
    case Json::value_t::array:
      return "[]";
    case Json::value_t::binary:
      return v.dump();  // not produced by the parser; JSON text is valid flow YAML
    case Json::value_t::null:
    case Json::value_t::discarded:
      break;
  }
  return "null";
}

bool IsBlockContainer(const Json& v) {
  return (v.is_object() || v.is_array()) && !v.empty();
}

bool UseLiteral(const Json& v) {
  return v.is_string() && LiteralOk(v.get_ref<const std::string&>());
}

void EmitMapping(const Json& obj, int indent, bool first_inline, std::string& out);
void EmitSequence(const Json& arr, int indent, bool first_inline, std::string& out);

// Emits a node right after "key:" or "-" written at column `indent`.
void EmitAfterIndicator(const Json& v, int indent, bool seq_item, std::string& out) {
  if (IsBlockContainer(v)) {
    // Under a key the nested collection goes on the next lines; after "-" it
    // starts on the same line ("- a: 1", "- - x").
    const bool inline_first = seq_item;
    out += inline_first ? " " : "\n";
    if (v.is_object()) {
      EmitMapping(v, indent + 2, inline_first, out);
    } else {
      EmitSequence(v, indent + 2, inline_first, out);
    }
    return;
  }
  out += ' ';
  if (UseLiteral(v)) {
    AppendLiteral(v.get_ref<const std::string&>(), indent + 2, out);
    return;
  }
  out += InlineScalar(v);
  out += '\n';
}

void EmitMapping(const Json& obj, int indent, bool first_inline, std::string& out) {
  // yaml-cpp (and the YAML spec) limit implicit keys to 1024 characters.
  constexpr std::size_t kMaxImplicitKey = 1000;
  bool first = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!first || !first_inline) out.append(static_cast<std::size_t>(indent), ' ');
    first = false;
    const std::string& key = it.key();
    const std::string key_text = PlainOk(key) ? key : QuoteString(key);
    if (key_text.size() > kMaxImplicitKey) {
      out += "? " + key_text + "\n";
      out.append(static_cast<std::size_t>(indent), ' ');
      out += ':';
    } else {
      out += key_text + ":";
    }
    EmitAfterIndicator(it.value(), indent, /*seq_item=*/false, out);
  }
}

void EmitSequence(const Json& arr, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const Json& item : arr) {
    if (!first || !first_inline) out.append(static_cast<std::size_t>(indent), ' ');
    first = false;
    out += '-';
    EmitAfterIndicator(item, indent, /*seq_item=*/true, out);
  }
}

}  // namespace

Result<std::vector<nlohmann::ordered_json>> ParseYamlDocuments(std::string_view text,
                                                               std::string_view source_name,
                                                               const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return MakeError(ErrorCode::kInvalidInput,
                     std::string(source_name) + ": input is " + std::to_string(text.size()) +
                         " bytes, more than max_bytes (" + std::to_string(limits.max_bytes) + ")");
  }
  if (const auto deep = FlowDepthScanner(text, limits.max_depth).Run()) {
    return MakeError(ErrorCode::kInvalidInput, Location(source_name, deep->first, deep->second) +
                                                   ": collections nested deeper than max_depth (" +
                                                   std::to_string(limits.max_depth) + ")");
  }
  std::vector<Json> docs;
  JsonBuilder builder(text, limits, &docs);
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const ConversionError& e) {
    return InvalidAt(source_name, e.mark, e.message);
  } catch (const YAML::DeepRecursion& e) {
    // Only reachable with max_depth above yaml-cpp's own recursion limit.
    return InvalidAt(source_name, e.mark, "collections nested deeper than yaml-cpp supports");
  } catch (const YAML::Exception& e) {
    std::string message = e.msg;
    // yaml-cpp reports a missing "]" or "}" where the input ends; the
    // collection that was left open is what the user needs to find.
    if (const auto open = builder.InnermostOpen(); open && message.rfind("end of ", 0) == 0) {
      message += " (the collection starting at " + std::to_string(open->line + 1) + ":" +
                 std::to_string(open->column + 1) + " is not closed)";
    }
    return InvalidAt(source_name, e.mark, message);
  } catch (const std::bad_alloc&) {
    return MakeError(ErrorCode::kInternal, std::string(source_name) + ": out of memory");
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInternal, std::string(source_name) + ": " + e.what());
  }
  return docs;
}

std::string EmitYaml(const nlohmann::ordered_json& value) {
  std::string out;
  if (IsBlockContainer(value)) {
    if (value.is_object()) {
      EmitMapping(value, 0, /*first_inline=*/false, out);
    } else {
      EmitSequence(value, 0, /*first_inline=*/false, out);
    }
    return out;
  }
  // At top level the parent indentation is -1, which makes an indentation
  // indicator ambiguous between readers; quote those strings instead.
  if (UseLiteral(value)) {
    const auto& s = value.get_ref<const std::string&>();
    if (s[s.find_first_not_of('\n')] != ' ') {
      AppendLiteral(s, 2, out);
      return out;
    }
  }
  return InlineScalar(value) + "\n";
}

std::string EmitYamlDocuments(const std::vector<nlohmann::ordered_json>& docs) {
  std::string out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) out += "---\n";
    out += EmitYaml(docs[i]);
  }
  return out;
}

std::string EmitYamlFlow(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case Json::value_t::string:
      return QuoteString(value.get_ref<const std::string&>());
    case Json::value_t::object: {
      std::string out = "{";
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (it != value.begin()) out += ", ";
        out += QuoteString(it.key());
        out += ": ";
        out += EmitYamlFlow(it.value());
      }
      return out + "}";
    }
    case Json::value_t::array: {
      std::string out = "[";
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (it != value.begin()) out += ", ";
        out += EmitYamlFlow(*it);
      }
      return out + "]";
    }
    default:
      return InlineScalar(value);
  }
}

}  // namespace powerctl
