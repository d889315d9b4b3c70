#include "core/common/kube_version.h"

#include <fmt/format.h>

#include <charconv>
#include <iterator>

namespace powerctl {
namespace {

using std::chrono::day;
using std::chrono::month;
using std::chrono::year;
using std::chrono::year_month_day;

// Reads a run of digits at `pos`; returns -1 when there is none.
int ReadNumber(std::string_view text, std::size_t& pos) {
  std::size_t start = pos;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  if (pos == start || pos - start > 6) return -1;
  int value = 0;
  std::from_chars(text.data() + start, text.data() + pos, value);
  return value;
}

constexpr year_month_day Date(int y, unsigned m, unsigned d) {
  return year_month_day{year{y}, month{m}, day{d}};
}

// Every line from the oldest supported to the newest this build knows, from
// https://kubernetes.io/releases/ and the end-of-life list of kubernetes/website
// (docs/reference/kubernetes-releases.md keeps the same table, and a test keeps them equal).
constexpr KubeReleaseLine kReleaseLines[] = {
    {20, 15, true, Date(2020, 12, 8), Date(2022, 2, 28)},
    {21, 14, true, Date(2021, 4, 8), Date(2022, 6, 28)},
    {22, 17, true, Date(2021, 8, 4), Date(2022, 12, 8)},
    {23, 17, true, Date(2021, 12, 7), Date(2023, 2, 28)},
    {24, 17, true, Date(2022, 5, 3), Date(2023, 7, 28)},
    {25, 16, true, Date(2022, 8, 23), Date(2023, 10, 28)},
    {26, 15, true, Date(2022, 12, 9), Date(2024, 2, 28)},
    {27, 16, true, Date(2023, 4, 11), Date(2024, 7, 16)},
    {28, 15, true, Date(2023, 8, 15), Date(2024, 10, 22)},
    {29, 14, true, Date(2023, 12, 13), Date(2025, 2, 28)},
    {30, 14, true, Date(2024, 4, 17), Date(2025, 7, 15)},
    {31, 14, true, Date(2024, 8, 13), Date(2025, 11, 11)},
    {32, 13, true, Date(2024, 12, 11), Date(2026, 2, 28)},
    {33, 13, true, Date(2025, 4, 23), Date(2026, 6, 28)},
    {34, 10, false, Date(2025, 8, 27), Date(2026, 10, 27)},
    {35, 9, false, Date(2025, 12, 17), Date(2027, 2, 28)},
    {36, 4, false, Date(2026, 4, 22), Date(2027, 6, 28)},
    {37, 1, false, Date(2026, 8, 26), Date(2027, 10, 28)},
};
static_assert(std::size(kReleaseLines) ==
              KubeVersion::kNewestKnownMinor - KubeVersion::kMinMinor + 1);

std::string Range(int from, int to) {
  return from == to ? fmt::format("1.{}", from) : fmt::format("1.{} to 1.{}", from, to);
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
    return invalid("expected MAJOR.MINOR, e.g. 1.36");
  ++pos;
  v.minor = ReadNumber(text, pos);
  if (v.minor < 0) return invalid("expected MAJOR.MINOR, e.g. 1.36");
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    v.patch = ReadNumber(text, pos);
    if (v.patch < 0) return invalid("expected a patch number after the second dot");
  }
  if (pos < text.size() && text[pos] != '-' && text[pos] != '+')
    return invalid("unexpected trailing text");
  if (v.major != 1 || v.minor < kMinMinor || v.minor > kMaxAcceptedMinor) {
    return invalid(fmt::format("supported versions are 1.{} and later (known to this powerctl: {})",
                               kMinMinor, Range(kMinMinor, kNewestKnownMinor)));
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

std::optional<KubeReleaseLine> KubeVersion::Line() const {
  if (minor < kMinMinor || minor > kNewestKnownMinor) return std::nullopt;
  return kReleaseLines[minor - kMinMinor];
}

KubeLineSupport KubeVersion::SupportOn(std::chrono::sys_days today) const {
  auto line = Line();
  if (!line) return KubeLineSupport::kNewerThanKnown;
  return today > std::chrono::sys_days{line->end_of_life} ? KubeLineSupport::kEnded
                                                          : KubeLineSupport::kMaintained;
}

int KubeVersion::NewestKnownPatch() const {
  auto line = Line();
  return line ? line->newest_patch : 0;
}

bool KubeVersion::LineEnded() const {
  auto line = Line();
  return line && line->final_patch;
}

std::string KubeVersion::UnknownPatchWarning() const {
  if (!Known() || patch <= NewestKnownPatch()) return "";
  return fmt::format(
      "Kubernetes {}.{} is newer than the newest {} release this powerctl knows ({}.{}); make "
      "sure the kube-scheduler image v{}.{} exists",
      MinorString(), patch, MinorString(), MinorString(), NewestKnownPatch(), MinorString(), patch);
}

std::vector<std::string> KubeVersion::Warnings(std::chrono::sys_days today) const {
  std::vector<std::string> warnings;
  switch (SupportOn(today)) {
    case KubeLineSupport::kNewerThanKnown:
      warnings.push_back(fmt::format(
          "Kubernetes {} is newer than the newest line this powerctl knows (1.{}): rendering "
          "the 1.{} scheduler configuration (KubeSchedulerConfiguration v1 is stable); check "
          "{}'s release notes, and upgrade powerctl when a release knows it",
          MinorString(), kNewestKnownMinor, kNewestKnownMinor, MinorString()));
      if (patch < 0) {
        warnings.push_back(fmt::format(
            "no patch of {} is known: the kube-scheduler image is {}; give --kube-version "
            "{}.N to pick another",
            MinorString(), ImageTag(), MinorString()));
      }
      break;
    case KubeLineSupport::kEnded: {
      auto maintained = MaintainedMinors(today);
      warnings.push_back(
          fmt::format("Kubernetes {} reached its end of life on {} and gets no more fixes{}",
                      MinorString(), FormatDate(Line()->end_of_life),
                      maintained.empty() ? std::string()
                                         : fmt::format("; the maintained lines are {} to {}",
                                                       maintained.front(), maintained.back())));
      break;
    }
    case KubeLineSupport::kMaintained:
      break;
  }
  if (std::string warning = UnknownPatchWarning(); !warning.empty()) warnings.push_back(warning);
  return warnings;
}

std::string KubeVersion::SupportSummary(std::chrono::sys_days today) const {
  switch (SupportOn(today)) {
    case KubeLineSupport::kNewerThanKnown:
      return fmt::format("{}, newer than this powerctl knows (newest known: 1.{})", MinorString(),
                         kNewestKnownMinor);
    case KubeLineSupport::kEnded:
      return fmt::format("{}, end of life since {}", MinorString(),
                         FormatDate(Line()->end_of_life));
    case KubeLineSupport::kMaintained:
      break;
  }
  return fmt::format("{}, maintained until {}", MinorString(), FormatDate(Line()->end_of_life));
}

std::vector<std::string> KubeVersion::SupportedMinors() {
  std::vector<std::string> minors;
  for (int minor = kMinMinor; minor <= kNewestKnownMinor; ++minor) {
    minors.push_back(fmt::format("1.{}", minor));
  }
  return minors;
}

std::vector<std::string> KubeVersion::MaintainedMinors(std::chrono::sys_days today) {
  std::vector<std::string> minors;
  for (const KubeReleaseLine& line : kReleaseLines) {
    KubeVersion v{.major = 1, .minor = line.minor};
    if (today >= std::chrono::sys_days{line.released} &&
        v.SupportOn(today) == KubeLineSupport::kMaintained) {
      minors.push_back(v.MinorString());
    }
  }
  return minors;
}

std::string KubeVersion::MinorString() const {
  return fmt::format("{}.{}", major, minor);
}

std::string KubeVersion::ImageTag() const {
  return fmt::format("v{}.{}.{}", major, minor, patch < 0 ? NewestKnownPatch() : patch);
}

std::string SchedulerSkewProblem(const KubeVersion& server, const KubeVersion& scheduler) {
  if (scheduler.minor > server.minor) {
    return fmt::format(
        "kube-scheduler {} is newer than the API server ({}): the skew policy allows the same "
        "minor or one older",
        scheduler.MinorString(), server.MinorString());
  }
  if (server.minor - scheduler.minor > 1) {
    return fmt::format(
        "kube-scheduler {} is {} minors older than the API server ({}): the skew policy allows "
        "one; regenerate with `powerctl apply` (it reads the server's version)",
        scheduler.MinorString(), server.minor - scheduler.minor, server.MinorString());
  }
  return "";
}

std::string FormatDate(std::chrono::year_month_day date) {
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()));
}

std::chrono::sys_days TodayUtc() {
  return std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
}

}  // namespace powerctl
