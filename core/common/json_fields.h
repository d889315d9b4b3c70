#pragma once
// Exception-free reads of API response fields. nlohmann's operator[], at() and get<> throw
// on a missing key or a type mismatch, and an unexpected response must become an Error or
// a default, never an exception escaping the client.

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace powerctl {

// The value at a path of object keys, or nullptr.
inline const nlohmann::json* FindField(const nlohmann::json& value,
                                       std::initializer_list<std::string_view> path) {
  const nlohmann::json* current = &value;
  for (std::string_view key : path) {
    if (!current->is_object()) return nullptr;
    auto it = current->find(key);
    if (it == current->end()) return nullptr;
    current = &*it;
  }
  return current;
}

// The string at `path`, or "" when it is missing or not a string.
inline std::string StringField(const nlohmann::json& value,
                               std::initializer_list<std::string_view> path) {
  const nlohmann::json* field = FindField(value, path);
  return field != nullptr && field->is_string() ? field->get<std::string>() : std::string();
}

// The integer at `path`, or `fallback`.
inline long IntField(const nlohmann::json& value, std::initializer_list<std::string_view> path,
                     long fallback = 0) {
  const nlohmann::json* field = FindField(value, path);
  return field != nullptr && field->is_number_integer() ? field->get<long>() : fallback;
}

// Serialises without throwing: invalid UTF-8 in a string is replaced rather than raising
// nlohmann::json::type_error.
inline std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace powerctl
