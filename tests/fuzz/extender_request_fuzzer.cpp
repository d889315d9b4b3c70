// Fuzzes the kube-scheduler extender request decoders (DecodeExtenderArgs,
// DecodePreemptionArgs) with request bodies, and the encoders with what they decode: a
// rejected body has an kInvalidInput message with the documented prefix; an accepted one gives
// consistent node lists, and every answer encoded from it is valid JSON that names only nodes
// of the request (the scheduler errors on any other) with scores in 0..10.
//
// Run: tests/fuzz/run.sh extender_request_fuzzer

#include "core/common/json_bounds.h"
#include "core/extender/wire.h"
#include "core/extender/wire_internal.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

namespace {

using nlohmann::json;
namespace ext = powerctl::extender;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "extender_request_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

json ParseOutput(const std::string& out, std::string_view input) {
  json parsed = json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) Fail("an encoder wrote invalid JSON", input, out);
  return parsed;
}

void CheckError(const powerctl::Error& e, const char* prefix, std::string_view input) {
  if (e.code != powerctl::ErrorCode::kInvalidInput || e.message.rfind(prefix, 0) != 0) {
    Fail("an error without kInvalidInput and the documented prefix", input, e.message);
  }
}

// The fast decode (plain NodeNames taken out before the SAX parse) must equal the SAX parse
// of the whole body.
void CheckFastDecodeEqualsSax(std::string_view input) {
  if (powerctl::JsonBoundsViolation(input, {ext::kMaxJsonDepth, input.size()})) return;
  ext::internal::ArgsDocument fast;
  ext::internal::ArgsDocument sax;
  const bool fast_ok = ext::internal::ParseArgsFast(input, fast);
  const bool sax_ok = ext::internal::ParseArgsSax(input, sax);
  if (fast_ok != sax_ok) Fail("fast and SAX decodes disagree on success", input, "");
  if (fast_ok && (fast.root != sax.root || fast.names != sax.names ||
                  fast.names_present != sax.names_present)) {
    Fail("fast and SAX decodes differ", input, fast.root.dump() + " vs " + sax.root.dump());
  }
}

void CheckArgs(std::string_view input) {
  CheckFastDecodeEqualsSax(input);
  auto args = ext::DecodeExtenderArgs(input);
  if (!args.ok()) return CheckError(args.error(), "ExtenderArgs: ", input);
  if (!args->pod.is_object()) Fail("Pod accepted but not an object", input, args->pod.dump());
  const bool nodes = args->mode == ext::NodesMode::kNodes;
  if (nodes && args->node_items.size() != args->node_names.size()) {
    Fail("node objects and names differ in number", input, "");
  }
  const std::set<std::string> candidates(args->node_names.begin(), args->node_names.end());
  ext::FilterAnswer answer;
  for (std::size_t i = 0; i < args->node_names.size(); i += 2) {
    answer.rejected[args->node_names[i]] = {"rejected " + std::to_string(i), i % 4 == 0};
  }
  answer.rejected["not-a-candidate-\x01"] = {"x", true};
  json filter = ParseOutput(ext::EncodeFilterResult(*args, answer), input);
  const json& passing = nodes ? filter["Nodes"]["items"] : filter["NodeNames"];
  if (!passing.is_array() || !filter["Error"].is_string() || !filter["FailedNodes"].is_object()) {
    Fail("filter answer lacks a field", input, filter.dump());
  }
  for (const json& p : passing) {
    const json* metadata = nodes ? ext::FindGoField(p, "metadata") : nullptr;
    const json* named = metadata != nullptr ? ext::FindGoField(*metadata, "name") : &p;
    if (named == nullptr || !named->is_string())
      Fail("a passing node has no name", input, p.dump());
    const std::string name = named->get<std::string>();
    if (candidates.count(name) == 0 || answer.rejected.count(name) > 0) {
      Fail("filter answer passes a node it should not", input, name);
    }
  }
  for (const auto& [name, reason] : filter["FailedNodes"].items()) {
    if (candidates.count(name) == 0) Fail("FailedNodes names a non-candidate", input, name);
  }
  std::vector<ext::HostPriority> priorities;
  for (std::size_t i = 0; i < args->node_names.size(); ++i) {
    priorities.push_back({args->node_names[i], static_cast<std::int64_t>(i) * 7 - 20});
  }
  json list = ParseOutput(ext::EncodeHostPriorityList(priorities), input);
  if (!list.is_array() || list.size() != priorities.size()) Fail("bad HostPriorityList", input, "");
  for (const json& h : list) {
    const auto score = h["Score"].get<std::int64_t>();
    if (score < 0 || score > 10) Fail("score out of 0..10", input, h.dump());
  }
}

void CheckPreemption(std::string_view input) {
  auto args = ext::DecodePreemptionArgs(input);
  if (!args.ok()) return CheckError(args.error(), "ExtenderPreemptionArgs: ", input);
  std::map<std::string, ext::Rejection> rejected;
  if (!args->node_victims.empty()) rejected[args->node_victims.begin()->first] = {"no", false};
  json result = ParseOutput(ext::EncodePreemptionResult(*args, rejected), input);
  const json& map = result["NodeNameToMetaVictims"];
  if (!map.is_object()) Fail("preemption answer lacks NodeNameToMetaVictims", input, "");
  for (const auto& [node, victims] : map.items()) {
    if (args->node_victims.count(node) == 0 || rejected.count(node) > 0 ||
        victims["Pods"].empty()) {
      Fail("preemption answer keeps a node it should drop", input, node);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckArgs(body);
  CheckPreemption(body);
  return 0;
}
