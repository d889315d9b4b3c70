#include "core/common/names.h"

#include <cctype>
#include <string_view>

namespace powerctl {
namespace {

bool IsAlnumLower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// The number of digits at s[i...].
std::size_t Digits(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  while (i + n < s.size() && IsDigit(s[i + n])) ++n;
  return n;
}

// One path component of an image repository, [a-z0-9]+([._-]+[a-z0-9]+)*: lower-case letters,
// digits and separators, starting and ending with a letter or digit.
bool IsRepositoryComponent(std::string_view s) {
  if (s.empty() || !IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s) {
    if (!IsAlnumLower(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// [a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*, scanned once. (These
// were std::regex, which recurses per character: long input overflowed the stack.)
bool IsRepository(std::string_view repository) {
  std::size_t start = 0;
  for (bool first = true;; first = false) {
    std::size_t slash = repository.find('/', start);
    std::string_view part = repository.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (first) {
      if (std::size_t colon = part.find(':'); colon != std::string_view::npos) {
        std::string_view port = part.substr(colon + 1);
        if (port.empty() || Digits(port, 0) != port.size()) return false;
        part = part.substr(0, colon);
      }
    }
    if (!IsRepositoryComponent(part)) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// Kubernetes' quantity grammar, ^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(suffix)?$ with the binary
// (Ki..Ei), decimal (m, k, M, G, T, P, E) or exponent (e3, E-2) suffixes.
bool IsQuantity(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t whole = Digits(s, i);
  i += whole;
  std::size_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    fraction = Digits(s, i + 1);
    i += 1 + fraction;
  }
  if (whole == 0 && fraction == 0) return false;
  const std::string_view suffix = s.substr(i);
  if (suffix.empty()) return true;
  for (std::string_view known :
       {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E"}) {
    if (suffix == known) return true;
  }
  if (suffix[0] != 'e' && suffix[0] != 'E') return false;
  std::size_t j = 1;
  if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) ++j;
  const std::size_t exponent = Digits(suffix, j);
  return exponent > 0 && j + exponent == suffix.size();
}

}  // namespace

std::string ValidateDnsLabel(const std::string& value) {
  if (value.empty()) return "must not be empty";
  if (value.size() > 63) return "must be at most 63 characters";
  for (char c : value) {
    if (!IsAlnumLower(c) && c != '-') {
      return "must consist of lower-case letters, digits and '-' (RFC 1123 label)";
    }
  }
  if (value.front() == '-' || value.back() == '-')
    return "must start and end with a letter or digit";
  return "";
}

std::string ValidateDnsSubdomain(const std::string& value) {
  if (value.empty()) return "must not be empty";
  if (value.size() > 253) return "must be at most 253 characters";
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t dot = value.find('.', start);
    if (dot == std::string::npos) dot = value.size();
    std::string part = value.substr(start, dot - start);
    if (!ValidateDnsLabel(part).empty()) {
      return "must consist of lower-case letters, digits, '-' and '.' (RFC 1123 subdomain)";
    }
    start = dot + 1;
  }
  return "";
}

std::string ValidateLabelValue(const std::string& value) {
  if (value.empty()) return "";
  if (value.size() > 63) return "must be at most 63 characters";
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (char c : value) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') {
      return "must consist of letters, digits, '-', '_' and '.'";
    }
  }
  if (!alnum(value.front()) || !alnum(value.back()))
    return "must start and end with a letter or digit";
  return "";
}

std::string ValidateQuantity(const std::string& value) {
  // Kubernetes' quantity grammar: signed decimal number, then a binary (Ki..Ei),
  // decimal (m, k, M, G, T, P, E) or exponent (e3) suffix.
  if (value.size() > 64) return "is not a resource quantity (too long)";
  if (!IsQuantity(value)) return "is not a resource quantity (e.g. 100m, 0.5, 64Mi)";
  return "";
}

bool IsMetricName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string ValidateImageReference(const std::string& value) {
  if (value.empty()) return "must not be empty";
  if (value.size() > 512) return "is longer than 512 characters";
  for (char c : value) {
    if (std::isspace(static_cast<unsigned char>(c))) return "must not contain spaces";
  }
  std::string repository = value.substr(0, value.find('@'));
  std::size_t slash = repository.rfind('/');
  std::size_t colon = repository.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repository = repository.substr(0, colon);
  }
  if (!IsRepository(repository)) {
    return "is not an image reference (e.g. registry.example.com/powerctl:0.1.0)";
  }
  return "";
}

}  // namespace powerctl
