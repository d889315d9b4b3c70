#pragma once
// A Kubernetes minor version (and optional patch) that powerctl can target.

#include "core/common/result.h"

#include <string>
#include <string_view>

namespace powerctl {

struct KubeVersion {
  int major = 1;
  int minor = 0;
  int patch = -1;  // -1: not given

  static constexpr int kMinMinor = 20;
  static constexpr int kMaxMinor = 34;

  // "1.20", "v1.30.2", "1.29.3-eks-abc" (suffixes after the patch are ignored).
  static Result<KubeVersion> Parse(std::string_view text);

  std::string MinorString() const;  // "1.30"
  std::string ImageTag() const;     // "v1.30.2", or "v1.30.0" when no patch was given
  bool AtLeast(int want_minor) const { return minor >= want_minor; }
  bool operator==(const KubeVersion&) const = default;
};

}  // namespace powerctl
