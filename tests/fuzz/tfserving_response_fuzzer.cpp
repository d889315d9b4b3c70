// Fuzzes the TensorFlow Serving REST response parser (ParseTfServingResponse) and the helpers
// every REST predictor shares (ParseModelJson, DescribeHttpError) with model-server bodies:
//  * for 1-4 rows, an accepted body gives exactly one Prediction per row, each with either
//    watts (finite, 0..kMaxNodeWatts) or a reason, never both or neither; a rejected body
//    has a message with the documented prefix;
//  * ParseModelJson agrees with nlohmann's strict parser on every strict JSON document (the
//    NaN/Infinity rewrite must not touch strings or valid numbers);
//  * DescribeHttpError stays one bounded line of valid UTF-8.
//
// Run: tests/fuzz/run.sh tfserving_response_fuzzer

#include "core/predict/builtin_model.h"
#include "core/predict/http_batch.h"
#include "core/predict/tfserving_rest.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

using powerctl::predict::Prediction;

[[noreturn]] void Fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "tfserving_response_fuzzer: %s\n  input: \"%.*s\"\n  %s\n", what,
               static_cast<int>(input.size()), input.data(), detail.c_str());
  __builtin_trap();
}

void CheckPrediction(const Prediction& p, std::string_view body) {
  if (p.watts.has_value() == !p.error.empty()) {
    Fail("a row has both or neither of watts and a reason", body, p.error);
  }
  if (p.watts &&
      (!std::isfinite(*p.watts) || *p.watts < 0 || *p.watts > powerctl::predict::kMaxNodeWatts)) {
    Fail("a row has watts out of range", body, std::to_string(*p.watts));
  }
}

void CheckParse(std::string_view body) {
  for (std::size_t rows = 1; rows <= 4; ++rows) {
    auto parsed = powerctl::predict::ParseTfServingResponse(body, rows);
    if (!parsed.ok()) {
      const std::string& m = parsed.error().message;
      if (m.rfind("invalid response from model server: ", 0) != 0 &&
          m.rfind("model server error: ", 0) != 0) {
        Fail("an error without the documented prefix", body, m);
      }
      continue;
    }
    if (parsed->size() != rows) Fail("wrong number of predictions", body, std::to_string(rows));
    for (const Prediction& p : *parsed) CheckPrediction(p, body);
  }
}

void CheckLenientJson(std::string_view body) {
  const nlohmann::json strict = nlohmann::json::parse(body, nullptr, false);
  if (strict.is_discarded()) return;
  const nlohmann::json lenient = powerctl::predict::ParseModelJson(body);
  if (lenient != strict) Fail("ParseModelJson differs from strict JSON", body, lenient.dump());
}

void CheckHttpError(std::string_view body) {
  const std::string text = powerctl::predict::DescribeHttpError(500, body);
  if (text.size() > 220) Fail("DescribeHttpError is too long", body, text);
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20)
      Fail("DescribeHttpError has a control char", body, text);
  }
  // dump() throws type_error 316 on invalid UTF-8 with the default (strict) handler.
  try {
    (void)nlohmann::json(text).dump();
  } catch (const nlohmann::json::exception& e) {
    Fail("DescribeHttpError is not valid UTF-8", body, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckParse(body);
  CheckLenientJson(body);
  CheckHttpError(body);
  return 0;
}
