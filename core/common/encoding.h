#pragma once
#include <string>
#include <string_view>

namespace powerctl {

std::string Base64Encode(std::string_view data);
std::string Sha256Hex(std::string_view data);

}  // namespace powerctl
