// The flow-depth pre-scan (see FlowDepthScanner in yaml_prescan.h).

#include "core/common/yaml_prescan.h"

namespace powerctl::detail {

std::optional<std::pair<int, int>> FlowDepthScanner::Run() {
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

void FlowDepthScanner::BeginLine() {
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

void FlowDepthScanner::EndLine() {
  if (depth_ > 0 || blank_line_) return;
  // A line ending in "key:" or "-" hands its indentation to a node on the
  // next line; that is the parent indentation for the next line's node.
  if (in_plain_ || !at_start_) {
    carried_n_ = kUnknown;
  } else if (line_n_ != kUnknown) {
    carried_n_ = line_n_;
  }  // else only properties: they belong to the next line's node, same parent
}

bool FlowDepthScanner::FlowChar(char c) {
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

bool FlowDepthScanner::BlockChar(char c, bool* block_scalar) {
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

void FlowDepthScanner::SkipQuoted(char quote) {
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

void FlowDepthScanner::SkipProperty() {
  while (i_ < text_.size() && !BlankAt(0) &&
         (depth_ == 0 || std::string_view(",[]{}").find(text_[i_]) == std::string_view::npos)) {
    Bump();
  }
}

void FlowDepthScanner::SkipBlockScalar(int n) {
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

}  // namespace powerctl::detail
