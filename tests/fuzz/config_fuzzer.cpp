// Fuzzes the powerctl.yaml reader: ApplyConfigText into a default PowerctlConfig, then
// ValidateConfig. When the text is accepted it also checks the property `powerctl init`
// (cli/cmd_init.cpp) and the extender's ConfigMap (render_context.cpp) rely on: the file
// WriteConfigYaml makes from the accepted config reads back to the same config, i.e.
//   WriteConfigYaml(ApplyConfigText(WriteConfigYaml(c))) == WriteConfigYaml(c)
// for both styles. (PowerctlConfig has no operator==; the written text covers every field.)
//
// Run: tests/fuzz/run.sh config_fuzzer

#include "core/config/config.h"
#include "core/config/config_loader.h"
#include "core/config/config_writer.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

using powerctl::config::ConfigStyle;
using powerctl::config::PowerctlConfig;

void CheckRoundTrip(const PowerctlConfig& config, ConfigStyle style) {
  const std::string written = powerctl::config::WriteConfigYaml(config, style);
  PowerctlConfig reread;
  const auto status = powerctl::config::ApplyConfigText(reread, written, "written.yaml");
  if (!status.ok()) {
    std::fprintf(stderr, "config_fuzzer: WriteConfigYaml output is rejected: %s\n---\n%s---\n",
                 status.error().message.c_str(), written.c_str());
    __builtin_trap();
  }
  const std::string rewritten = powerctl::config::WriteConfigYaml(reread, style);
  if (rewritten != written) {
    std::fprintf(stderr,
                 "config_fuzzer: config changed in the round trip\n--- written ---\n%s"
                 "--- re-read and written again ---\n%s---\n",
                 written.c_str(), rewritten.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  PowerctlConfig config;
  const auto status = powerctl::config::ApplyConfigText(config, text, "powerctl.yaml");
  if (!status.ok()) return 0;
  (void)powerctl::config::ValidateConfig(config);
  CheckRoundTrip(config, ConfigStyle::kPlain);
  CheckRoundTrip(config, ConfigStyle::kCommented);
  return 0;
}
