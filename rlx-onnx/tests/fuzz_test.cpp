// fuzz_test.cpp: malformed ONNX bytes (truncated, bit-flipped, spliced) never crash the importer
// or the TensorProto reader: each either imports into a graph that verifies or throws one
// rlx::Error. Deterministic (fixed seeds), a few thousand imports, well under a second.
#include "onnx_testing.hpp"
#include "rlx/ir/verify.hpp"
#include "rlx/onnx/import.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace rlx::onnx {
namespace {

using testing::attr;
using testing::ModelBuilder;

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  {
    ModelBuilder mb;
    mb.input("x", {std::string("batch"), 3, 8, 8});
    ir::Tensor w(ir::Shape::of({4, 3, 3, 3}));
    for (std::int64_t i = 0; i < w.numel(); ++i)
      w.set_f64(i, 0.01 * static_cast<double>(i % 7));
    mb.initializer("w", w);
    auto& conv = mb.node("Conv", {"x", "w"}, {"c"});
    attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    mb.node("Relu", {"c"}, {"r"});
    attr(mb.node("MaxPool", {"r"}, {"p"}), "kernel_shape", std::vector<std::int64_t>{2, 2});
    mb.node("Shape", {"p"}, {"s"});
    mb.initializer("ax", ir::Tensor::from<std::int64_t>({1}, {0}));
    mb.node("Flatten", {"p"}, {"f"});
    mb.node("Softmax", {"f"}, {"y"});
    mb.output("y");
    out.push_back(mb.bytes());
  }
  {
    ModelBuilder mb(11);
    mb.input("x", {2, 6});
    mb.initializer("shape", ir::Tensor::from<std::int64_t>({3}, {2, 3, -1}));
    mb.node("Reshape", {"x", "shape"}, {"r"});
    attr(mb.node("Transpose", {"r"}, {"t"}), "perm", std::vector<std::int64_t>{2, 0, 1});
    attr(mb.node("ReduceMean", {"t"}, {"m"}), "axes", std::vector<std::int64_t>{-1});
    mb.node("Sub", {"t", "m"}, {"y"});
    mb.output("y");
    out.push_back(mb.bytes());
  }
#ifdef RLX_ONNX_TESTDATA
  for (const char* m :
       {"node/test_gemm_all_attributes", "node/test_slice_neg_steps", "node/test_if",
        "pytorch-converted/test_Conv2d_groups", "simple/test_expand_shape_model1"}) {
    std::ifstream f(std::filesystem::path(RLX_ONNX_TESTDATA) / m / "model.onnx", std::ios::binary);
    if (!f)
      continue;
    std::ostringstream ss;
    ss << f.rdbuf();
    out.push_back(ss.str());
  }
#endif
  return out;
}

/// Imports \p bytes; a result must verify, a failure must be an rlx::Error.
void try_import(const std::string& bytes) {
  try {
    auto m = import_model(bytes);
    ir::verify(m.graph);
  } catch (const Error&) {}
}

TEST(OnnxFuzz, TruncatedModels) {
  for (const auto& s : seeds()) {
    std::size_t step = std::max<std::size_t>(1, s.size() / 200);
    for (std::size_t n = 0; n < s.size(); n += step)
      try_import(s.substr(0, n));
  }
}

TEST(OnnxFuzz, MutatedModels) {
  std::mt19937 rng(1234);
  for (const auto& s : seeds()) {
    for (int k = 0; k < 1000; ++k) {
      std::string m = s;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        std::size_t at = rng() % m.size();
        switch (rng() % 3) {
        case 0:
          m[at] = static_cast<char>(rng());
          break;
        case 1:
          m[at] = static_cast<char>(m[at] ^ (1 << (rng() % 8)));
          break;
        default: // splice a chunk of the model onto another place
          m.insert(at, m.substr(rng() % m.size(), 1 + rng() % 16));
        }
      }
      try_import(m);
    }
  }
}

TEST(OnnxFuzz, TensorProtos) {
  std::mt19937 rng(99);
  ::onnx::TensorProto t;
  ModelBuilder::fill(t, ir::Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  std::string s = t.SerializeAsString();
  for (int k = 0; k < 2000; ++k) {
    std::string m = s;
    m[rng() % m.size()] = static_cast<char>(rng());
    if (k % 5 == 0)
      m.resize(rng() % m.size());
    try {
      (void)read_tensor(m);
    } catch (const Error&) {}
  }
  // Dims whose product overflows, and data that does not fill the dims.
  ::onnx::TensorProto huge;
  huge.set_data_type(::onnx::TensorProto::FLOAT);
  huge.add_dims(std::int64_t{1} << 40);
  huge.add_dims(std::int64_t{1} << 40);
  EXPECT_THROW(read_tensor(huge.SerializeAsString()), ImportError);
  ::onnx::TensorProto shorter;
  shorter.set_data_type(::onnx::TensorProto::FLOAT);
  shorter.add_dims(4);
  shorter.add_float_data(1.0f);
  EXPECT_THROW(read_tensor(shorter.SerializeAsString()), ImportError);
}

TEST(OnnxFuzz, HostileShapeOperands) {
  // ConstantOfShape / Expand / Tile asked for astronomically large results.
  for (const char* op : {"ConstantOfShape", "Expand", "Tile"}) {
    ModelBuilder mb;
    mb.input("x", {1});
    mb.initializer("big", ir::Tensor::from<std::int64_t>({3}, {1 << 30, 1 << 30, 1 << 30}));
    if (std::string(op) == "ConstantOfShape") {
      mb.node(op, {"big"}, {"y"});
    } else if (std::string(op) == "Tile") {
      mb.initializer("reps", ir::Tensor::from<std::int64_t>({1}, {std::int64_t{1} << 62}));
      mb.node(op, {"x", "reps"}, {"y"});
    } else {
      mb.node(op, {"x", "big"}, {"y"});
    }
    mb.output("y");
    EXPECT_THROW(import_model(mb.bytes()), ImportError) << op;
  }
}

/// The import is refused with a clear "too large" error (no attempt to allocate the table).
void expect_too_large(const ModelBuilder& mb) {
  try {
    import_model(mb.bytes());
    ADD_FAILURE() << "no error";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("too large to build at import time"), std::string::npos)
        << e.what();
  }
}

TEST(OnnxFuzz, HugeTablesTheImporterWouldBuild) {
  // Range / EyeLike / Slice with a step over huge extents: refused, not materialised.
  {
    ModelBuilder mb;
    mb.input("x", {1});
    mb.initializer("s", ir::Tensor::scalar<std::int64_t>(0));
    mb.initializer("l", ir::Tensor::scalar<std::int64_t>(std::int64_t{1} << 38));
    mb.initializer("d", ir::Tensor::scalar<std::int64_t>(1));
    mb.node("Range", {"s", "l", "d"}, {"y"});
    mb.output("y");
    expect_too_large(mb);
  }
  {
    ModelBuilder mb;
    mb.input("x", {std::int64_t{1} << 19, std::int64_t{1} << 19});
    mb.node("EyeLike", {"x"}, {"y"});
    mb.output("y");
    expect_too_large(mb);
  }
  {
    ModelBuilder mb;
    mb.input("x", {std::int64_t{1} << 36});
    mb.initializer("st", ir::Tensor::from<std::int64_t>({1}, {0}));
    mb.initializer("en", ir::Tensor::from<std::int64_t>({1}, {std::int64_t{1} << 36}));
    mb.initializer("ax", ir::Tensor::from<std::int64_t>({1}, {0}));
    mb.initializer("sp", ir::Tensor::from<std::int64_t>({1}, {2}));
    mb.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
    mb.output("y");
    expect_too_large(mb);
  }
}

} // namespace
} // namespace rlx::onnx
