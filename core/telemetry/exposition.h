#pragma once
// A parser for the Prometheus text exposition format (version 0.0.4), which ipmi_exporter
// and node_exporter serve on /metrics. powerctl scrapes ipmi_exporter on every node, so
// the input is untrusted: the parser is bounded in bytes and samples and reports the
// first malformed line by number instead of guessing.

#include "core/common/result.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

struct ExpositionSample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;                           // NaN and +/-Inf are kept as such
  std::optional<std::int64_t> timestamp_ms;   // milliseconds since the Unix epoch
};

struct ExpositionLimits {
  std::size_t max_bytes = 16 << 20;  // a BMC exporter serves a few KiB; node_exporter ~100 KiB
  std::size_t max_samples = 200000;
  std::size_t max_labels = 64;  // per sample
};

struct Exposition {
  std::vector<ExpositionSample> samples;     // in input order
  std::map<std::string, std::string> types;  // metric family -> counter|gauge|...
  std::map<std::string, std::string> help;   // metric family -> unescaped help text
};

// kInvalidInput "line N: <what is wrong>" for malformed input, or when a limit is exceeded.
// Accepted leniently: '\r' before '\n', blank lines, comments other than HELP/TYPE,
// trailing whitespace, a trailing ',' in a label set, and the OpenMetrics "# EOF" line.
Result<Exposition> ParseExposition(std::string_view text, const ExpositionLimits& limits = {});

// A float as Go's strconv.ParseFloat spells it in expositions and Prometheus API values:
// decimals with exponents, and Inf/Infinity/NaN in any case with an optional sign.
std::optional<double> ParseGoFloat(std::string_view token);

// The samples named `name` whose labels include every pair in `match`, in input order.
std::vector<const ExpositionSample*> FindSamples(
    const Exposition& exposition, std::string_view name,
    const std::map<std::string, std::string>& match = {});

}  // namespace powerctl::telemetry
