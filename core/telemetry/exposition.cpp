#include "core/telemetry/exposition.h"

#include "core/common/encoding.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <system_error>
#include <utility>

namespace powerctl::telemetry {
namespace {

bool IsNameStart(char c, bool colon_ok) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (colon_ok && c == ':');
}
bool IsNameChar(char c, bool colon_ok) {
  return IsNameStart(c, colon_ok) || std::isdigit(static_cast<unsigned char>(c));
}

// Untrusted text in error messages is cut short so one bad line cannot flood a log, and
// never inside a character, so the message stays valid UTF-8.
std::string Quote(std::string_view text) {
  return "\"" + ExcerptForMessage(text, 40) + "\"";
}

}  // namespace

std::optional<double> ParseGoFloat(std::string_view token) {
  bool negative = false;
  std::string_view rest = token;
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
    negative = rest[0] == '-';
    rest.remove_prefix(1);
  }
  if (rest.empty() || rest[0] == '+' || rest[0] == '-') return std::nullopt;
  std::string word = AsciiLower(rest);
  if (word == "inf" || word == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
  // from_chars would also take "nan(...)" and "inf" prefixes; the checks above own those.
  if (!std::isdigit(static_cast<unsigned char>(rest[0])) && rest[0] != '.') return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (end != rest.data() + rest.size()) return std::nullopt;
  // Out of range: Go returns +/-Inf (or 0 for underflow) with an error; treat as invalid.
  if (ec != std::errc()) return std::nullopt;
  return negative ? -value : value;
}

namespace {

std::optional<std::int64_t> ParseTimestamp(std::string_view token) {
  if (!token.empty() && token[0] == '+') token.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size()) {
    return std::nullopt;
  }
  return value;
}

// Walks one line; every method reports problems through Fail(), which prefixes the line number.
class LineParser {
 public:
  LineParser(std::string_view line, std::size_t number) : line_(line), number_(number) {}

  Error Fail(const std::string& what) const {
    return MakeError(ErrorCode::kInvalidInput, "line " + std::to_string(number_) + ": " + what);
  }
  void SkipBlanks() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
  }
  bool AtEnd() const { return pos_ >= line_.size(); }
  char Peek() const { return AtEnd() ? '\0' : line_[pos_]; }
  std::string_view Rest() const { return line_.substr(std::min(pos_, line_.size())); }

  std::string_view Name(bool colon_ok) {
    std::size_t start = pos_;
    if (AtEnd() || !IsNameStart(line_[pos_], colon_ok)) return {};
    while (pos_ < line_.size() && IsNameChar(line_[pos_], colon_ok)) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  std::string_view Token() {
    std::size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '\t') ++pos_;
    return line_.substr(start, pos_ - start);
  }

  // A quoted label value after the opening '"'; escapes \\ \" \n as in the format.
  Result<std::string> QuotedValue(std::string_view label) {
    std::string out;
    while (pos_ < line_.size()) {
      char c = line_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char next = Peek();
      ++pos_;
      if (next == '\\' || next == '"') {
        out += next;
      } else if (next == 'n') {
        out += '\n';
      } else {
        return Fail("invalid escape sequence in the value of label " + Quote(label) +
                    " (only \\\\, \\\" and \\n are allowed)");
      }
    }
    return Fail("unterminated value of label " + Quote(label));
  }

  Status Labels(ExpositionSample& sample, std::size_t max_labels) {
    ++pos_;  // '{'
    for (;;) {
      SkipBlanks();
      if (Peek() == '}') {
        ++pos_;
        return OkStatus();
      }
      std::string_view label = Name(false);
      if (label.empty()) {
        return Fail(AtEnd() ? "unterminated label set of " + Quote(sample.name)
                            : "invalid label name at " + Quote(Rest()));
      }
      SkipBlanks();
      if (Peek() != '=') return Fail("expected '=' after label name " + Quote(label));
      ++pos_;
      SkipBlanks();
      if (Peek() != '"') return Fail("expected '\"' to start the value of label " + Quote(label));
      ++pos_;
      POWERCTL_TRY(value, QuotedValue(label));
      if (sample.labels.size() >= max_labels) {
        return Fail("more than " + std::to_string(max_labels) + " labels on " + Quote(sample.name));
      }
      if (!sample.labels.emplace(std::string(label), std::move(value)).second) {
        return Fail("duplicate label " + Quote(label) + " on " + Quote(sample.name));
      }
      SkipBlanks();
      if (Peek() == ',') {
        ++pos_;
      } else if (AtEnd()) {
        return Fail("unterminated label set of " + Quote(sample.name));
      } else if (Peek() != '}') {
        return Fail("expected ',' or '}' after the value of label " + Quote(label));
      }
    }
  }

  Result<ExpositionSample> Sample(std::size_t max_labels) {
    ExpositionSample sample;
    sample.name = std::string(Name(true));
    if (sample.name.empty()) return Fail("invalid metric name at " + Quote(Rest()));
    SkipBlanks();
    if (Peek() == '{') POWERCTL_CHECK_OK(Labels(sample, max_labels));
    SkipBlanks();
    std::string_view value_token = Token();
    if (value_token.empty()) return Fail("missing value for " + Quote(sample.name));
    std::optional<double> value = ParseGoFloat(value_token);
    if (!value) return Fail("invalid value " + Quote(value_token) + " for " + Quote(sample.name));
    sample.value = *value;
    SkipBlanks();
    if (!AtEnd()) {
      std::string_view ts_token = Token();
      sample.timestamp_ms = ParseTimestamp(ts_token);
      if (!sample.timestamp_ms) {
        return Fail("invalid timestamp " + Quote(ts_token) + " for " + Quote(sample.name));
      }
      SkipBlanks();
      if (!AtEnd()) return Fail("unexpected text after the timestamp: " + Quote(Rest()));
    }
    return sample;
  }

 private:
  std::string_view line_;
  std::size_t number_;
  std::size_t pos_ = 0;
};

std::string UnescapeHelp(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == 'n')) {
      out += text[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};

// "# HELP name text", "# TYPE name type"; every other comment is ignored.
Status ParseComment(LineParser& p, Exposition& out) {
  p.SkipBlanks();  // after '#'
  std::string_view keyword = p.Token();
  if (keyword != "HELP" && keyword != "TYPE") return OkStatus();
  p.SkipBlanks();
  std::string name(p.Name(true));
  if (name.empty()) return p.Fail("invalid metric name in " + std::string(keyword) + " line");
  if (!p.AtEnd() && p.Peek() != ' ' && p.Peek() != '\t') {
    return p.Fail("invalid metric name in " + std::string(keyword) + " line");
  }
  if (keyword == "HELP") {
    p.SkipBlanks();
    if (out.help.count(name) != 0) return p.Fail("second HELP line for " + Quote(name));
    out.help[name] = UnescapeHelp(p.Rest());
    return OkStatus();
  }
  p.SkipBlanks();
  std::string_view type = p.Token();
  p.SkipBlanks();
  if (kTypes.count(type) == 0 || !p.AtEnd()) {
    return p.Fail("unknown metric type " + Quote(type) + " for " + Quote(name));
  }
  if (!out.types.emplace(name, std::string(type)).second) {
    return p.Fail("second TYPE line for " + Quote(name));
  }
  return OkStatus();
}

}  // namespace

Result<Exposition> ParseExposition(std::string_view text, const ExpositionLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return MakeError(ErrorCode::kInvalidInput, "exposition of " + std::to_string(text.size()) +
                                                   " bytes is larger than the limit of " +
                                                   std::to_string(limits.max_bytes));
  }
  Exposition out;
  std::size_t number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser p(line, number);
    p.SkipBlanks();
    if (p.AtEnd()) continue;
    if (p.Peek() == '#') {
      LineParser comment(p.Rest().substr(1), number);
      POWERCTL_CHECK_OK(ParseComment(comment, out));
      continue;
    }
    if (out.samples.size() >= limits.max_samples) {
      return p.Fail("more than " + std::to_string(limits.max_samples) + " samples");
    }
    POWERCTL_TRY(sample, p.Sample(limits.max_labels));
    out.samples.push_back(std::move(sample));
  }
  return out;
}

std::vector<const ExpositionSample*> FindSamples(const Exposition& exposition,
                                                 std::string_view name,
                                                 const std::map<std::string, std::string>& match) {
  std::vector<const ExpositionSample*> found;
  for (const ExpositionSample& sample : exposition.samples) {
    if (sample.name != name) continue;
    bool all = true;
    for (const auto& [key, value] : match) {
      auto it = sample.labels.find(key);
      if (it == sample.labels.end() || it->second != value) {
        all = false;
        break;
      }
    }
    if (all) found.push_back(&sample);
  }
  return found;
}

}  // namespace powerctl::telemetry
