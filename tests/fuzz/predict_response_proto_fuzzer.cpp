// Fuzzes how a TensorFlow Serving PredictResponse from an untrusted model server is read into
// watts (ParsePredictResponseWatts: protobuf parsing, then output lookup, shape and count
// checks, tensor_content decoding, broadcast). The first input byte is the number of rows
// the caller asked for (0-255); the rest is the serialized response.
//
// Beyond "no crash / no sanitizer report": exactly one result per row, and each row is either
// a finite watts value in [0, kMaxNodeWatts] with no error, or an error without a value.
//
// Run: tests/fuzz/run.sh predict_response_proto_fuzzer

#include "core/predict/builtin_model.h"
#include "core/predict/tfserving_grpc.h"

#include <google/protobuf/stubs/logging.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace {

[[noreturn]] void Fail(const char* what, std::size_t row) {
  std::fprintf(stderr, "predict_response_proto_fuzzer: %s (row %zu)\n", what, row);
  __builtin_trap();
}

}  // namespace

// Invalid UTF-8 in a proto3 string fails the parse (as intended) but libprotobuf also logs
// each one to stderr, which would drown libFuzzer's own output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t rows = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto got = powerctl::predict::ParsePredictResponseWatts(bytes, rows);
  if (got.size() != rows) Fail("result count differs from the row count", got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto& p = got[i];
    if (p.watts.has_value() == !p.error.empty()) Fail("row has both or neither watts and error", i);
    if (p.watts &&
        (!std::isfinite(*p.watts) || *p.watts < 0 || *p.watts > powerctl::predict::kMaxNodeWatts)) {
      Fail("accepted a bad value", i);
    }
  }
  return 0;
}
