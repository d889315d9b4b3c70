#pragma once
// Shared between wire.cpp and wire_args_sax.cpp; not part of the wire API.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::extender::internal {

inline bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// An ExtenderArgs body parsed with the top-level NodeNames array taken out as strings.
struct ArgsDocument {
  nlohmann::json root;             // an object, without the "NodeNames" key
  std::vector<std::string> names;  // NodeNames, in order
  bool names_present = false;      // NodeNames was an array (not null or absent)
};

// The fast path of DecodeExtenderArgs. False when the body needs the general decoder: not
// valid JSON, not an object, or a NodeNames it would word an error for or resolve by Go's
// case-insensitive rules. The caller checks the nesting depth first.
// The names of a plain NodeNames array (no escapes, ASCII) are taken out before the SAX parse,
// which then sees an empty array in their place.
bool ParseArgsFast(std::string_view body, ArgsDocument& out);
// The same with every byte through the SAX parser: what ParseArgsFast must equal (the
// extender_request_fuzzer compares them).
bool ParseArgsSax(std::string_view body, ArgsDocument& out);

}  // namespace powerctl::extender::internal
