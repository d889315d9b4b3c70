// Fuzzes the template engine: the input is the template text, rendered against a fixed
// small context with nested objects, arrays, strings that would change type in YAML,
// numbers, booleans, null and empty values, plus a few names the real templates use
// (namespace, scheduler.name, extender.tls.enabled, ...) so seeds from templates/ get past
// their first tags.
//
// Run: tests/fuzz/run.sh template_fuzzer

#include "core/manifests/template.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

const nlohmann::ordered_json& Context() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "name": "powerctl",
    "namespace": "power",
    "replicas": 3,
    "ratio": 0.5,
    "zero": 0,
    "enabled": true,
    "disabled": false,
    "nothing": null,
    "empty": "",
    "emptyList": [],
    "emptyObject": {},
    "tricky": ["yes", "0755", "a: b", "multi\nline", "\u2028", "\"quoted\"", "{{name}}"],
    "labels": {"app": "powerctl", "tier": "scheduler"},
    "items": [
      {"name": "a", "port": 8080, "tags": ["x", "y"]},
      {"name": "b", "port": 8443, "tags": []}
    ],
    "nested": {"a": {"b": {"c": "deep", "list": [1, 2.5, true, null]}}},
    "scheduler": {"name": "powerctl-scheduler", "serviceAccount": "powerctl-scheduler",
                  "replicas": 1, "leaderElect": true, "kubeconfig": ""},
    "extender": {"name": "powerctl-extender", "port": 8443,
                 "tls": {"enabled": true, "mutual": false, "serverName": "ext.power.svc"}},
    "model": {"image": "", "grpcPort": 8500}
  })");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)powerctl::manifests::RenderTemplate("fuzz.yaml", text, Context());
  return 0;
}
