#pragma once
// A label selector as kubectl's `-l` takes it, matched against a node's labels where no API
// server does it for us (a snapshot): equality (`k=v`, `k==v`, `k!=v`), existence (`k`,
// `!k`) and sets (`k in (a,b)`, `k notin (a,b)`), requirements joined by commas.

#include "core/common/result.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::consolidate {

struct LabelRequirement {
  enum class Op { kEquals, kNotEquals, kExists, kNotExists, kIn, kNotIn };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;
};

struct LabelSelector {
  std::vector<LabelRequirement> requirements;  // all must hold; none selects everything
  bool Matches(const std::map<std::string, std::string>& labels) const;
};

inline constexpr std::size_t kMaxSelectorLength = 4096;

// kInvalidInput naming the selector for text kubectl would not accept, or longer than
// kMaxSelectorLength.
Result<LabelSelector> ParseLabelSelector(std::string_view text);

}  // namespace powerctl::consolidate
