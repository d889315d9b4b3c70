#pragma once
// kube-scheduler's extender wire format (k8s.io/kube-scheduler/extender/v1/types.go; see
// docs/reference/extender-protocol.md ("Calls")): decoding what the scheduler POSTs to filter,
// prioritize and preempt, and encoding our answers byte-for-byte as Go's encoding/json would.
//
// The Go structs have no JSON tags: keys are the PascalCase field names, every field is always
// emitted (nil pointers/maps/slices as null) and Go's decoder matches keys case-insensitively.
// The embedded Pod/Node objects use the normal lower-camel Kubernetes keys.
//
// Decoders never throw: malformed bodies come back as kInvalidInput with a one-line reason
// (the server answers 400 with it). A body is parsed once; node objects are moved out of the
// parsed document, never copied, and only kept at all in Nodes mode (nodeCacheCapable=false),
// where the filter answer has to return them.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::extender {

// Nesting deeper than this is refused before parsing (real Pod/Node objects stay below ~15;
// nlohmann's copy and dump recurse, so unbounded depth would be a stack overflow).
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::int64_t kMinExtenderPriority = 0;
inline constexpr std::int64_t kMaxExtenderPriority = 10;

// The value of `key` in a JSON object as Go's encoding/json finds a struct field: the exact
// key when present, otherwise a key equal to it ignoring ASCII case. nullptr when neither
// exists or `object` is not an object. Divergence from Go, documented: when a document holds
// two spellings of one key (never sent by the scheduler), Go keeps the last one in document
// order; this prefers the exact spelling, then the first case-insensitive match in key order.
const nlohmann::json* FindGoField(const nlohmann::json& object, std::string_view key);

// How the scheduler sent the candidate nodes.
enum class NodesMode {
  kNodeNames,  // nodeCacheCapable: true -> "NodeNames":[...], "Nodes":null
  kNodes,      // nodeCacheCapable: false -> "Nodes":{"items":[...]}, "NodeNames":null
};

// ExtenderArgs (filter and prioritize). When both NodeNames and Nodes are null or absent, the
// request has no candidates and is answered in NodeNames mode; when both are set (only the
// types_test document does that), NodeNames wins and Nodes is not read at all (Go would still
// reject a Nodes of the wrong type; the scheduler never sends one).
struct ExtenderArgs {
  nlohmann::json pod;  // the Pod object (an object; the decoder rejects null/absent)
  NodesMode mode = NodesMode::kNodeNames;
  std::vector<std::string> node_names;  // the candidates in request order, in both modes
  nlohmann::json node_items = nlohmann::json::array();  // Nodes mode: the Node objects, in order
};

// One candidate of a preemption: the pods the scheduler would evict on a node.
struct Victims {
  std::vector<std::string> pod_uids;  // metadata.uid of full pods, or MetaPod.UID
  std::int64_t num_pdb_violations = 0;
};

// ExtenderPreemptionArgs. `meta` tells which map the scheduler sent: NodeNameToMetaVictims
// (nodeCacheCapable) or NodeNameToVictims (full pods, of which only the UIDs are kept).
struct PreemptionArgs {
  nlohmann::json pod;
  bool meta = true;
  std::map<std::string, Victims> node_victims;
};

Result<ExtenderArgs> DecodeExtenderArgs(std::string_view body);
Result<PreemptionArgs> DecodePreemptionArgs(std::string_view body);

// Why the filter rejects one node. `unresolvable` nodes (e.g. an untolerated policy taint)
// are listed in FailedAndUnresolvableNodes too, so a 1.21+ scheduler skips them in preemption.
struct Rejection {
  std::string reason;
  bool unresolvable = false;
};

// The filter's answer: every candidate of the request not in `rejected` passes.
struct FilterAnswer {
  std::map<std::string, Rejection> rejected;  // node name -> why
  std::string error;                          // non-empty: the scheduler treats it as an error
};

// ExtenderFilterResult for `args`, with every field present:
//   NodeNames mode: {"Nodes":null,"NodeNames":[passing, in request order],...}
//   Nodes mode:     {"Nodes":{"metadata":{},"items":[passing Node objects]},"NodeNames":null,...}
//   "FailedNodes": every rejected candidate with its reason ({} when none);
//   "FailedAndUnresolvableNodes": the unresolvable ones, or null when none. The key exists
//     from Kubernetes 1.21; older schedulers ignore unknown keys, so it is always emitted (as
//     TAS does) but nothing depends on it: those nodes are in FailedNodes as well.
//   "Error": answer.error.
// Names in `answer` that are not candidates of `args` are left out, so the scheduler never
// sees a node it did not send (which it treats as an error).
std::string EncodeFilterResult(const ExtenderArgs& args, const FilterAnswer& answer);

// Encodes {"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,
// "Error":message}: an error answer (the scheduler fails the attempt or skips an ignorable
// extender).
std::string EncodeFilterError(std::string_view message);

struct HostPriority {
  std::string_view host;  // a name the caller keeps until the list is encoded
  std::int64_t score = 0;
};
// HostPriorityList: a bare array [{"Host":"n1","Score":7},...] in the given order, each score
// clamped to kMinExtenderPriority..kMaxExtenderPriority (the scheduler does not clamp).
std::string EncodeHostPriorityList(const std::vector<HostPriority>& list);

// ExtenderPreemptionResult {"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":".."}],
// "NumPDBViolations":0},...}}: the candidates of `args` minus the nodes in `rejected` (those the
// filter would reject, so preemption never makes room on them) and minus nodes without victims
// (the scheduler errors on those). Always NodeNameToMetaVictims: the scheduler reads only that.
std::string EncodePreemptionResult(const PreemptionArgs& args,
                                   const std::map<std::string, Rejection>& rejected);

}  // namespace powerctl::extender
