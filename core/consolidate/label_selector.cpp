#include "core/consolidate/label_selector.h"

#include <algorithm>
#include <cctype>

namespace powerctl::consolidate {
namespace {

std::string Trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool ValidToken(const std::string& s) {
  if (s.empty() || s.size() > 317) return false;  // prefix (253) + "/" + name (63)
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

bool ValidValue(const std::string& s) {
  return s.empty() || (s.size() <= 63 && ValidToken(s) && s.find('/') == std::string::npos);
}

// Splits at commas outside parentheses: `a in (x,y),b` is two requirements.
std::vector<std::string> SplitTop(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      parts.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return parts;
}

}  // namespace

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const LabelRequirement& r : requirements) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    switch (r.op) {
      case LabelRequirement::Op::kEquals:
      case LabelRequirement::Op::kIn:
        if (!in) return false;
        break;
      case LabelRequirement::Op::kNotEquals:
      case LabelRequirement::Op::kNotIn:
        if (in) return false;
        break;
      case LabelRequirement::Op::kExists:
        if (!has) return false;
        break;
      case LabelRequirement::Op::kNotExists:
        if (has) return false;
        break;
    }
  }
  return true;
}

Result<LabelSelector> ParseLabelSelector(std::string_view text) {
  auto invalid = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput,
                     "label selector \"" + std::string(text.substr(0, 200)) + "\": " + why);
  };
  if (text.size() > kMaxSelectorLength) return invalid("longer than 4096 characters");
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  for (const std::string& part : SplitTop(text)) {
    LabelRequirement r;
    if (part.empty()) return invalid("empty requirement");
    if (part[0] == '!') {
      r.key = Trim(part.substr(1));
      r.op = LabelRequirement::Op::kNotExists;
    } else if (auto ne = part.find("!="); ne != std::string::npos) {
      r.key = Trim(part.substr(0, ne));
      r.op = LabelRequirement::Op::kNotEquals;
      r.values = {Trim(part.substr(ne + 2))};
    } else if (auto eq = part.find('='); eq != std::string::npos) {
      r.key = Trim(part.substr(0, eq));
      r.op = LabelRequirement::Op::kEquals;
      std::size_t from = eq + 1 < part.size() && part[eq + 1] == '=' ? eq + 2 : eq + 1;
      r.values = {Trim(part.substr(from))};
    } else if (auto open = part.find('('); open != std::string::npos) {
      if (part.back() != ')') return invalid("\"" + part + "\": missing )");
      std::string head = Trim(part.substr(0, open));
      auto space = head.find_last_of(" \t");
      if (space == std::string::npos) return invalid("\"" + part + "\": expected in or notin");
      std::string op = Trim(head.substr(space + 1));
      r.key = Trim(head.substr(0, space));
      if (op == "in") {
        r.op = LabelRequirement::Op::kIn;
      } else if (op == "notin") {
        r.op = LabelRequirement::Op::kNotIn;
      } else {
        return invalid("\"" + part + "\": expected in or notin");
      }
      for (const std::string& v : SplitTop(part.substr(open + 1, part.size() - open - 2)))
        r.values.push_back(v);
    } else {
      r.key = part;
      r.op = LabelRequirement::Op::kExists;
    }
    if (!ValidToken(r.key)) return invalid("\"" + r.key + "\" is not a label key");
    for (const std::string& v : r.values)
      if (!ValidValue(v)) return invalid("\"" + v + "\" is not a label value");
    selector.requirements.push_back(std::move(r));
  }
  return selector;
}

}  // namespace powerctl::consolidate
