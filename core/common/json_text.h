#pragma once
// JSON text appended directly to a string, for the few documents written once per request or
// per scheduled pod (an extender answer, a decision record): building an nlohmann tree to
// dump it allocated a node per value and was most of their cost. Output is compact JSON that
// any parser reads; it is not byte-for-byte what nlohmann's dump() writes (key order differs).

#include "core/common/json_scan.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace powerctl {

// `text` escaped as a JSON string, invalid UTF-8 replaced by U+FFFD (as nlohmann's dump()
// with the replace handler does).
void AppendEscapedJsonString(std::string& out, std::string_view text);

// A JSON string. Plain printable ASCII (node names, most reasons) is copied as it is; anything
// else is escaped. Inline: it runs for every node of an answer.
inline void AppendJsonString(std::string& out, std::string_view text) {
  if (FindJsonStringSpecial(text, 0, /*ascii_only=*/true) != text.size()) {
    AppendEscapedJsonString(out, text);
    return;
  }
  // One append, not three, for strings of usual length.
  if (char quoted[130]; text.size() + 2 <= sizeof quoted) {
    quoted[0] = '"';
    std::copy(text.begin(), text.end(), quoted + 1);
    quoted[text.size() + 1] = '"';
    out.append(quoted, text.size() + 2);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// A JSON number that reads back as exactly `value` (the shortest such form); null for NaN and
// the infinities, which JSON cannot hold.
void AppendJsonNumber(std::string& out, double value);
void AppendJsonNumber(std::string& out, std::int64_t value);

}  // namespace powerctl
