#include "core/kube/pod_resources.h"

#include "core/kube/quantity.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace powerctl::kube {
namespace {

using nlohmann::json;

constexpr std::int64_t kNanosPerMilli = 1000000;

// One resource of one container: CPU in nanocores or memory in bytes.
struct Amount {
  std::optional<std::int64_t> request;
  std::optional<std::int64_t> limit;
};

struct Container {
  bool sidecar = false;
  Amount cpu, memory;
};

Error Invalid(const std::string& where, const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, where + ": " + message);
}

// A quantity from a resource list: Kubernetes writes strings; manifests converted from YAML
// may carry plain numbers ("cpu: 1"), which are read through their JSON text.
Result<std::optional<std::int64_t>> ReadQuantity(const json& list, const char* resource,
                                                 const std::string& where) {
  if (!list.is_object()) return std::optional<std::int64_t>();
  auto it = list.find(resource);
  if (it == list.end() || it->is_null()) return std::optional<std::int64_t>();
  std::string text;
  if (it->is_string()) {
    text = it->get<std::string>();
  } else if (it->is_number()) {
    text = it->dump();
  } else {
    return Invalid(where + "." + resource, "not a quantity");
  }
  auto quantity = ParseQuantity(text);
  if (!quantity.ok()) return Invalid(where + "." + resource, quantity.error().message);
  if (quantity->negative) return Invalid(where + "." + resource, "negative quantity " + text);
  auto scaled = quantity->Scaled(std::string_view(resource) == "cpu" ? -9 : 0);
  if (!scaled.ok()) return Invalid(where + "." + resource, scaled.error().message);
  return std::optional<std::int64_t>(*scaled);
}

// Reads requests and limits, then applies the API server's defaulting: a request missing
// where a limit is set becomes the limit.
Result<Amount> ReadAmount(const json* resources, const char* resource, const std::string& where) {
  Amount amount;
  if (resources == nullptr || !resources->is_object()) return amount;
  if (auto it = resources->find("requests"); it != resources->end()) {
    POWERCTL_TRY(request, ReadQuantity(*it, resource, where + ".requests"));
    amount.request = request;
  }
  if (auto it = resources->find("limits"); it != resources->end()) {
    POWERCTL_TRY(limit, ReadQuantity(*it, resource, where + ".limits"));
    amount.limit = limit;
  }
  if (!amount.request && amount.limit) amount.request = amount.limit;
  return amount;
}

Result<std::vector<Container>> ReadContainers(const json& spec, const char* key, bool init) {
  std::vector<Container> out;
  auto list = spec.find(key);
  if (list == spec.end() || list->is_null()) return out;
  if (!list->is_array()) return Invalid(std::string("spec.") + key, "not a list");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string where = std::string("spec.") + key + "[" + std::to_string(i) + "]";
    if (!item.is_object()) return Invalid(where, "not an object");
    if (auto name = item.find("name"); name != item.end() && name->is_string()) {
      where = std::string(key) + " \"" + name->get<std::string>() + "\"";
    }
    Container c;
    auto policy = item.find("restartPolicy");
    c.sidecar = init && policy != item.end() && policy->is_string() && *policy == "Always";
    auto resources = item.find("resources");
    const json* r = resources != item.end() ? &*resources : nullptr;
    POWERCTL_TRY(cpu, ReadAmount(r, "cpu", where + ".resources"));
    POWERCTL_TRY(memory, ReadAmount(r, "memory", where + ".resources"));
    c.cpu = cpu;
    c.memory = memory;
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::int64_t> Add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return MakeError(ErrorCode::kInvalidInput, "pod resources: quantities too large to add");
  }
  return sum;
}

// PodRequests' max(sum of containers and sidecars, largest init step) for one resource;
// `pick` returns the value a container contributes.
template <typename Pick>
Result<std::int64_t> Effective(const std::vector<Container>& containers,
                               const std::vector<Container>& init, Pick pick) {
  std::int64_t sum = 0;
  for (const Container& c : containers) {
    POWERCTL_TRY(next, Add(sum, pick(c)));
    sum = next;
  }
  std::int64_t sidecars = 0;
  std::int64_t init_max = 0;
  for (const Container& c : init) {
    std::int64_t use = 0;
    if (c.sidecar) {
      POWERCTL_TRY(next_sum, Add(sum, pick(c)));
      POWERCTL_TRY(next_sidecars, Add(sidecars, pick(c)));
      sum = next_sum;
      sidecars = next_sidecars;
      use = sidecars;
    } else {
      POWERCTL_TRY(step, Add(pick(c), sidecars));
      use = step;
    }
    init_max = std::max(init_max, use);
  }
  return std::max(sum, init_max);
}

std::int64_t CeilMillis(std::int64_t nanos) {
  return nanos / kNanosPerMilli + (nanos % kNanosPerMilli != 0 ? 1 : 0);
}

}  // namespace

Result<PodResources> EffectivePodResources(const nlohmann::json& pod) {
  if (!pod.is_object()) return Invalid("pod", "not an object");
  auto spec_it = pod.find("spec");
  if (spec_it == pod.end() || !spec_it->is_object()) return Invalid("pod", "has no spec");
  const json& spec = *spec_it;
  POWERCTL_TRY(containers, ReadContainers(spec, "containers", false));
  POWERCTL_TRY(init, ReadContainers(spec, "initContainers", true));
  auto pod_level = spec.find("resources");
  const json* pod_resources = pod_level != spec.end() ? &*pod_level : nullptr;
  POWERCTL_TRY(pod_cpu, ReadAmount(pod_resources, "cpu", "spec.resources"));
  POWERCTL_TRY(pod_memory, ReadAmount(pod_resources, "memory", "spec.resources"));
  std::optional<std::int64_t> overhead_cpu, overhead_memory;
  if (auto overhead = spec.find("overhead"); overhead != spec.end()) {
    POWERCTL_TRY(cpu, ReadQuantity(*overhead, "cpu", "spec.overhead"));
    POWERCTL_TRY(memory, ReadQuantity(*overhead, "memory", "spec.overhead"));
    overhead_cpu = cpu;
    overhead_memory = memory;
  }

  auto cpu_request = [](const Container& c) { return c.cpu.request.value_or(0); };
  auto cpu_nonzero = [](const Container& c) {
    return c.cpu.request.value_or(kDefaultMilliCpuRequest * kNanosPerMilli);
  };
  auto cpu_limit = [](const Container& c) { return c.cpu.limit.value_or(0); };
  auto mem_request = [](const Container& c) { return c.memory.request.value_or(0); };
  auto mem_nonzero = [](const Container& c) {
    return c.memory.request.value_or(kDefaultMemoryRequest);
  };

  POWERCTL_TRY(cpu_nanos, Effective(containers, init, cpu_request));
  POWERCTL_TRY(cpu_nonzero_nanos, Effective(containers, init, cpu_nonzero));
  POWERCTL_TRY(limit_nanos, Effective(containers, init, cpu_limit));
  POWERCTL_TRY(memory, Effective(containers, init, mem_request));
  POWERCTL_TRY(memory_nonzero, Effective(containers, init, mem_nonzero));

  bool unbounded = false;
  bool cpu_set = pod_cpu.request.has_value();
  for (const auto* list : {&containers, &init}) {
    for (const Container& c : *list) {
      unbounded = unbounded || !c.cpu.limit;
      cpu_set = cpu_set || c.cpu.request;
    }
  }
  // Pod-level resources (spec.resources) replace the container sums where set.
  if (pod_cpu.request) cpu_nanos = cpu_nonzero_nanos = *pod_cpu.request;
  if (pod_cpu.limit) {
    limit_nanos = *pod_cpu.limit;
    unbounded = false;
  }
  if (pod_memory.request) memory = memory_nonzero = *pod_memory.request;

  const std::int64_t ocpu = overhead_cpu.value_or(0);
  const std::int64_t omem = overhead_memory.value_or(0);
  PodResources out;
  POWERCTL_TRY(cpu_total, Add(cpu_nanos, ocpu));
  POWERCTL_TRY(cpu_nonzero_total, Add(cpu_nonzero_nanos, ocpu));
  POWERCTL_TRY(limit_total, Add(limit_nanos, ocpu));
  POWERCTL_TRY(memory_total, Add(memory, omem));
  POWERCTL_TRY(memory_nonzero_total, Add(memory_nonzero, omem));
  out.cpu_request_millis = CeilMillis(cpu_total);
  out.cpu_request_nonzero_millis = CeilMillis(cpu_nonzero_total);
  out.memory_request_bytes = memory_total;
  out.memory_request_nonzero_bytes = memory_nonzero_total;
  if (!unbounded) out.cpu_limit_millis = CeilMillis(limit_total);
  out.cpu_unspecified = !cpu_set;
  return out;
}

}  // namespace powerctl::kube
