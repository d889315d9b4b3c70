#pragma once
// A strict Mustache subset for rendering YAML manifests.
//
// Values are spliced in as JSON text, which every YAML reader parses back to
// exactly the same value: a string like `yes`, `0755`, `a: b` or one with a
// newline cannot change type or break the surrounding YAML, which plain
// Mustache (HTML escaping) would allow.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace powerctl::manifests {

// Renders `text` with values from `context`.
//  {{name}} / {{a.b.c}}     -> the value as JSON on one line, also a valid YAML flow node:
//                              strings JSON-quoted ("x"), numbers/bools/null as JSON,
//                              objects/arrays as {"k": v, ...} / [a, b] (see EmitYamlFlow).
//  {{{name}}} or {{& name}} -> raw: strings unquoted, anything else as above.
//  {{#name}}...{{/name}}    -> section: an array renders once per element with the element
//                              pushed on the context stack ({{.}} is the element); an object
//                              once with it pushed; true, a non-empty string or any number once
//                              (pushed); false, null, "", an empty array or a missing name:
//                              skipped.
//  {{^name}}...{{/name}}    -> inverted section: rendered exactly when the section would be
//  skipped.
//  {{! comment }}           -> nothing (may span lines).
// Names are "." or dot-separated parts of [A-Za-z0-9_-]; whitespace inside the braces is
// ignored. The first part resolves against the context stack innermost first; the
// remaining parts walk objects from there only (Mustache rules).
// Standalone lines: a line holding only whitespace and one section, inverted, close or
// comment tag is removed entirely, newline included, so YAML indentation is unaffected.
// Strict: {{x}} or {{{x}}} that does not resolve is an error
// "<template_name>:<line>: unknown variable \"x\""; unclosed, mismatched or stray section
// tags, unterminated tags, bad names, partials ({{>x}}) and delimiter changes ({{=x y=}})
// are errors with the line. Sections nest at most 100 deep, and rendering stops with an
// error after 1,000,000 steps (tags and text pieces visited, list elements iterated) or
// 64 MiB of output, since nested sections over lists multiply. All errors are
// ErrorCode::kInvalidInput.
Result<std::string> RenderTemplate(std::string_view template_name, std::string_view text,
                                   const nlohmann::ordered_json& context);

}  // namespace powerctl::manifests
