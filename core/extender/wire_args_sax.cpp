#include "core/common/json_scan.h"
#include "core/extender/wire_internal.h"

#include <new>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace powerctl::extender::internal {
namespace {

using nlohmann::json;

// A SAX handler that builds the document like nlohmann's DOM parser, except the top-level
// "NodeNames" array, whose strings are moved straight into `names`. In NodeNames mode that
// array is nearly the whole body (5,000 names are ~60 KB): building it as a JSON array and
// copying it out again was a tenth of a 5,000-node prioritize.
//
// It gives up (returns false, `gave_up` set) on anything the general decoder words an error
// for or resolves by Go's rules: NodeNames that is neither null nor an array of strings, a
// second NodeNames, or a key equal to it only ignoring case. The caller then decodes the
// body the general way, so errors and precedence stay exactly as documented in wire.h.
class ArgsSax {
 public:
  json root;
  std::vector<std::string> names;
  bool names_present = false;
  bool gave_up = false;

  bool null() { return Value(nullptr); }
  bool boolean(bool value) { return Value(value); }
  bool number_integer(json::number_integer_t value) { return Value(value); }
  bool number_unsigned(json::number_unsigned_t value) { return Value(value); }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) {
    return Value(value);
  }
  bool string(json::string_t& value) {
    if (in_names_) {
      names.push_back(std::move(value));
      return true;
    }
    return Value(std::move(value));
  }
  bool binary(json::binary_t& /*value*/) { return GiveUp(); }  // not produced by JSON text

  bool start_object(std::size_t /*elements*/) {
    if (in_names_) return GiveUp();
    return Open(json::object());
  }
  bool key(json::string_t& key) {
    if (stack_.size() == 1) {
      if (key == kNamesKey) {
        if (seen_names_) return GiveUp();
        seen_names_ = true;
        expect_names_ = true;
        return true;
      }
      if (EqualsIgnoringAsciiCase(key, kNamesKey)) return GiveUp();
    }
    key_ = std::move(key);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    if (expect_names_) {
      expect_names_ = false;
      in_names_ = true;
      names_present = true;
      return true;
    }
    if (in_names_) return GiveUp();
    return Open(json::array());
  }
  bool end_array() {
    if (in_names_) {
      in_names_ = false;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return GiveUp();
  }

 private:
  static constexpr const char* kNamesKey = "NodeNames";

  bool GiveUp() {
    gave_up = true;
    return false;
  }

  // Where the next value goes: the root, the end of the open array, or the pending key.
  json* Slot() {
    if (stack_.empty()) return &root;
    json& top = *stack_.back();
    if (top.is_array()) return &top.emplace_back();
    return &top[std::move(key_)];
  }

  template <typename T>
  bool Value(T&& value) {
    if (expect_names_) {
      expect_names_ = false;
      // "NodeNames": null is the same as absent; any other scalar is an error to word.
      return json(value).is_null() ? true : GiveUp();
    }
    if (in_names_) return GiveUp();
    *Slot() = std::forward<T>(value);
    return true;
  }

  bool Open(json container) {
    if (expect_names_) return GiveUp();  // "NodeNames": {...}
    json* slot = Slot();
    *slot = std::move(container);
    stack_.push_back(slot);
    return true;
  }

  std::vector<json*> stack_;
  std::string key_;
  bool seen_names_ = false;
  bool expect_names_ = false;
  bool in_names_ = false;
};

bool IsJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t SkipSpace(std::string_view body, std::size_t i) {
  while (i < body.size() && IsJsonSpace(body[i])) ++i;
  return i;
}

// The index after the string that opens at body[i] (a quote), or npos when it does not end.
// `plain`: the string has no escapes, control bytes or non-ASCII bytes, so its raw bytes are
// its value.
std::size_t SkipString(std::string_view body, std::size_t i, bool* plain) {
  *plain = true;
  for (++i; i < body.size(); ++i) {
    i = FindJsonStringSpecial(body, i, /*ascii_only=*/true);
    if (i == body.size()) break;
    const auto c = static_cast<unsigned char>(body[i]);
    if (c == '"') return i + 1;
    if (c == '\\') {
      *plain = false;
      ++i;  // the escaped byte cannot end the string
    } else if (c < 0x20 || c >= 0x80) {
      *plain = false;
    }
  }
  return std::string_view::npos;
}

// A plain array of plain strings at body[i] (a '['): the names, and the index after it.
std::optional<std::size_t> PlainStringArray(std::string_view body, std::size_t i,
                                            std::vector<std::string>& names) {
  i = SkipSpace(body, i + 1);
  if (i < body.size() && body[i] == ']') return i + 1;
  while (i < body.size() && body[i] == '"') {
    bool plain = false;
    const std::size_t end = SkipString(body, i, &plain);
    if (end == std::string_view::npos || !plain) return std::nullopt;
    names.emplace_back(body.substr(i + 1, end - i - 2));
    i = SkipSpace(body, end);
    if (i < body.size() && body[i] == ']') return i + 1;
    if (i >= body.size() || body[i] != ',') return std::nullopt;
    i = SkipSpace(body, i + 1);
  }
  return std::nullopt;
}

// Where the root object's "NodeNames" value is, when it is an array of plain strings: the
// SAX parser need not see it (nlohmann's lexer reads a byte at a time, and 5,000 names are a
// fifth of a 5,000-node prioritize). Only a key spelled exactly so counts; any other
// spelling, a second one or a malformed body is left to the SAX parse, which decides as
// before. The scan need not validate: it removes only a well-formed array from a place a
// value stands, so the rest parses (or fails) exactly as the whole body would.
struct NamesArray {
  std::size_t begin = 0;  // the '['
  std::size_t end = 0;    // after the ']'
  std::vector<std::string> names;
};

std::optional<NamesArray> FindPlainNodeNames(std::string_view body) {
  std::size_t i = SkipSpace(body, 0);
  if (i >= body.size() || body[i] != '{') return std::nullopt;
  int depth = 0;
  bool expect_key = false;
  while (i < body.size()) {
    const char c = body[i];
    if (c == '"') {
      bool plain = false;
      const std::size_t end = SkipString(body, i, &plain);
      if (end == std::string_view::npos) return std::nullopt;
      const bool key = depth == 1 && expect_key;
      expect_key = false;
      if (key && body.substr(i, end - i) == "\"NodeNames\"") {
        std::size_t colon = SkipSpace(body, end);
        if (colon >= body.size() || body[colon] != ':') return std::nullopt;
        std::size_t value = SkipSpace(body, colon + 1);
        if (value >= body.size() || body[value] != '[') return std::nullopt;
        NamesArray found;
        found.begin = value;
        std::optional<std::size_t> after = PlainStringArray(body, value, found.names);
        if (!after) return std::nullopt;
        found.end = *after;
        return found;
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      expect_key = c == '{' && depth == 1;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return std::nullopt;
    } else if (c == ',' && depth == 1) {
      expect_key = true;
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace

bool ParseArgsSax(std::string_view body, ArgsDocument& out) {
  ArgsSax sax;
  try {
    if (!json::sax_parse(body, &sax) || sax.gave_up || !sax.root.is_object()) return false;
  } catch (const json::exception&) {
    return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
  out.root = std::move(sax.root);
  out.names = std::move(sax.names);
  out.names_present = sax.names_present;
  return true;
}

bool ParseArgsFast(std::string_view body, ArgsDocument& out) {
  std::optional<NamesArray> names = FindPlainNodeNames(body);
  if (!names) return ParseArgsSax(body, out);
  std::string rest;
  rest.reserve(body.size() - (names->end - names->begin) + 2);
  rest.append(body.substr(0, names->begin)).append("[]").append(body.substr(names->end));
  if (!ParseArgsSax(rest, out)) return false;
  out.names = std::move(names->names);
  return true;
}

}  // namespace powerctl::extender::internal
