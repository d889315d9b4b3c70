// Pod groups (after the riya scheduler plugin's PreFilter): completeness, the filter verdict and
// the pods to requeue.

#include "core/scoring/pod_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace powerctl::scoring {
namespace {

using cluster::PodInfo;

std::string Label(const PodInfo& pod, const char* key) {
  auto it = pod.labels.find(key);
  return it == pod.labels.end() ? "" : it->second;
}

bool Counts(const PodInfo& pod) {
  return !pod.Terminal() && !pod.deleting;
}

}  // namespace

PodGroupVerdict EvaluatePodGroup(const PodInfo& pod, const std::vector<PodInfo>& pods) {
  PodGroupVerdict out;
  out.group = Label(pod, cluster::kPodGroupLabel);
  out.namespace_ = pod.namespace_;
  std::string min_text = Label(pod, cluster::kMinAvailableLabel);
  if (out.group.empty() || min_text.empty()) return out;
  int min = 0;
  auto [end, ec] = std::from_chars(min_text.data(), min_text.data() + min_text.size(), min);
  if (ec != std::errc() || end != min_text.data() + min_text.size()) {
    // riya logs the error and lets the pod through; so do we, saying so.
    out.note = "minAvailable \"" + min_text + "\" of pod group " + out.group +
               " is not an integer; no group gate";
    return out;
  }
  out.min_available = min;
  if (min <= 1) return out;
  out.gated = true;
  bool self_seen = false;
  for (const PodInfo& p : pods) {
    if (p.namespace_ != pod.namespace_ || Label(p, cluster::kPodGroupLabel) != out.group) continue;
    bool self = (!pod.uid.empty() && p.uid == pod.uid) || p.Key() == pod.Key();
    self_seen = self_seen || self;
    if (Counts(p)) out.members.push_back(&p);
  }
  std::sort(out.members.begin(), out.members.end(),
            [](const PodInfo* a, const PodInfo* b) { return a->Key() < b->Key(); });
  // The pod asks to be scheduled, so it exists even if the cache has not seen it yet.
  out.present = static_cast<int>(out.members.size()) + (self_seen || !Counts(pod) ? 0 : 1);
  out.complete = out.present >= min;
  if (!out.complete) {
    out.reason = fmt::format("pod group {}/{} has {} of {} pods (minAvailable)", pod.namespace_,
                             out.group, out.present, min);
  }
  return out;
}

std::map<std::string, std::string> PodGroupFailedNodes(const PodGroupVerdict& verdict,
                                                       const std::vector<std::string>& nodes) {
  std::map<std::string, std::string> failed;
  if (!verdict.gated || verdict.complete) return failed;
  for (const std::string& node : nodes) failed[node] = verdict.reason;
  return failed;
}

std::string MembersFingerprint(const std::vector<const PodInfo*>& members) {
  std::vector<std::string> uids;
  for (const PodInfo* p : members) uids.push_back(p->uid.empty() ? p->Key() : p->uid);
  std::sort(uids.begin(), uids.end());
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64
  for (const std::string& uid : uids) {
    for (unsigned char c : uid + ",") {
      hash ^= c;
      hash *= 1099511628211ULL;
    }
  }
  return fmt::format("{:016x}", hash);
}

std::vector<PodTouch> PodsToTouch(const PodGroupVerdict& verdict, const std::string& except_key,
                                  const std::string& now_rfc3339) {
  std::vector<PodTouch> out;
  if (!verdict.gated || !verdict.complete) return out;
  std::string marker = "members=" + MembersFingerprint(verdict.members);
  for (const PodInfo* p : verdict.members) {
    if (p->Key() == except_key || !p->node_name.empty() ||
        (p->phase != "Pending" && !p->phase.empty())) {
      continue;
    }
    auto it = p->annotations.find(cluster::kGroupCompleteAnnotation);
    bool touched =
        it != p->annotations.end() && it->second.size() >= marker.size() &&
        it->second.compare(it->second.size() - marker.size(), marker.size(), marker) == 0;
    if (touched) continue;
    out.push_back({p->namespace_, p->name, now_rfc3339 + ";" + marker});
  }
  return out;
}

}  // namespace powerctl::scoring
