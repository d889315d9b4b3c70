// Fuzzes ParseAgentStatus, which reads the lb-agent's GET /status body that `doctor` receives
// from a pod through the API server: it never throws, errors are kInvalidInput with a message,
// and every string it accepted is one printable line of bounded length (doctor prints them).
//
// Run: tests/fuzz/run.sh agent_status_fuzzer

#include "core/lb/agent_status.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "agent_status_fuzzer: %s\n  input: \"%.*s\"\n", what,
               static_cast<int>(input.size()), input.data());
  __builtin_trap();
}

// What OneLine promises: no control characters, at most 300 bytes plus "...".
bool Printable(const std::string& text) {
  if (text.size() > 303) return false;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto status = powerctl::lb::ParseAgentStatus(text);
  if (!status.ok()) {
    if (status.error().code != powerctl::ErrorCode::kInvalidInput)
      Fail("an error other than kInvalidInput", text);
    if (status.error().message.empty()) Fail("an error without a message", text);
    return 0;
  }
  for (const std::string* s :
       {&status->node, &status->mode, &status->last_sync, &status->last_error}) {
    if (!Printable(*s)) Fail("an accepted top-level string is not one bounded line", text);
  }
  if (status->node.empty()) Fail("an accepted status without a node", text);
  std::size_t counted = 0;
  for (const auto& service : status->services) {
    if (service.namespace_.empty() || service.name.empty() || service.state.empty())
      Fail("an accepted Service without namespace, name or state", text);
    for (const std::string* s :
         {&service.namespace_, &service.name, &service.state, &service.reason}) {
      if (!Printable(*s)) Fail("an accepted Service string is not one bounded line", text);
    }
    if (service.endpoints > size) Fail("more endpoints than bytes", text);
  }
  for (const char* state : {"balanced", "skipped", "failed"}) counted += status->CountState(state);
  if (counted > status->services.size()) Fail("states counted more than once", text);
  return 0;
}
