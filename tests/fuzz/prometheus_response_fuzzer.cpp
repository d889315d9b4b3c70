// Fuzzes the decoders of JSON that telemetry reads from servers:
//  * ParseQueryResponse (Prometheus /api/v1/query and query_range): the first byte picks
//    the HTTP status, the rest is the body. An accepted response has a known resultType,
//    vector series have at most one sample, and its errors are kApi; keeping labels or taking
//    series through a sink changes nothing else;
//  * if the body is JSON: ParseNodeMetrics / ParsePodMetrics (metrics.k8s.io objects, with
//    their Kubernetes quantities and RFC 3339 times) and NodeInfoFromJson (Node objects).
// Nothing may throw: the decoders catch nlohmann::json's exceptions themselves.
//
// Run: tests/fuzz/run.sh prometheus_response_fuzzer

#include "core/telemetry/metrics_api.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace telemetry = powerctl::telemetry;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "prometheus_response_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

constexpr long kStatuses[] = {200, 400, 422, 503, 500, 404, 499, 502};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const long status = kStatuses[data[0] % (sizeof kStatuses / sizeof kStatuses[0])];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  auto result = telemetry::ParseQueryResponse(status, body);
  if (result.ok()) {
    const std::string& type = result->result_type;
    if (type != "vector" && type != "matrix" && type != "scalar" && type != "string") {
      Fail("an unknown resultType was accepted", body, type);
    }
    if (status / 100 != 2) Fail("a non-2xx response was accepted", body, std::to_string(status));
    for (const telemetry::PromSeries& s : result->series) {
      if (type == "vector" && s.samples.size() > 1) Fail("a vector series with samples", body, "");
    }
  } else if (result.error().code != powerctl::ErrorCode::kApi) {
    Fail("a response error is not kApi", body, result.error().message);
  }
  // Keeping some labels changes nothing but the labels: the same outcome, the same series,
  // each with exactly the kept subset of its labels.
  const telemetry::KeepLabels keep = {"instance", "name", "node"};
  auto kept = telemetry::ParseQueryResponse(status, body, keep);
  if (kept.ok() != result.ok()) Fail("keeping labels changed the outcome", body, "");
  if (kept.ok()) {
    if (kept->series.size() != result->series.size()) Fail("keeping labels lost series", body, "");
    for (std::size_t i = 0; i < kept->series.size(); ++i) {
      std::map<std::string, std::string> expected;
      for (const auto& [key, value] : result->series[i].metric) {
        if (key == "instance" || key == "name" || key == "node") expected[key] = value;
      }
      if (kept->series[i].metric != expected) Fail("kept labels differ", body, "");
    }
  }
  // A sink takes the same series, in order, and the result then holds none.
  std::vector<telemetry::PromSeries> taken;
  auto sunk = telemetry::ParseQueryResponse(
      status, body, {}, [&](telemetry::PromSeries&& s) { taken.push_back(std::move(s)); });
  if (sunk.ok() != result.ok()) Fail("a sink changed the outcome", body, "");
  if (sunk.ok()) {
    if (!sunk->series.empty()) Fail("a sink's result kept series", body, "");
    if (taken.size() != result->series.size()) Fail("a sink lost series", body, "");
    for (std::size_t i = 0; i < taken.size(); ++i) {
      if (taken[i].metric != result->series[i].metric ||
          taken[i].samples.size() != result->series[i].samples.size()) {
        Fail("a sink's series differ", body, "");
      }
    }
  }

  nlohmann::json object = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  auto node = telemetry::ParseNodeMetrics(object);
  if (node.ok() && node->name.empty()) Fail("NodeMetrics without a name was accepted", body, "");
  auto pod = telemetry::ParsePodMetrics(object);
  if (pod.ok() && pod->name.empty()) Fail("PodMetrics without a name was accepted", body, "");
  (void)telemetry::NodeInfoFromJson(object);
  return 0;
}
