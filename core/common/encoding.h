#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace powerctl {

std::string Base64Encode(std::string_view data);
std::string Sha256Hex(std::string_view data);
// A-Z to a-z, every other byte as it is (protocol tokens, header values, label text).
std::string AsciiLower(std::string_view text);

// Untrusted text (a peer's value, a response body) shortened for an error message. A plain
// substr can cut inside a UTF-8 character, and the message then makes nlohmann::json's strict
// dump() throw wherever it is served (/readyz, /v1/decisions answered 500). So: at most
// max_bytes bytes of the result come from the text, cut only between characters, and "..."
// is appended when something was left out; bytes that are not UTF-8 become '?' and control
// characters (C0, DEL, C1) a space. The result is always one line of valid UTF-8; valid text
// without control characters that fits is returned unchanged.
std::string ExcerptForMessage(std::string_view text, std::size_t max_bytes);

// `text` cut to at most `max_bytes` on a UTF-8 character boundary, ending in "…" (U+2026, 3
// bytes) when cut.
std::string TruncateUtf8(std::string text, std::size_t max_bytes);

}  // namespace powerctl
