#pragma once
// Internal to the YAML reader (core/common/yaml_*.cpp): a lexer-level scan for
// flow collections nested too deep, run before yaml-cpp sees the text.

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace powerctl::detail {

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
  std::optional<std::pair<int, int>> Run();

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
  void BeginLine();
  void EndLine();

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
  bool FlowChar(char c);

  // One significant character in block context. Returns true if too deep;
  // sets *block_scalar when it skipped a block scalar (now at a line start).
  bool BlockChar(char c, bool* block_scalar);

  void SkipQuoted(char quote);
  void SkipProperty();

  // Skips a block scalar's header and every following line that is blank or
  // indented more than `n`. `n` is never below the real parent indentation,
  // so the scan may stop early (and count more) but never skips structure.
  void SkipBlockScalar(int n);

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

}  // namespace powerctl::detail
