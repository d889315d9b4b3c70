#pragma once
// YAML <-> JSON for manifests and config: a bounded, strict reader on top of
// yaml-cpp's event parser, and a small deterministic block-style writer.
//
// Everything inside powerctl works on nlohmann::ordered_json (the API server
// speaks JSON, and ordered_json keeps keys in document order so output reads
// like the input). YAML is only the file format at the edges.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl {

// Bounds that keep a hostile or broken file from exhausting memory or time.
struct YamlLimits {
  int max_depth = 64;               // nested collections, counted from the document root
  std::size_t max_nodes = 200000;   // converted nodes over the whole stream, aliases expanded
  std::size_t max_bytes = 8 << 20;  // the input, and separately all scalar text, aliases expanded
};

// Parses a (multi-document) YAML stream into JSON values.
//
// Plain scalars resolve by the YAML 1.2 core schema: null, Null, NULL, ~ and
// empty -> null; true/True/TRUE/false/False/FALSE -> bool; decimal, 0x hex and
// 0o octal integers -> integer (beyond int64: uint64, then double for decimal;
// out-of-range hex/octal stay strings); floats including .inf/.nan -> number.
// Two deliberate departures, both to read manifests the way kubectl (YAML 1.1,
// go-yaml) does where the two disagree silently:
//  * an integer with a leading zero (0644, -0755) is octal, so
//    `defaultMode: 0644` means 420, as it does for kubectl, not 644;
//  * yes/no/on/off/y/n stay strings (1.2), which kubectl would make bools;
//    EmitYaml quotes them so both readers agree on our output.
// Quoted and block (| >) scalars are always strings. An explicit core tag
// (!!str, !!int, !!float, !!bool, !!null) forces that type (error if the text
// does not fit); other tags are ignored and the scalar stays a string.
// Mapping keys are the key's text (`1: a` -> key "1"; a null key -> "null").
//
// Documents that are empty or null (a trailing `---`, only comments, `null`)
// are skipped, as kubectl skips them.
//
// Errors are ErrorCode::kInvalidInput with "<source>:<line>:<col>: <message>"
// (1-based; columns count bytes): YAML syntax errors, a quoted string that is
// never closed (yaml-cpp alone would swallow the rest of the file), text that
// is not valid UTF-8, duplicate keys (naming the key and the line
// of its first use), non-scalar keys, undefined or self-referencing aliases,
// and exceeding a limit (the message names it). Aliases are expanded as they
// are converted and count against max_nodes and max_bytes every time they
// are used, which stops "billion laughs" documents and a long string aliased
// many times early.
Result<std::vector<nlohmann::ordered_json>> ParseYamlDocuments(std::string_view text,
                                                               std::string_view source_name,
                                                               const YamlLimits& limits = {});

// Emits one document as block-style YAML (no leading "---"), deterministic,
// keys in the json's order, sequences indented under their key.
//
// A string is written plain only when every YAML 1.1 and 1.2 reader gets the
// same string back: not empty; nothing that resolves to null/bool/number in
// either version (so "true", "yes", "on", "~", "1.0", "0x1F", "0755",
// "12:30", "2024-01-01", "=", "<<" are quoted; in practice anything starting
// with a digit, or with +, - or . before a digit); no leading indicator
// (- ? : , [ ] { } # & * ! | > ' " % @ `) or "..."; no leading/trailing
// space; no ": ", " #" or trailing ':'; no control or line-break characters.
// Otherwise it is double-quoted with JSON escapes (plus \u escapes for
// characters YAML 1.1 treats as line breaks, so U+2028 survives kubectl).
// Multi-line strings use a literal block: `|`, `|-` without a trailing
// newline, `|+` with more than one, and an indentation indicator when the
// first line starts with a space; strings a literal block cannot carry
// exactly (e.g. \r, tabs, whitespace-only lines, trailing spaces) are
// double-quoted instead. Empty containers are {} and []; sequences of
// mappings use the compact "- key: v" form. Integers are written as is,
// floats in shortest round-trip form, non-finite ones as .inf/-.inf/.nan.
// Invalid UTF-8 in strings is replaced by U+FFFD.
//
// For any value v that is not null at top level, has valid UTF-8 strings and
// fits the default limits, ParseYamlDocuments(EmitYaml(v)) == {v}, with
// types, key order and the sign of -0.0 kept (NaN comes back as NaN).
std::string EmitYaml(const nlohmann::ordered_json& value);

// Emits several documents separated by "---\n" (an empty list gives "").
std::string EmitYamlDocuments(const std::vector<nlohmann::ordered_json>& docs);

// Emits `value` on one line as JSON text (", " and ": " separators) that is
// also a valid YAML flow node for 1.1 and 1.2 readers, with strings quoted as
// in EmitYaml. Used where a value is spliced into YAML text (templates).
// Non-finite floats are written .inf/-.inf/.nan (YAML, not JSON).
std::string EmitYamlFlow(const nlohmann::ordered_json& value);

}  // namespace powerctl
