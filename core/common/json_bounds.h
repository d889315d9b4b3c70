#pragma once
// Bounded parsing of JSON that comes from another process or machine (API server, Prometheus,
// model servers, exec credential plugins).
//
// nlohmann::json's parser is iterative, but copying, comparing and dumping a value recurse once
// per nesting level, and so does our own code that walks a document: a 1 MiB body of "[" would
// overflow the stack long after the parse succeeded. Its memory is also several times the text
// (about 10x for Kubernetes lists). So untrusted text is checked first, by a linear scan that
// only tracks strings and brackets, and parsed only when it is within the limits.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace powerctl {

struct JsonLimits {
  int max_depth = 64;                // nested arrays/objects; a scalar document is depth 0
  std::size_t max_bytes = 64 << 20;  // the text (HttpClient's default body cap)
};

// Model servers, Prometheus and exec plugins answer a few levels deep.
inline constexpr JsonLimits kDefaultJsonLimits{};

// Kubernetes objects nest deeper than other answers: a CRD's openAPIV3Schema in a List with its
// managedFields is about 25 levels, and third-party CRDs more. 128 leaves room for those and
// still keeps recursion over the value shallow. Lists are paged, so one body stays well under
// the byte limit.
inline constexpr JsonLimits kKubeJsonLimits{128, 64 << 20};

// Why `text` exceeds `limits` ("nested deeper than 64 levels at byte 812", "is 70000000 bytes,
// more than 67108864"), or nullopt when it is within them. Syntax is not checked: brackets
// inside strings are skipped, and unbalanced closers are left to the parser. Linear time,
// no allocation.
std::optional<std::string> JsonBoundsViolation(std::string_view text,
                                               const JsonLimits& limits = kDefaultJsonLimits);

// nlohmann::json::parse(text, callback, /*allow_exceptions=*/false) after the bounds check:
// a discarded value (is_discarded()) when `text` is out of bounds or not valid JSON. Never
// throws: out of memory also gives a discarded value.
nlohmann::json ParseJsonBounded(std::string_view text,
                                const JsonLimits& limits = kDefaultJsonLimits,
                                const nlohmann::json::parser_callback_t& callback = nullptr);

}  // namespace powerctl
