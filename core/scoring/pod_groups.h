#pragma once
// The pod-group gate of the riya scheduler plugin (NTHU-LSALAB/riya-scheduler, a
// scheduling-framework PreFilter): pods labelled `podGroup: NAME` and `minAvailable: N` are not
// scheduled until N pods of the group exist in the namespace. Pure decisions over the cluster
// cache's pods; patching is done by extender::TouchPods (core/extender/pod_group_touch.h).
//
// As in riya: a pod without `podGroup`, or with `minAvailable` missing, not an integer, or
// <= 1, is not gated. Unlike riya, terminal (Succeeded/Failed) and terminating pods do
// not count towards the group, and pods still waiting are requeued when the group completes
// (kube-scheduler 1.20 does not retry pods an extender filtered out until they change or the
// periodic flush, kubernetes #122019).

#include "core/cluster/pod_info.h"

#include <map>
#include <string>
#include <vector>

namespace powerctl::scoring {

struct PodGroupVerdict {
  bool gated = false;  // the pod belongs to a group with minAvailable > 1
  std::string group;   // podGroup label value
  std::string namespace_;
  int min_available = 0;
  int present = 0;  // pods of the group that exist and are neither terminal nor terminating
  bool complete = true;
  std::string reason;  // "pod group NAME has N of M pods" when not complete
  std::string note;    // e.g. "minAvailable "x" is not an integer; no group gate"
  std::vector<const cluster::PodInfo*> members;  // the counted pods (into `pods`), by key
};

// `pods` are the cluster's pods (any namespaces and groups; the cache's pods-by-group list
// of the pod's group is enough). The pod itself counts even when the cache has not seen it.
PodGroupVerdict EvaluatePodGroup(const cluster::PodInfo& pod,
                                 const std::vector<cluster::PodInfo>& pods);

// Filter verdict: every node fails with the verdict's reason while the group is incomplete;
// empty when the pod may be scheduled.
std::map<std::string, std::string> PodGroupFailedNodes(const PodGroupVerdict& verdict,
                                                       const std::vector<std::string>& nodes);

struct PodTouch {
  std::string namespace_;
  std::string name;
  std::string annotation_value;  // for cluster::kGroupCompleteAnnotation
};
// The group's members that still wait for a node (unbound, Pending, not terminating), other
// than `except_key` ("namespace/name" of the pod being scheduled), to be annotated with
// "<now_rfc3339>;members=<fingerprint>". The fingerprint hashes the members' uids, so a pod
// already touched for this membership is not touched again, and is touched anew when the
// group completed again with other pods. Empty while the group is incomplete.
std::vector<PodTouch> PodsToTouch(const PodGroupVerdict& verdict, const std::string& except_key,
                                  const std::string& now_rfc3339);

// The fingerprint used in the annotation: 16 hex digits of FNV-1a over the sorted uids.
std::string MembersFingerprint(const std::vector<const cluster::PodInfo*>& members);

}  // namespace powerctl::scoring
