#pragma once
// Internal to the YAML reader and writer (core/common/yaml_*.cpp): the scalar
// and text helpers that both sides share. Not part of the public API; use
// core/common/yaml.h.
//
//   yaml_scalars.cpp       plain scalar resolution (YAML 1.2 core schema)
//   yaml_quoting.cpp       UTF-8 checks and when/how emitted strings are quoted
//   yaml_prescan.cpp       flow-depth pre-scan (yaml_prescan.h)
//   yaml_json_builder.cpp  yaml-cpp events -> JSON (yaml_json_builder.h)
//   yaml_parse.cpp         ParseYamlDocuments
//   yaml_emit.cpp          EmitYaml, EmitYamlDocuments, EmitYamlFlow

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace powerctl::detail {

using Json = nlohmann::ordered_json;

inline bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// ---------------------------------------------------------------------------
// yaml_scalars.cpp
// ---------------------------------------------------------------------------

// Resolves a plain scalar's text by the core schema (null, bool, integer,
// float, else string), reading leading-zero integers as octal like YAML 1.1.
Json ResolvePlain(std::string_view s);

// ---------------------------------------------------------------------------
// yaml_quoting.cpp
// ---------------------------------------------------------------------------

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Double-quoted scalar with JSON escapes. JSON's escape set is a subset of
// YAML's, so the text is valid as both (the template engine relies on this).
std::string QuoteString(std::string_view s);

// Whether `s` can be written as a plain scalar that every YAML 1.1 and 1.2
// reader reads back as the same string.
bool PlainOk(std::string_view s);

// A literal block reproduces the string exactly only for well-behaved text:
// printable (no tabs, no \r), at least one non-empty line, no line that is
// only spaces and no trailing spaces (both are easy to lose in editors and
// are ambiguous next to indentation).
bool LiteralOk(std::string_view s);

}  // namespace powerctl::detail
