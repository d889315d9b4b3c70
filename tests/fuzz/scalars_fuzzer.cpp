// Fuzzes the small scalar parsers that read flags and config values:
//  * KubeVersion::Parse: an accepted version must re-parse from its own MinorString() and
//    ImageTag() to the same major/minor (patch: none / the same, the line's newest known
//    patch when none was given);
//  * ParseDuration: an accepted duration must re-parse from FormatDuration() to the same
//    value, and FormatDuration must be a fixed point (Format(Parse(Format(d))) == Format(d)).
// Both parsers see the whole input.
//
// Run: tests/fuzz/run.sh scalars_fuzzer

#include "core/common/duration.h"
#include "core/common/kube_version.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "scalars_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

void CheckKubeVersion(std::string_view text) {
  using powerctl::KubeVersion;
  auto v = KubeVersion::Parse(text);
  if (!v.ok()) return;
  if (v->major != 1 || v->minor < KubeVersion::kMinMinor ||
      v->minor > KubeVersion::kMaxAcceptedMinor) {
    Fail("KubeVersion::Parse accepted an unsupported version", text, v->ImageTag());
  }
  const std::string minor = v->MinorString();
  auto from_minor = KubeVersion::Parse(minor);
  if (!from_minor.ok() || from_minor->major != v->major || from_minor->minor != v->minor ||
      from_minor->patch != -1) {
    Fail("MinorString() does not re-parse to the same version", text, minor);
  }
  const std::string tag = v->ImageTag();
  auto from_tag = KubeVersion::Parse(tag);
  if (!from_tag.ok() || from_tag->major != v->major || from_tag->minor != v->minor ||
      from_tag->patch != (v->patch < 0 ? v->NewestKnownPatch() : v->patch)) {
    Fail("ImageTag() does not re-parse to the same version", text, tag);
  }
}

void CheckDuration(std::string_view text) {
  auto d = powerctl::ParseDuration(text);
  if (!d.ok()) return;
  if (d->count() < 0) Fail("ParseDuration returned a negative duration", text, "");
  const std::string formatted = powerctl::FormatDuration(*d);
  auto again = powerctl::ParseDuration(formatted);
  if (!again.ok()) {
    Fail("FormatDuration output does not parse", text, formatted + ": " + again.error().message);
  }
  if (*again != *d) {
    Fail("duration changed in the round trip", text,
         formatted + ": " + std::to_string(d->count()) + "ms -> " + std::to_string(again->count()) +
             "ms");
  }
  if (powerctl::FormatDuration(*again) != formatted) {
    Fail("FormatDuration is not a fixed point", text, formatted);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckKubeVersion(text);
  CheckDuration(text);
  return 0;
}
