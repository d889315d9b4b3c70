#include "core/common/kube_version.h"

#include <fmt/format.h>

#include <charconv>

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

std::string KubeVersion::MinorString() const {
  return fmt::format("{}.{}", major, minor);
}

std::string KubeVersion::ImageTag() const {
  return fmt::format("v{}.{}.{}", major, minor, patch < 0 ? 0 : patch);
}

}  // namespace powerctl
