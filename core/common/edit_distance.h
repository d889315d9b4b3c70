#pragma once
#include <cstddef>
#include <string_view>

namespace powerctl {

// Levenshtein distance, case-insensitive; used for "did you mean" hints.
std::size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace powerctl
