#include "core/explain/causes.h"

#include "core/common/json_fields.h"
#include "core/scoring/policies.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace powerctl::explain {
namespace {

std::string CauseIdOfCheck(const std::string& check) {
  if (check == scoring::kCheckUnschedulable) return kCauseUnschedulable;
  if (check == scoring::kCheckTaints) return kCauseUntoleratedTaint;
  if (check == scoring::kCheckNodeAffinity) return kCauseNodeAffinity;
  return kCauseInsufficientResources;
}

std::string GateReason(const std::string& id) {
  if (id == kCausePodGroup) return "pod group incomplete: the extender holds its pods back";
  if (id == kCauseDontSchedule) return "node(s) violate the pod's dontschedule policy";
  return "node(s) rejected by the extender";
}

std::string GateFix(const std::string& id, const CauseInputs& in) {
  if (id == kCausePodGroup) {
    return fmt::format(
        "create the group's remaining pods (label podGroup={} in namespace {}), or lower the "
        "minAvailable label of its pods",
        in.pod_group.empty() ? "GROUP" : in.pod_group, in.pod_namespace);
  }
  if (id == kCauseDontSchedule) {
    return fmt::format(
        "wait until the policy's metric complies on a node the pod may use, allow the pod "
        "onto compliant nodes, or remove its label telemetry-policy={}",
        in.telemetry_policy.empty() ? "POLICY" : in.telemetry_policy);
  }
  return fmt::format("read each node's reason: powerctl explain pod {} -n {} -o wide", in.pod_name,
                     in.pod_namespace);
}

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// What to check for the way the extender call failed (Go's net/http and crypto/tls wording).
std::string ExtenderCallFix(const std::string& message) {
  const std::string doctor =
      "check the extender: powerctl doctor checks its Deployment, Service, /readyz and "
      "certificates";
  if (Contains(message, "x509:") || Contains(message, "tls:") ||
      Contains(message, "remote error")) {
    return doctor +
           "; the scheduler refused the extender's TLS (its certificate must be signed by the CA "
           "in the scheduler's configuration and name the URL's host: powerctl apply renews "
           "both)";
  }
  if (Contains(message, " with extender at URL ")) {
    return doctor + "; the extender answered with an HTTP error: read its log (kubectl logs)";
  }
  return doctor +
         "; the URL in the message (extender.urlPrefix in the scheduler's configuration) must "
         "reach a ready extender pod through its Service";
}

std::string GroupDetail(const Cause& cause, const CauseInputs& in) {
  const std::string recorded =
      in.decision_age.empty() ? cause.detail
                              : fmt::format("recorded {} ago: {}", in.decision_age, cause.detail);
  if (!in.pod_group_now) return recorded;
  const std::string now =
      fmt::format("pod group {}/{} has {} of {} pods now", in.pod_namespace, in.pod_group,
                  in.pod_group_now->present, in.pod_group_now->min_available);
  return in.decision_age.empty() ? now : now + " (" + recorded + ")";
}

}  // namespace

bool IsExtenderCallFailure(const std::string& message) {
  // net/http's *url.Error: Op, quoted URL, the cause (Go 1.14 and later quote the URL).
  if (message.rfind("Post \"http", 0) == 0 && Contains(message, "\": ")) return true;
  if (message.rfind("failed ", 0) == 0 && Contains(message, " with extender at URL ") &&
      Contains(message, ", code ")) {
    return true;
  }
  return message.rfind("extender \"", 0) == 0 && Contains(message, " claims a filtered node ");
}

std::string ClassifyGateReason(const std::string& reason) {
  if (reason.rfind("pod group ", 0) == 0) return kCausePodGroup;
  if (reason.rfind("policy ", 0) == 0 && reason.find(" dontschedule: ") != std::string::npos) {
    return kCauseDontSchedule;
  }
  return kCauseExtenderRejected;
}

std::vector<Cause> RankCauses(const CauseInputs& in) {
  std::vector<Cause> out;
  if (!in.scheduler_running) {
    out.push_back({kCauseSchedulerNotRunning,
                   "no scheduler named in the pod's spec.schedulerName is running",
                   {},
                   fmt::format("schedulerName {}: no lease holder and no scheduling event",
                               in.scheduler_name),
                   in.scheduler_fix});
  }
  if (!in.extender_error.empty()) {
    out.push_back({kCauseExtenderError,
                   "the extender's filter failed",
                   {},
                   in.extender_error,
                   "check the extender: powerctl doctor, and its /readyz"});
  } else if (IsExtenderCallFailure(in.scheduler_message)) {
    // With extender.ignorable false, a failed call fails the whole attempt: kube-scheduler
    // retries with back-off and no node is ever tried.
    out.push_back({kCauseExtenderError,
                   "the scheduler could not call the extender, which is not ignorable",
                   {},
                   in.scheduler_message,
                   ExtenderCallFix(in.scheduler_message)});
  }
  // A node that passes every check and gate could take the pod: then no per-node failure is
  // why it waits (the table still shows them all).
  const bool feasible = in.nodes != nullptr &&
                        std::any_of(in.nodes->begin(), in.nodes->end(), [](const NodeScore& n) {
                          return n.fit.empty() && !(n.gate && n.gate->passed == false);
                        });
  std::vector<Cause> per_node;
  std::map<std::string, std::size_t> index;  // reason -> per_node position
  auto add = [&](const std::string& id, const std::string& reason, const std::string& node,
                 const std::string& detail, const std::string& fix) {
    auto [it, inserted] = index.emplace(reason, per_node.size());
    if (inserted) per_node.push_back({id, reason, {}, detail, fix});
    per_node[it->second].nodes.push_back(node);
  };
  const std::size_t node_count = in.nodes != nullptr ? in.nodes->size() : 0;
  auto excluded_by_pod = [](const NodeScore& n) {
    return std::any_of(n.fit.begin(), n.fit.end(), [](const scoring::FitFailure& f) {
      return f.check == scoring::kCheckNodeAffinity;
    });
  };
  std::size_t affinity_failures = 0;
  if (in.nodes != nullptr) {
    affinity_failures = static_cast<std::size_t>(
        std::count_if(in.nodes->begin(), in.nodes->end(), excluded_by_pod));
  }
  // The pod's own selector ranks last while some node matches it (see the header), and the
  // other failures of the nodes it excludes are beside the point.
  const bool selector_is_intent = affinity_failures < node_count;
  if (in.nodes != nullptr && !feasible) {
    for (const NodeScore& n : *in.nodes) {
      const bool excluded = selector_is_intent && excluded_by_pod(n);
      for (const scoring::FitFailure& f : n.fit) {
        if (excluded && f.check != scoring::kCheckNodeAffinity) continue;
        add(CauseIdOfCheck(f.check), f.reason, n.node, f.detail, f.fix);
      }
      if (n.gate && n.gate->passed == false) {
        const std::string id = ClassifyGateReason(n.gate->reason);
        add(id, GateReason(id), n.node, n.gate->reason, GateFix(id, in));
      }
    }
  }
  std::stable_sort(per_node.begin(), per_node.end(), [&](const Cause& a, const Cause& b) {
    const bool a_last = selector_is_intent && a.id == kCauseNodeAffinity;
    const bool b_last = selector_is_intent && b.id == kCauseNodeAffinity;
    if (a_last != b_last) return b_last;
    return a.nodes.size() > b.nodes.size();
  });
  for (Cause& cause : per_node) {
    if (cause.id == kCausePodGroup) cause.detail = GroupDetail(cause, in);
    if (cause.id == kCausePodGroup && in.pod_group_now &&
        in.pod_group_now->present >= in.pod_group_now->min_available) {
      cause.reason = "pod group was incomplete when the extender last filtered the pod";
      cause.fix =
          "the group is complete now: kube-scheduler retries the pod (the extender requeues a "
          "complete group's waiting pods); if it stays Pending, check the extender: powerctl "
          "doctor";
    }
  }
  if (!feasible && !in.drained_nodes_that_fit.empty()) {
    // Before the per-node failures: the drained node's own one (it is cordoned) is the plan's
    // doing, and waking it is the fix that keeps the other nodes as they are.
    const std::string& first = in.drained_nodes_that_fit.front();
    out.push_back(
        {kCauseDrainedNodeWouldFit,
         "node(s) drained by powerctl consolidate would take the pod once switched back on",
         in.drained_nodes_that_fit, fmt::format("{} is the cheapest of them to run", first),
         fmt::format("switch {} on and run powerctl consolidate undo {}; or let powerctl "
                     "consolidate wake --on-wake CMD do both",
                     first, first)});
  }
  out.insert(out.end(), per_node.begin(), per_node.end());
  if (in.nodes != nullptr && node_count == 0) {
    out.push_back({kCauseNoNodes, "the cluster has no nodes", {}, "", "add nodes to the cluster"});
  }
  if (out.empty()) {
    out.push_back({kCauseUnknown,
                   "the scheduler reports the pod unschedulable",
                   {},
                   in.scheduler_message.empty() ? "no reason recorded" : in.scheduler_message,
                   fmt::format("kubectl -n {} describe pod {}", in.pod_namespace, in.pod_name)});
  }
  return out;
}

std::vector<Cause> MisplacedCauses(const nlohmann::json& pod, const nlohmann::json& node) {
  std::vector<Cause> out;
  const std::string name = StringField(node, {"metadata", "name"});
  const std::string policy = StringField(pod, {"metadata", "labels", "telemetry-policy"});
  if (!policy.empty() &&
      StringField(node, {"metadata", "labels", policy}) == config::kViolatingValue) {
    out.push_back({kCauseDeschedule,
                   "the pod's node violates the pod's deschedule policy",
                   {name},
                   fmt::format("node {} is labelled {}={}", name, policy, config::kViolatingValue),
                   fmt::format("let a descheduler evict it, or delete the pod so it is placed "
                               "again (powerctl score --pod shows where it would go)")});
  }
  const nlohmann::json* taints = FindField(node, {"spec", "taints"});
  const nlohmann::json* tolerations = FindField(pod, {"spec", "tolerations"});
  if (taints != nullptr && taints->is_array()) {
    for (const nlohmann::json& taint : *taints) {
      if (StringField(taint, {"effect"}) != "NoExecute") continue;
      bool tolerated = false;
      if (tolerations != nullptr && tolerations->is_array()) {
        for (const nlohmann::json& t : *tolerations)
          tolerated = tolerated || scoring::Tolerates(t, taint);
      }
      if (tolerated) continue;
      const std::string key = StringField(taint, {"key"});
      out.push_back({kCauseNoExecuteTaint,
                     "the pod's node has a NoExecute taint it does not tolerate",
                     {name},
                     fmt::format("taint {}:NoExecute", key),
                     fmt::format("remove the taint (kubectl taint nodes {} {}:NoExecute-) or add a "
                                 "toleration for it; the kubelet evicts the pod otherwise",
                                 name, key)});
    }
  }
  return out;
}

}  // namespace powerctl::explain
