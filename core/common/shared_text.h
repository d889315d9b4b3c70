#pragma once
// An immutable string whose copies share one buffer. Telemetry readings carry where they came
// from and why they are missing; across 5,000 nodes those texts are mostly the same few
// ("Prometheus at http://…", "no sensor named …"), and each reading is copied from the
// telemetry snapshot into every prepared node. Held as std::string, each copy was a heap block
// of its own; as SharedText a copy is a reference count.

#include <fmt/format.h>
#include <nlohmann/json_fwd.hpp>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace powerctl {

class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT(google-explicit-constructor): a string is a text
      : text_(text.empty() ? nullptr : std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT

  // "" when empty. Valid while this or a copy lives.
  const std::string& str() const { return text_ ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the string
  bool empty() const { return !text_; }
  std::size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  bool starts_with(std::string_view prefix) const { return str().starts_with(prefix); }

  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.text_ == b.text_ || a.str() == b.str();
  }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> text_;
};

std::string operator+(const SharedText& a, std::string_view b);
std::string operator+(std::string_view a, const SharedText& b);
std::ostream& operator<<(std::ostream& out, const SharedText& text);  // gtest prints with it
void to_json(nlohmann::json& j, const SharedText& text);

}  // namespace powerctl

template <>
struct fmt::formatter<powerctl::SharedText> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(const powerctl::SharedText& text, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(text.str(), ctx);
  }
};
