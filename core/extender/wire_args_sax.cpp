#include "core/extender/wire_internal.h"

#include <new>
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

}  // namespace

bool ParseArgsFast(std::string_view body, ArgsDocument& out) {
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

}  // namespace powerctl::extender::internal
