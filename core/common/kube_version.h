#pragma once
// A Kubernetes minor version (and optional patch) that powerctl can target, and what this
// build knows of each release line: its newest patch, release and end-of-life dates.

#include "core/common/result.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl {

// One Kubernetes minor line as the release pages give it (docs/reference/kubernetes-releases.md).
struct KubeReleaseLine {
  int minor = 0;
  int newest_patch = 0;
  bool final_patch = false;  // the line has ended and `newest_patch` is its last release
  std::chrono::year_month_day released;
  std::chrono::year_month_day end_of_life;
};

// Where a line stands on a given day.
enum class KubeLineSupport {
  kMaintained,      // released and before its end of life
  kEnded,           // past its end of life: no more fixes
  kNewerThanKnown,  // a minor this build has no entry for (released after it was built)
};

struct KubeVersion {
  int major = 1;
  int minor = 0;
  int patch = -1;  // -1: not given

  static constexpr int kMinMinor = 20;
  static constexpr int kNewestKnownMinor = 37;
  // Newer minors than the table are accepted (KubeSchedulerConfiguration v1 is stable) up to
  // this bound, so a typo such as "1.370" is still refused.
  static constexpr int kMaxAcceptedMinor = 99;

  // "1.20", "v1.30.2", "1.29.3-eks-abc" (suffixes after the patch are ignored). Checks the
  // form and the accepted range only: a running API server's version is taken as it is.
  static Result<KubeVersion> Parse(std::string_view text);
  // A version a user chose (powerctl.yaml, --kube-version): Parse, and a patch must exist —
  // "1.30.99" is refused because the 1.30 line ended with 1.30.14.
  static Result<KubeVersion> ParseRelease(std::string_view text);

  // This line's entry in the release table; none for a minor newer than the table.
  std::optional<KubeReleaseLine> Line() const;
  bool Known() const { return minor <= kNewestKnownMinor; }
  KubeLineSupport SupportOn(std::chrono::sys_days today) const;

  // The newest patch release of this minor line that this build knows of (0 for a minor newer
  // than the table), and whether that patch is the line's final one.
  int NewestKnownPatch() const;
  bool LineEnded() const;
  // A patch newer than the newest known in a line that may still get releases: "" or a
  // warning that the image may not exist.
  std::string UnknownPatchWarning() const;
  // Everything worth telling a user who targets this version on `today`: a minor newer than
  // the table (rendered with the newest known shape), an ended line (with its end-of-life
  // date), a patch the table does not know. Empty for a maintained, known release.
  std::vector<std::string> Warnings(std::chrono::sys_days today) const;
  // One line for doctor and status: "1.36, maintained until 2027-06-28".
  std::string SupportSummary(std::chrono::sys_days today) const;

  // "1.20" ... "1.37", oldest first: what --kube-version offers.
  static std::vector<std::string> SupportedMinors();
  // The lines maintained on `today`, oldest first ("1.35", "1.36", "1.37").
  static std::vector<std::string> MaintainedMinors(std::chrono::sys_days today);

  std::string MinorString() const;  // "1.30"
  // "v1.30.2"; with no patch given, the newest known patch of the line ("v1.30.14"): the
  // most-fixed release, not the least-fixed ".0".
  std::string ImageTag() const;
  bool AtLeast(int want_minor) const { return minor >= want_minor; }
  bool operator==(const KubeVersion&) const = default;
};

// kube-scheduler against the API server it talks to, by the version skew policy: it must not
// be newer, and may be at most one minor older. "" when within the policy, else why not.
std::string SchedulerSkewProblem(const KubeVersion& server, const KubeVersion& scheduler);

// "2027-02-28".
std::string FormatDate(std::chrono::year_month_day date);
// The current UTC calendar day: the one input of the version policy that changes by itself.
std::chrono::sys_days TodayUtc();

}  // namespace powerctl
