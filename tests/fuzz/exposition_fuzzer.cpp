// Fuzzes ParseExposition, the parser of what ipmi_exporter (an untrusted peer on every node)
// serves on /metrics:
//  * the limits hold: no more samples or labels per sample than allowed;
//  * every accepted sample re-renders to the text format and re-parses to the same sample
//    (name, labels, value bits or NaN, timestamp), so nothing is lost or invented;
//  * a rejected input names a line ("line N: ...").
//
// Run: tests/fuzz/run.sh exposition_fuzzer

#include "core/telemetry/exposition.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using powerctl::telemetry::Exposition;
using powerctl::telemetry::ExpositionLimits;
using powerctl::telemetry::ExpositionSample;
using powerctl::telemetry::ParseExposition;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "exposition_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string Render(const Exposition& e) {
  std::string out;
  for (const ExpositionSample& s : e.samples) {
    out += s.name + "{";
    for (const auto& [key, value] : s.labels) out += key + "=\"" + EscapeLabel(value) + "\",";
    out += "} " + FormatValue(s.value);
    if (s.timestamp_ms) out += " " + std::to_string(*s.timestamp_ms);
    out += "\n";
  }
  return out;
}

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ExpositionLimits limits;
  limits.max_samples = 64;
  limits.max_labels = 8;
  auto parsed = ParseExposition(text, limits);
  if (!parsed.ok()) {
    if (parsed.error().message.rfind("line ", 0) != 0) {
      Fail("an error does not name its line", text, parsed.error().message);
    }
    return 0;
  }
  if (parsed->samples.size() > limits.max_samples) Fail("too many samples", text, "");
  for (const ExpositionSample& s : parsed->samples) {
    if (s.labels.size() > limits.max_labels) Fail("too many labels", text, s.name);
  }
  const std::string rendered = Render(*parsed);
  auto again = ParseExposition(rendered, limits);
  if (!again.ok()) Fail("a rendered exposition does not parse", text, again.error().message);
  if (again->samples.size() != parsed->samples.size()) {
    Fail("the sample count changed in the round trip", text, rendered);
  }
  for (std::size_t i = 0; i < parsed->samples.size(); ++i) {
    const ExpositionSample& a = parsed->samples[i];
    const ExpositionSample& b = again->samples[i];
    if (a.name != b.name || a.labels != b.labels || !SameValue(a.value, b.value) ||
        a.timestamp_ms != b.timestamp_ms) {
      Fail("a sample changed in the round trip", text, rendered);
    }
  }
  return 0;
}
