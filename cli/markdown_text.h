#pragma once
// Text helpers for the Markdown references `powerctl docs` writes.

#include <string>
#include <string_view>

namespace powerctl::cli {

// Escapes what Markdown would read as markup (emphasis, HTML, links, table cells), leaving
// `code spans` as they are: help texts quote commands that way.
std::string MarkdownText(std::string_view text);

// `text` as a code span (one line), safe inside a table cell.
std::string MarkdownCode(std::string_view text);

// One table cell: escaped, on one line.
std::string MarkdownCell(std::string_view text);

// GitHub's anchor for a heading: "powerctl label nodes" -> "powerctl-label-nodes".
std::string MarkdownAnchor(std::string_view heading);

}  // namespace powerctl::cli
