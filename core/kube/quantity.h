#pragma once
// Kubernetes resource quantities ("250m", "1", "1500000n", "12345u", "129Mi", "1.5Gi",
// "1e3", "2E"), as metrics.k8s.io reports usage and as node capacity is written.
// The value is held exactly (decimal digits, a power of ten and a power of 1024), so
// "1500000n" of CPU is exactly 1.5 millicores, not a float approximation of it.

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace powerctl::kube {

struct Quantity {
  bool negative = false;
  std::uint64_t digits = 0;  // significant decimal digits, at most 18
  int exponent10 = 0;        // value = digits * 10^exponent10 * 1024^binary_power
  int binary_power = 0;      // 0..6 for "", Ki, Mi, Gi, Ti, Pi, Ei

  // ceil(value / 10^scale), as Kubernetes' ScaledValue: Scaled(-3) is MilliValue(),
  // Scaled(-9) nano units, Scaled(0) Value(). kInvalidInput when it does not fit in int64.
  Result<std::int64_t> Scaled(int scale) const;
  double ToDouble() const;
};

// The grammar of k8s.io/apimachinery resource.Quantity: an optionally signed decimal number,
// then one suffix: n u m "" k M G T P E (decimal SI), Ki Mi Gi Ti Pi Ei (binary SI), or an
// exponent e<int>/E<int>. kInvalidInput naming the text for anything else.
Result<Quantity> ParseQuantity(std::string_view text);

// CPU in cores, exact to the nanocore before the conversion to double.
Result<double> ParseCpuCores(std::string_view text);
// Memory (or any count) in bytes, rounded up to a whole byte as Kubernetes does.
Result<double> ParseBytes(std::string_view text);

}  // namespace powerctl::kube
