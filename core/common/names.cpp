#include "core/common/names.h"

#include <cctype>
#include <regex>

namespace powerctl {
namespace {

bool IsAlnumLower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
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
  // std::regex recurses per character: bound the input before matching.
  if (value.size() > 64) return "is not a resource quantity (too long)";
  static const std::regex kQuantity(
      R"(^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$)");
  if (!std::regex_match(value, kQuantity))
    return "is not a resource quantity (e.g. 100m, 0.5, 64Mi)";
  return "";
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
  static const std::regex kRepo(
      R"(^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$)");
  if (!std::regex_match(repository, kRepo)) {
    return "is not an image reference (e.g. registry.example.com/powerctl:0.1.0)";
  }
  return "";
}

}  // namespace powerctl
