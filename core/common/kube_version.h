#pragma once
// A Kubernetes minor version (and optional patch) that powerctl can target.

#include "core/common/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace powerctl {

struct KubeVersion {
  int major = 1;
  int minor = 0;
  int patch = -1;  // -1: not given

  static constexpr int kMinMinor = 20;
  static constexpr int kMaxMinor = 34;

  // "1.20", "v1.30.2", "1.29.3-eks-abc" (suffixes after the patch are ignored). Checks the
  // form and the supported range only: a running API server's version is taken as it is.
  static Result<KubeVersion> Parse(std::string_view text);
  // A version a user chose (powerctl.yaml, --kube-version): Parse, and a patch must exist —
  // "1.30.99" is refused because the 1.30 line ended with 1.30.14.
  static Result<KubeVersion> ParseRelease(std::string_view text);

  // The newest patch release of this minor line that this build knows of, and whether the
  // line has ended (its newest patch is its final one).
  int NewestKnownPatch() const;
  bool LineEnded() const;
  // A patch newer than the newest known in a line that may still get releases: "" or a
  // warning that the image may not exist.
  std::string UnknownPatchWarning() const;

  // "1.20" ... "1.34", oldest first: what --kube-version offers.
  static std::vector<std::string> SupportedMinors();

  std::string MinorString() const;  // "1.30"
  // "v1.30.2"; with no patch given, the newest known patch of the line ("v1.30.14"): the
  // most-fixed release, not the least-fixed ".0".
  std::string ImageTag() const;
  bool AtLeast(int want_minor) const { return minor >= want_minor; }
  bool operator==(const KubeVersion&) const = default;
};

}  // namespace powerctl
