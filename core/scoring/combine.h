#pragma once
// Combining per-node score components into the 0..10 integer the extender's prioritize answers.
//
// A component is one scorer's opinion of one node: a value in 0..10 (10 = best) and a stable
// reason, e.g. {"power", 7.5, "+3.0 W (lowest +1.0 W, highest +9.0 W)"}. Components are named
// (kPower, kPolicy, kRealUsage); each is optional per node (a scorer that is off, or has
// nothing to say about a node, simply contributes none).
//
// final = round_half_up( Σ w_c·v_c / Σ w_c ) over the present components whose weight w_c
// (ScoringSettings power_weight, policy_weight, real_usage_weight) is > 0 and whose value is
// finite; values are clamped to 0..10 first, the result to 0..10. Half up means 6.5 -> 7
// (with a 1e-9 allowance so 6.4999999999 from summing binary fractions also gives 7). When no
// component counts, the node gets ScoringSettings.unknown_score. Every component, counted or
// not, is kept so `explain` can show them.

#include "core/config/config.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace powerctl::scoring {

inline constexpr std::string_view kPower = "power";
inline constexpr std::string_view kPolicy = "policy";
inline constexpr std::string_view kRealUsage = "realUsage";
inline constexpr double kMaxComponentValue = 10.0;

struct Component {
  std::string name;
  double value = 0;  // 0..10, 10 = best
  std::string reason;

  bool operator==(const Component&) const = default;
};

// A node's components, held inline: a prioritize builds one list per candidate node, and a
// vector's heap block per node was a fifth of a 5,000-node call's allocations. Holds up to
// kCapacity (one per known kind); push_back refuses more and says so. Only the components
// held are constructed, so an empty list (a filter verdict's) costs no more than a vector.
class ComponentList {
 public:
  static constexpr std::size_t kCapacity = 3;

  ComponentList() = default;
  ComponentList(std::initializer_list<Component> components) {
    for (const Component& c : components) push_back(c);
  }
  ComponentList(const ComponentList& other) {
    for (const Component& c : other) push_back(c);
  }
  ComponentList(ComponentList&& other) noexcept {
    for (Component& c : other) push_back(std::move(c));
  }
  ComponentList& operator=(const ComponentList& other) {
    if (this != &other) {
      clear();
      for (const Component& c : other) push_back(c);
    }
    return *this;
  }
  ComponentList& operator=(ComponentList&& other) noexcept {
    if (this != &other) {
      clear();
      for (Component& c : other) push_back(std::move(c));
    }
    return *this;
  }
  ~ComponentList() { clear(); }

  // False (and the list unchanged) when it already holds kCapacity components.
  bool push_back(Component c) {
    if (size_ == kCapacity) return false;
    new (data() + size_) Component(std::move(c));
    ++size_;
    return true;
  }
  void clear() {
    for (Component& c : *this) c.~Component();
    size_ = 0;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Component& operator[](std::size_t i) { return data()[i]; }
  const Component& operator[](std::size_t i) const { return data()[i]; }
  Component* begin() { return data(); }
  Component* end() { return data() + size_; }
  const Component* begin() const { return data(); }
  const Component* end() const { return data() + size_; }

  bool operator==(const ComponentList& other) const {
    return std::equal(begin(), end(), other.begin(), other.end());
  }

 private:
  Component* data() { return std::launder(reinterpret_cast<Component*>(storage_)); }
  const Component* data() const {
    return std::launder(reinterpret_cast<const Component*>(storage_));
  }

  alignas(Component) std::byte storage_[kCapacity * sizeof(Component)];
  std::size_t size_ = 0;
};

struct CombinedScore {
  std::int64_t score = 0;    // 0..10
  ComponentList components;  // as given, in order
};

// The weight of a named component; 0 for a name it does not know.
double ComponentWeight(std::string_view name, const config::ScoringSettings& settings);

CombinedScore Combine(ComponentList components, const config::ScoringSettings& settings);
// Combine's score alone, for callers that keep the components where they are.
std::int64_t CombinedScoreOf(const ComponentList& components,
                             const config::ScoringSettings& settings);

// Linear, not rank-based: `lowest` -> 10, `highest` -> 0, in between proportionally; when
// highest - lowest <= tolerance every value gets 10. Shared by the power and real-usage scorers.
double InverseMinMax(double value, double lowest, double highest, double tolerance);

}  // namespace powerctl::scoring
