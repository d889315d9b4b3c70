#include "core/common/jsonpath.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace powerctl {
namespace {

Error ParseError(std::size_t pos, std::string_view what) {
  return MakeError(ErrorCode::kInvalidInput,
                   fmt::format("template position {}: {}", pos + 1, what));
}

// Field names as kubectl's parser takes them after a dot: letters, digits, _, - and /.
bool IsFieldChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '/';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<JsonPath> Parse() {
    JsonPath path;
    bool ended = false;
    POWERCTL_TRY(nodes, Sequence(0, ended));
    path.nodes = std::move(nodes);
    return path;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  bool Consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpaces() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t')) ++pos_;
  }

  // Text and actions up to the end of the template (depth 0) or the `{end}` of a range.
  Result<std::vector<JsonPathNode>> Sequence(int depth, bool& ended) {
    std::vector<JsonPathNode> nodes;
    std::string text;
    auto flush_text = [&] {
      if (text.empty()) return;
      JsonPathNode node;
      node.text = std::move(text);
      nodes.push_back(std::move(node));
      text.clear();
    };
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c == '\\' && pos_ + 1 < text_.size()) {
        text += Unescape(text_[pos_ + 1], /*in_quotes=*/false);
        pos_ += 2;
        continue;
      }
      if (c == '}') return ParseError(pos_, "unexpected \"}\" (write \\} for a literal brace)");
      if (c != '{') {
        text += c;
        ++pos_;
        continue;
      }
      flush_text();
      const std::size_t open = pos_++;
      SkipSpaces();
      if (Consume("end")) {
        SkipSpaces();
        if (!Consume("}")) return ParseError(pos_, "expected \"}\" after end");
        if (depth == 0) return ParseError(open, "{end} without a {range}");
        ended = true;
        return nodes;
      }
      if (Consume("range ") || Consume("range\t")) {
        if (depth + 1 > kJsonPathMaxRangeDepth) {
          return ParseError(open,
                            fmt::format("ranges nest deeper than {}", kJsonPathMaxRangeDepth));
        }
        JsonPathNode range;
        range.kind = JsonPathNode::Kind::kRange;
        POWERCTL_TRY(ok, Path(range));
        (void)ok;
        bool body_ended = false;
        POWERCTL_TRY(body, Sequence(depth + 1, body_ended));
        if (!body_ended) return ParseError(open, "{range} without an {end}");
        range.body = std::move(body);
        nodes.push_back(std::move(range));
        continue;
      }
      if (Peek() == '"' || Peek() == '\'') {
        POWERCTL_TRY(literal, Quoted());
        SkipSpaces();
        if (!Consume("}")) return ParseError(pos_, "expected \"}\" after the quoted text");
        text = std::move(literal);
        continue;
      }
      JsonPathNode node;
      node.kind = JsonPathNode::Kind::kPath;
      POWERCTL_TRY(ok, Path(node));
      (void)ok;
      nodes.push_back(std::move(node));
    }
    flush_text();
    return nodes;
  }

  // \n, \t, \r; in quotes also \" and \'; \\, \{ and \} everywhere; any other pair as written.
  static std::string Unescape(char c, bool in_quotes) {
    switch (c) {
      case 'n':
        return "\n";
      case 't':
        return "\t";
      case 'r':
        return "\r";
      case '\\':
      case '{':
      case '}':
        return std::string(1, c);
      case '"':
      case '\'':
        if (in_quotes) return std::string(1, c);
        break;
      default:
        break;
    }
    return std::string{'\\', c};
  }

  Result<std::string> Quoted() {
    const std::size_t start = pos_;
    const char quote = text_[pos_++];
    std::string out;
    while (!AtEnd()) {
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c == '\\' && !AtEnd()) {
        out += Unescape(text_[pos_++], /*in_quotes=*/true);
        continue;
      }
      out += c;
    }
    return ParseError(start, "unterminated quoted text");
  }

  Result<std::int64_t> Integer() {
    const std::size_t start = pos_;
    if (Peek() == '-') ++pos_;
    while (!AtEnd() && std::isdigit(static_cast<unsigned char>(Peek())) != 0) ++pos_;
    std::int64_t value = 0;
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || end != last || first == last) {
      return ParseError(start, "expected a number");
    }
    return value;
  }

  // `[...]` after its `[`: a quoted key, *, an index or a slice.
  Result<JsonPathStep> Bracket() {
    JsonPathStep step;
    SkipSpaces();
    if (Peek() == '?') return ParseError(pos_, "filters [?(...)] are not supported");
    if (Peek() == '"' || Peek() == '\'') {
      POWERCTL_TRY(key, Quoted());
      step.field = std::move(key);
    } else if (Consume("*")) {
      step.kind = JsonPathStep::Kind::kWildcard;
    } else {
      std::optional<std::int64_t> first;
      if (Peek() != ':') {
        POWERCTL_TRY(n, Integer());
        first = n;
      }
      SkipSpaces();
      if (Consume(":")) {
        step.kind = JsonPathStep::Kind::kSlice;
        step.slice_start = first;
        SkipSpaces();
        if (Peek() != ']') {
          POWERCTL_TRY(second, Integer());
          step.slice_end = second;
        }
      } else {
        step.kind = JsonPathStep::Kind::kIndex;
        step.index = first.value_or(0);
      }
    }
    SkipSpaces();
    if (Peek() == ',') return ParseError(pos_, "unions [a,b] are not supported");
    if (!Consume("]")) return ParseError(pos_, "expected \"]\"");
    return step;
  }

  // A path up to and including the action's closing brace.
  Result<Ok> Path(JsonPathNode& node) {
    SkipSpaces();
    if (Consume("$")) {
      node.from_document = true;
    } else {
      Consume("@");
    }
    while (!AtEnd()) {
      const char c = Peek();
      if (c == '}' || c == ' ' || c == '\t') break;
      if (Consume("..")) return ParseError(pos_ - 2, "recursive descent (..) is not supported");
      if (Consume(".")) {
        if (Consume("*")) {
          node.steps.push_back({JsonPathStep::Kind::kWildcard, "", 0, {}, {}});
          continue;
        }
        const std::size_t start = pos_;
        while (!AtEnd() && IsFieldChar(Peek())) ++pos_;
        // `{.}` is the current element itself.
        if (pos_ == start) continue;
        node.steps.push_back({JsonPathStep::Kind::kField,
                              std::string(text_.substr(start, pos_ - start)),
                              0,
                              {},
                              {}});
        continue;
      }
      if (Consume("[")) {
        POWERCTL_TRY(step, Bracket());
        node.steps.push_back(std::move(step));
        continue;
      }
      if (IsFieldChar(c) && node.steps.empty() && !node.from_document) {
        // kubectl accepts `{metadata.name}` as `{.metadata.name}`.
        const std::size_t start = pos_;
        while (!AtEnd() && IsFieldChar(Peek())) ++pos_;
        node.steps.push_back({JsonPathStep::Kind::kField,
                              std::string(text_.substr(start, pos_ - start)),
                              0,
                              {},
                              {}});
        continue;
      }
      return ParseError(pos_, fmt::format("unexpected \"{}\" in a path", c));
    }
    SkipSpaces();
    if (AtEnd()) return ParseError(pos_, "unclosed \"{\"");
    if (!Consume("}")) return ParseError(pos_, "expected \"}\"");
    return Ok{};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

using Values = std::vector<const nlohmann::json*>;

void Step(const JsonPathStep& step, const nlohmann::json& value, Values& out) {
  switch (step.kind) {
    case JsonPathStep::Kind::kField:
      if (value.is_object()) {
        if (auto it = value.find(step.field); it != value.end()) out.push_back(&*it);
      }
      return;
    case JsonPathStep::Kind::kWildcard:
      if (value.is_array() || value.is_object()) {
        for (const auto& item : value) out.push_back(&item);
      }
      return;
    case JsonPathStep::Kind::kIndex: {
      if (!value.is_array()) return;
      const auto size = static_cast<std::int64_t>(value.size());
      const std::int64_t i = step.index < 0 ? size + step.index : step.index;
      if (i >= 0 && i < size) out.push_back(&value[static_cast<std::size_t>(i)]);
      return;
    }
    case JsonPathStep::Kind::kSlice: {
      if (!value.is_array()) return;
      const auto size = static_cast<std::int64_t>(value.size());
      auto clamp = [size](std::int64_t i) {
        return std::clamp(i < 0 ? size + i : i, std::int64_t{0}, size);
      };
      const std::int64_t begin = clamp(step.slice_start.value_or(0));
      const std::int64_t end = clamp(step.slice_end.value_or(size));
      for (std::int64_t i = begin; i < end; ++i) out.push_back(&value[static_cast<std::size_t>(i)]);
      return;
    }
  }
}

Values Evaluate(const JsonPathNode& node, const nlohmann::json& document,
                const nlohmann::json& current) {
  Values values{node.from_document ? &document : &current};
  for (const JsonPathStep& step : node.steps) {
    Values next;
    for (const nlohmann::json* value : values) Step(step, *value, next);
    values = std::move(next);
  }
  return values;
}

class Renderer {
 public:
  explicit Renderer(const nlohmann::json& document) : document_(document) {}

  Status Render(const std::vector<JsonPathNode>& nodes, const nlohmann::json& current) {
    for (const JsonPathNode& node : nodes) {
      switch (node.kind) {
        case JsonPathNode::Kind::kText:
          POWERCTL_CHECK_OK(Append(node.text));
          break;
        case JsonPathNode::Kind::kPath: {
          bool first = true;
          for (const nlohmann::json* value : Evaluate(node, document_, current)) {
            if (!first) POWERCTL_CHECK_OK(Append(" "));
            first = false;
            POWERCTL_CHECK_OK(
                Append(value->is_string() ? value->get_ref<const std::string&>() : value->dump()));
          }
          break;
        }
        case JsonPathNode::Kind::kRange:
          for (const nlohmann::json* value : Evaluate(node, document_, current)) {
            POWERCTL_CHECK_OK(Render(node.body, *value));
          }
          break;
      }
    }
    return OkStatus();
  }

  std::string Take() { return std::move(out_); }

 private:
  Status Append(std::string_view text) {
    if (out_.size() + text.size() > kJsonPathMaxOutput) {
      return MakeError(ErrorCode::kInvalidInput,
                       fmt::format("jsonpath output passes {} MiB", kJsonPathMaxOutput >> 20));
    }
    out_ += text;
    return OkStatus();
  }

  const nlohmann::json& document_;
  std::string out_;
};

}  // namespace

Result<JsonPath> ParseJsonPath(std::string_view text) {
  if (text.size() > kJsonPathMaxTemplate) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("template longer than {} bytes", kJsonPathMaxTemplate));
  }
  if (text.empty()) return MakeError(ErrorCode::kInvalidInput, "empty template");
  return Parser(text).Parse();
}

Result<std::string> RenderJsonPath(const JsonPath& path, const nlohmann::json& document) {
  Renderer renderer(document);
  POWERCTL_CHECK_OK(renderer.Render(path.nodes, document));
  return renderer.Take();
}

}  // namespace powerctl
