// Wire compatibility of protos/ with TensorFlow Serving (the binary vectors were encoded by
// protoc from the upstream field numbers), and how a PredictResponse is read into watts.

#include "core/predict/tfserving_grpc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "tensorflow/core/framework/tensor.pb.h"
#include "tensorflow_serving/apis/predict.pb.h"

namespace powerctl::predict {
namespace {

namespace tfs = tensorflow::serving;

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

void SetShape(tensorflow::TensorProto* t, std::initializer_list<std::int64_t> dims) {
  for (std::int64_t d : dims) t->mutable_tensor_shape()->add_dim()->set_size(d);
}

// Serializes equal to the vector, and the vector parses back to the same bytes.
template <typename Message>
void ExpectWire(const Message& message, const std::string& hex) {
  std::string bytes;
  ASSERT_TRUE(message.SerializeToString(&bytes));
  EXPECT_EQ(Hex(bytes), hex);
  Message parsed;
  ASSERT_TRUE(parsed.ParseFromString(Unhex(hex)));
  std::string again;
  ASSERT_TRUE(parsed.SerializeToString(&again));
  EXPECT_EQ(Hex(again), hex);
}

TEST(TfServingWireTest, PredictRequestWithTensor) {
  tfs::PredictRequest r;
  r.mutable_model_spec()->set_name("power");
  r.mutable_model_spec()->set_signature_name("serving_default");
  tensorflow::TensorProto& x = (*r.mutable_inputs())["x"];
  x.set_dtype(tensorflow::DT_FLOAT);
  SetShape(&x, {1, 3});
  for (float v : {1.0f, 2.0f, 3.0f}) x.add_float_val(v);
  ExpectWire(r,
             "0a180a05706f7765721a0f73657276696e675f64656661756c74121f0a0178121a0801120812020801"
             "120208032a0c0000803f0000004000004040");
}

TEST(TfServingWireTest, PredictRequestWithVersion) {
  tfs::PredictRequest r;
  r.mutable_model_spec()->set_name("power");
  r.mutable_model_spec()->mutable_version()->set_value(3);
  ExpectWire(r, "0a0b0a05706f77657212020803");
}

TEST(TfServingWireTest, PredictRequestWithLabelAndFilter) {
  tfs::PredictRequest r;
  r.mutable_model_spec()->set_name("power");
  r.mutable_model_spec()->set_version_label("stable");
  r.add_output_filter("watts");
  ExpectWire(r, "0a0f0a05706f7765722206737461626c651a057761747473");
}

TEST(TfServingWireTest, PredictResponse) {
  tfs::PredictResponse r;
  tensorflow::TensorProto& w = (*r.mutable_outputs())["watts"];
  w.set_dtype(tensorflow::DT_FLOAT);
  SetShape(&w, {1, 1});
  w.add_float_val(250.5f);
  r.mutable_model_spec()->set_name("power");
  r.mutable_model_spec()->mutable_version()->set_value(3);
  r.mutable_model_spec()->set_signature_name("serving_default");
  ExpectWire(r,
             "0a1b0a05776174747312120801120812020801120208012a0400807a43121c0a05706f776572120208"
             "031a0f73657276696e675f64656661756c74");
}

TEST(TfServingWireTest, TensorsOfOtherTypes) {
  tensorflow::TensorProto d;
  d.set_dtype(tensorflow::DT_DOUBLE);
  SetShape(&d, {2});
  d.add_double_val(1.5);
  d.add_double_val(-2.0);
  ExpectWire(d, "08021204120208023210000000000000f83f00000000000000c0");

  tensorflow::TensorProto i;
  i.set_dtype(tensorflow::DT_INT64);
  SetShape(&i, {2});
  i.add_int64_val(1);
  i.add_int64_val(-1);
  ExpectWire(i, "0809120412020802520b01ffffffffffffffffff01");
}

// --- reading watts from a response ----------------------------------------------------------

std::string Response(tensorflow::DataType dtype, std::initializer_list<std::int64_t> dims,
                     std::initializer_list<double> values, bool as_content = false,
                     const std::string& name = "outputs") {
  tfs::PredictResponse r;
  tensorflow::TensorProto& t = (*r.mutable_outputs())[name];
  t.set_dtype(dtype);
  SetShape(&t, dims);
  for (double v : values) {
    if (dtype == tensorflow::DT_DOUBLE) {
      if (!as_content)
        t.add_double_val(v);
      else
        t.mutable_tensor_content()->append(reinterpret_cast<const char*>(&v), sizeof v);
    } else {
      const auto f = static_cast<float>(v);
      if (!as_content)
        t.add_float_val(f);
      else
        t.mutable_tensor_content()->append(reinterpret_cast<const char*>(&f), sizeof f);
    }
  }
  return r.SerializeAsString();
}

TEST(TfServingWireTest, ReadsRankOneAndRankTwoOutputs) {
  for (const std::string& bytes : {Response(tensorflow::DT_FLOAT, {2, 1}, {150, 250.5}),
                                   Response(tensorflow::DT_FLOAT, {2}, {150, 250.5}),
                                   Response(tensorflow::DT_FLOAT, {2, 1}, {150, 250.5}, true),
                                   Response(tensorflow::DT_DOUBLE, {2}, {150, 250.5}),
                                   Response(tensorflow::DT_DOUBLE, {2}, {150, 250.5}, true),
                                   Response(tensorflow::DT_FLOAT, {2}, {150, 250.5}, false, "y")}) {
    auto got = ParsePredictResponseWatts(bytes, 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].watts, 150.0) << got[0].error;
    EXPECT_EQ(got[1].watts, 250.5) << got[1].error;
  }
}

TEST(TfServingWireTest, BroadcastsASingleValue) {
  auto got = ParsePredictResponseWatts(Response(tensorflow::DT_FLOAT, {3, 1}, {200}), 3);
  for (const Prediction& p : got) EXPECT_EQ(p.watts, 200.0);
}

TEST(TfServingWireTest, RejectsMalformedResponsesForEveryRow) {
  struct Case {
    std::string bytes;
    std::string_view error;
  } cases[] = {
      {Response(tensorflow::DT_FLOAT, {3, 1}, {1, 2, 3}), kErrBadShape},  // 3 rows for 2
      {Response(tensorflow::DT_FLOAT, {2, 2}, {1, 2, 3, 4}), kErrBadShape},
      {Response(tensorflow::DT_FLOAT, {2, 1}, {1, 2, 3}), kErrBadShape},  // 3 values
      {Response(tensorflow::DT_FLOAT, {2, 1}, {1, 2, 3}, true), kErrBadShape},
      {Response(tensorflow::DT_INT64, {2, 1}, {}), kErrBadType},
      {tfs::PredictResponse().SerializeAsString(), kErrNoOutput},
      {std::string("\x0a\xff", 2), kErrUnparsable},
  };
  for (const Case& c : cases) {
    auto got = ParsePredictResponseWatts(c.bytes, 2);
    ASSERT_EQ(got.size(), 2u);
    for (const Prediction& p : got) {
      EXPECT_FALSE(p.watts.has_value());
      EXPECT_EQ(p.error, c.error);
    }
  }
}

TEST(TfServingWireTest, RejectsImplausibleValuesInTheirRowsOnly) {
  const double inf = std::numeric_limits<double>::infinity();
  auto got = ParsePredictResponseWatts(
      Response(tensorflow::DT_DOUBLE, {6}, {std::nan(""), inf, -inf, -1, 2e5, 180}), 6);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].error, kErrNaN);
  EXPECT_EQ(got[1].error, kErrInfinite);
  EXPECT_EQ(got[2].error, kErrInfinite);
  EXPECT_EQ(got[3].error, kErrNegative);
  EXPECT_EQ(got[4].error, kErrTooHigh);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_FALSE(got[i].watts.has_value());
  EXPECT_EQ(got[5].watts, 180.0);
  EXPECT_TRUE(got[5].error.empty());
}

}  // namespace
}  // namespace powerctl::predict
