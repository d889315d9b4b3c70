#include "cli/markdown_text.h"

#include <cctype>

namespace powerctl::cli {

std::string MarkdownText(std::string_view text) {
  std::string out;
  bool in_code = false;
  for (char c : text) {
    if (c == '`') {
      in_code = !in_code;
      out += c;
      continue;
    }
    if (!in_code && (c == '\\' || c == '*' || c == '_' || c == '[' || c == ']' || c == '|')) {
      out += '\\';
      out += c;
    } else if (!in_code && c == '<') {
      out += "&lt;";
    } else if (!in_code && c == '>') {
      out += "&gt;";
    } else if (in_code && c == '|') {
      out += "\\|";  // a table cell ends at any unescaped |, even inside a code span
    } else {
      out += c;
    }
  }
  return out;
}

std::string MarkdownCode(std::string_view text) {
  std::string body;
  for (char c : text) {
    if (c == '\n') {
      body += ' ';
    } else if (c == '|') {
      body += "\\|";
    } else {
      body += c;
    }
  }
  // A span holding backticks needs a longer fence.
  std::string fence = body.find('`') == std::string::npos ? "`" : "``";
  std::string pad = fence.size() > 1 ? " " : "";
  return fence + pad + body + pad + fence;
}

std::string MarkdownCell(std::string_view text) {
  std::string out = MarkdownText(text);
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

std::string MarkdownAnchor(std::string_view heading) {
  std::string out;
  for (char c : heading) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (c == ' ' || c == '-') {
      out += '-';
    } else if (c == '_') {
      out += '_';
    }
  }
  return out;
}

}  // namespace powerctl::cli
