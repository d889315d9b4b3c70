#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace powerctl {

// Levenshtein distance, case-insensitive; used for "did you mean" hints.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The first of `candidates` (strings or string views) closest to `word` at a distance below
// `limit`, or "" when none is that close: the "did you mean" of every hint.
template <typename Candidates>
std::string ClosestMatch(std::string_view word, const Candidates& candidates, std::size_t limit) {
  std::string best;
  for (const auto& candidate : candidates) {
    const std::string_view text(candidate);
    if (std::size_t d = EditDistance(word, text); d < limit) {
      limit = d;
      best = std::string(text);
    }
  }
  return best;
}

}  // namespace powerctl
