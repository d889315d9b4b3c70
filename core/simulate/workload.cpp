#include "core/simulate/workload.h"

#include "core/common/yaml.h"
#include "core/kube/pod_resources.h"
#include "core/simulate/power_model.h"

#include <fmt/format.h>

#include <random>

namespace powerctl::simulate {
namespace {

using ojson = nlohmann::ordered_json;

// CPU requests in millicores and how often each occurs (weights sum to 100).
struct Size {
  int millis;
  int weight;
};
constexpr Size kSizes[] = {{100, 15}, {250, 20}, {500, 25}, {1000, 20}, {2000, 13}, {4000, 7}};

int PickMillis(std::mt19937_64& rng) {
  int draw = static_cast<int>(Uniform01(rng) * 100);
  for (const Size& s : kSizes) {
    if (draw < s.weight) return s.millis;
    draw -= s.weight;
  }
  return kSizes[0].millis;
}

}  // namespace

Result<WorkloadPod> MakeWorkloadPod(SimPod pod) {
  auto resources = kube::EffectivePodResources(pod.object);
  if (!resources.ok())
    return MakeError(ErrorCode::kInvalidInput,
                     "pod " + pod.name + ": " + resources.error().message);
  WorkloadPod out;
  out.cpu_request_millis = resources->cpu_request_millis;
  out.memory_request_bytes = resources->memory_request_bytes;
  out.cpu_nonzero_millis = resources->cpu_request_nonzero_millis;
  out.memory_nonzero_bytes = resources->memory_request_nonzero_bytes;
  out.pod = std::move(pod);
  return out;
}

std::vector<WorkloadPod> GenerateWorkload(const WorkloadSpec& spec) {
  std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ULL + 17);
  std::vector<WorkloadPod> out;
  double cores = 0;
  for (int i = 0;; ++i) {
    if (spec.pods ? i >= *spec.pods : cores >= spec.cpu_cores) break;
    int millis = PickMillis(rng);
    double gib_per_core = 0.5 + 3.5 * Uniform01(rng);
    auto memory_mib = static_cast<long long>(millis * gib_per_core * 1.024);
    nlohmann::json entry = {{"name", fmt::format("pod-{:04d}", i)}};
    nlohmann::json containers =
        nlohmann::json::array({{{"name", "app"},
                                {"cpu", fmt::format("{}m", millis)},
                                {"memory", fmt::format("{}Mi", std::max(64LL, memory_mib))}}});
    if (Uniform01(rng) < 0.2) {
      int sidecar = Uniform01(rng) < 0.5 ? 100 : 250;
      containers.push_back(
          {{"name", "sidecar"}, {"cpu", fmt::format("{}m", sidecar)}, {"memory", "128Mi"}});
    }
    entry["containers"] = std::move(containers);
    auto pod = ParsePodShorthand(entry, "generated workload");
    auto made = MakeWorkloadPod(std::move(*pod));
    cores += static_cast<double>(made->cpu_request_millis) / 1000.0;
    out.push_back(std::move(*made));
  }
  return out;
}

Result<std::vector<WorkloadPod>> ParseWorkload(std::string_view text, std::string_view source) {
  const std::string name(source);
  auto error = [&](const std::string& message) {
    return MakeError(ErrorCode::kInvalidInput, message);
  };
  POWERCTL_TRY(docs, ParseYamlDocuments(text, source, InputFileYamlLimits(text.size())));
  if (docs.size() != 1 || !docs[0].is_object() || !docs[0].contains("pods") ||
      !docs[0]["pods"].is_array() || docs[0]["pods"].empty()) {
    return error(name + ": must be a mapping with a non-empty list `pods:`");
  }
  const auto& pods = docs[0]["pods"];
  // The total first, so that a file asking for too many pods is refused before any is made.
  std::size_t total = 0;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto& count = pods[i].is_object() ? pods[i].value("count", ojson(1)) : ojson(1);
    const long long n = count.is_number_integer() ? count.get<long long>() : 1;
    total += n > 0 ? static_cast<std::size_t>(n) : 1;  // a bad count is refused below
    if (total > kMaxWorkloadPods) {
      return error(
          fmt::format("{}: pods[{}]: more than {} pods in all", name, i, kMaxWorkloadPods));
    }
  }
  std::vector<WorkloadPod> out;
  out.reserve(total);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    nlohmann::json entry = nlohmann::json::parse(pods[i].dump());
    // The entry's line only for an error: looking it up for every pod was quadratic.
    std::string pod_name = entry.is_object() ? entry.value("name", "") : "";
    const std::string where = fmt::format("{}: pods[{}]", name, i);
    auto precise = [&] {
      int line = pod_name.empty() ? 0 : LineOf(text, "name: " + pod_name);
      return line > 0 ? fmt::format("{}:{}", name, line) : where;
    };
    int count = 1;
    if (entry.is_object() && entry.contains("count")) {
      if (!entry["count"].is_number_integer() || entry["count"].get<int>() < 1 ||
          entry["count"].get<int>() > 100000) {
        return error(precise() + ": count: must be a whole number from 1 to 100000");
      }
      count = entry["count"].get<int>();
      entry.erase("count");
    }
    auto parsed = ParsePodShorthand(entry, where);
    if (!parsed.ok()) return ParsePodShorthand(entry, precise()).error();
    const SimPod& pod = *parsed;
    for (int c = 0; c < count; ++c) {
      SimPod copy = pod;
      if (count > 1) {
        copy.name = fmt::format("{}-{}", pod.name, c);
        copy.object["metadata"]["name"] = copy.name;
        copy.object["metadata"]["uid"] = copy.name;
      }
      auto made = MakeWorkloadPod(std::move(copy));
      if (!made.ok()) return WithContext(made.error(), precise());
      out.push_back(std::move(*made));
    }
  }
  return out;
}

}  // namespace powerctl::simulate
