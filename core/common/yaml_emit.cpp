// EmitYaml, EmitYamlDocuments and EmitYamlFlow: deterministic block-style
// (and one-line flow) YAML from JSON values.

#include "core/common/yaml.h"
#include "core/common/yaml_internal.h"

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl {
namespace {

using detail::Json;
using detail::LiteralOk;
using detail::PlainOk;
using detail::QuoteString;

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