#include "core/common/kube_version.h"

#include <fmt/format.h>

#include <charconv>
#include <iterator>

namespace powerctl {
namespace {

// Reads a run of digits at `pos`; returns -1 when there is none.
int ReadNumber(std::string_view text, std::size_t& pos) {
  std::size_t start = pos;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  if (pos == start || pos - start > 6) return -1;
  int value = 0;
  std::from_chars(text.data() + start, text.data() + pos, value);
  return value;
}

// Newest patch release of each supported minor line known to this build, from
// https://kubernetes.io/releases/ (docs/reference/kubernetes-releases.md). `ended`: the line is
// past end of life and this is its final patch, so no higher patch exists.
struct ReleaseLine {
  int minor;
  int newest_patch;
  bool ended;
};
constexpr ReleaseLine kReleaseLines[] = {
    {20, 15, true}, {21, 14, true}, {22, 17, true}, {23, 17, true},  {24, 17, true},
    {25, 16, true}, {26, 15, true}, {27, 16, true}, {28, 15, true},  {29, 14, true},
    {30, 14, true}, {31, 14, true}, {32, 13, true}, {33, 10, false}, {34, 9, false},
};
static_assert(std::size(kReleaseLines) == KubeVersion::kMaxMinor - KubeVersion::kMinMinor + 1);

const ReleaseLine& LineOf(int minor) {
  return kReleaseLines[minor - KubeVersion::kMinMinor];  // Parse bounds minor to the table
}

}  // namespace

Result<KubeVersion> KubeVersion::Parse(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("invalid Kubernetes version \"{}\": {}", text, why));
  };
  std::size_t pos = 0;
  if (pos < text.size() && (text[pos] == 'v' || text[pos] == 'V')) ++pos;
  KubeVersion v;
  v.major = ReadNumber(text, pos);
  if (v.major < 0 || pos >= text.size() || text[pos] != '.')
    return invalid("expected MAJOR.MINOR, e.g. 1.30");
  ++pos;
  v.minor = ReadNumber(text, pos);
  if (v.minor < 0) return invalid("expected MAJOR.MINOR, e.g. 1.30");
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    v.patch = ReadNumber(text, pos);
    if (v.patch < 0) return invalid("expected a patch number after the second dot");
  }
  if (pos < text.size() && text[pos] != '-' && text[pos] != '+')
    return invalid("unexpected trailing text");
  if (v.major != 1 || v.minor < kMinMinor || v.minor > kMaxMinor) {
    return invalid(fmt::format("supported versions are 1.{} to 1.{}", kMinMinor, kMaxMinor));
  }
  return v;
}

Result<KubeVersion> KubeVersion::ParseRelease(std::string_view text) {
  POWERCTL_TRY(v, Parse(text));
  if (v.patch >= 0 && v.LineEnded() && v.patch > v.NewestKnownPatch()) {
    return MakeError(
        ErrorCode::kInvalidInput,
        fmt::format("Kubernetes {} does not exist: the {} line ended with {}.{}; "
                    "give {} for its newest patch",
                    text, v.MinorString(), v.MinorString(), v.NewestKnownPatch(), v.MinorString()));
  }
  return v;
}

int KubeVersion::NewestKnownPatch() const {
  return LineOf(minor).newest_patch;
}

bool KubeVersion::LineEnded() const {
  return LineOf(minor).ended;
}

std::string KubeVersion::UnknownPatchWarning() const {
  if (patch <= NewestKnownPatch()) return "";
  return fmt::format(
      "Kubernetes {}.{} is newer than the newest {} release this powerctl knows ({}.{}); make "
      "sure the kube-scheduler image v{}.{} exists",
      MinorString(), patch, MinorString(), MinorString(), NewestKnownPatch(), MinorString(), patch);
}

std::vector<std::string> KubeVersion::SupportedMinors() {
  std::vector<std::string> minors;
  for (int minor = kMinMinor; minor <= kMaxMinor; ++minor) {
    minors.push_back(fmt::format("1.{}", minor));
  }
  return minors;
}

std::string KubeVersion::MinorString() const {
  return fmt::format("{}.{}", major, minor);
}

std::string KubeVersion::ImageTag() const {
  return fmt::format("v{}.{}.{}", major, minor, patch < 0 ? NewestKnownPatch() : patch);
}

}  // namespace powerctl
