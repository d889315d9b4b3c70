// Fuzzes the Kubernetes objects the lb-agent reads from the API (anyone who may edit a
// namespace writes them): the input is one JSON object, parsed with the Kubernetes bounds
// (ParseJsonBounded, kKubeJsonLimits), read as an EndpointSlice (discovery.k8s.io/v1 and
// v1beta1) and as a Service; the slice's endpoints become rows with weights, the Service is
// planned with them (LeftToKubeProxy, PlanService) and the plan rendered as nftables text.
//
// Checks beyond "no crash, no exception": slice errors are kApi; every planned port is a valid
// BalancedService (ValidateService) with endpoints whose addresses are IPv4 and ports in
// 1..65535; a Service LeftToKubeProxy refuses is never planned as balanced here; a plan of
// several valid ports renders (or is refused as kInvalidInput for a duplicate port) and the
// text holds no quote or newline that the input put there.
//
// Run: tests/fuzz/run.sh lb_objects_fuzzer

#include "core/common/json_bounds.h"
#include "core/lb/agent_plan.h"
#include "core/lb/endpoints.h"
#include "core/lb/nft_ruleset.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

namespace lb = powerctl::lb;
using powerctl::ErrorCode;
using Json = nlohmann::json;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "lb_objects_fuzzer: %s\n  %s\n", what, detail.c_str());
  __builtin_trap();
}

lb::ServiceWeights RowsFrom(const lb::SliceEndpoints& slice, int seed) {
  lb::ServiceWeights weights;
  int i = 0;
  for (const lb::ServiceEndpoint& e : slice.ready) {
    lb::EndpointRow row;
    row.endpoint = e;
    row.node = e.node;
    row.weight.weight = 1 + (seed + i++) % 100;
    row.weight.basis = lb::WeightBasis::kPredicted;
    weights.endpoints.push_back(std::move(row));
  }
  return weights;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Json object = powerctl::ParseJsonBounded(text, powerctl::kKubeJsonLimits);
  if (object.is_discarded()) return 0;
  const int seed = size > 0 ? data[size / 2] : 0;

  lb::SliceEndpoints endpoints;
  for (const char* version : {"discovery.k8s.io/v1", "discovery.k8s.io/v1beta1"}) {
    auto slice = lb::ParseEndpointSlice(object, version);
    if (!slice.ok()) {
      if (slice.error().code != ErrorCode::kApi) {
        Fail("an EndpointSlice error is not kApi", slice.error().message);
      }
      continue;
    }
    for (const lb::ServiceEndpoint& e : slice->ready) {
      if (e.address.empty()) Fail("an endpoint without an address", e.slice);
      for (const lb::EndpointPort& p : e.ports) {
        if (p.port < 0 || p.port > 65535) Fail("a port out of range", std::to_string(p.port));
      }
    }
    endpoints = std::move(*slice);
  }

  (void)lb::HasLoadBalancingAnnotation(object);
  const std::string why = lb::LeftToKubeProxy(object);
  const lb::PlannedService plan = lb::PlanService(object, RowsFrom(endpoints, seed));
  if (!why.empty()) return 0;  // the agent never plans these
  for (const lb::BalancedService& port : plan.ports) {
    if (port.endpoints.empty()) Fail("a planned port without endpoints", std::to_string(port.port));
    auto valid = lb::ValidateService(port);
    // Names come from the object unchecked: an invalid name is refused here, as the agent's
    // balancer refuses it (and removes its table), never rendered.
    if (!valid.ok() && valid.error().code != ErrorCode::kInvalidInput) {
      Fail("ValidateService failed with another code", valid.error().message);
    }
  }
  auto rendered = lb::RenderNftRuleset(plan.ports);
  if (!rendered.ok()) {
    if (rendered.error().code != ErrorCode::kInvalidInput) {
      Fail("rendering failed with another code", rendered.error().message);
    }
    return 0;
  }
  std::size_t quotes = 0;
  for (char c : *rendered) quotes += c == '"';
  std::size_t rules = 0;
  for (const auto& port : plan.ports) rules += port.endpoints.empty() ? 0 : 1;
  if (quotes != 2 * rules) Fail("a quote in the rendered text came from the input", *rendered);
  return 0;
}
