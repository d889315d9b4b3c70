#include "core/common/shared_text.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace powerctl {

std::string operator+(const SharedText& a, std::string_view b) {
  std::string out;
  out.reserve(a.size() + b.size());
  out += a.str();
  out += b;
  return out;
}

std::string operator+(std::string_view a, const SharedText& b) {
  std::string out;
  out.reserve(a.size() + b.size());
  out += a;
  out += b.str();
  return out;
}

std::ostream& operator<<(std::ostream& out, const SharedText& text) {
  return out << text.str();
}

void to_json(nlohmann::json& j, const SharedText& text) {
  j = text.str();
}

}  // namespace powerctl
