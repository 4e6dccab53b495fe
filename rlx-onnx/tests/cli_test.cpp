// cli_test.cpp: `rlx run|inspect|bench --onnx model.onnx`: the model's inputs, outputs and weights
// come from the file; --output writes the named output, which matches the reference interpreter;
// an unsupported model is one clear error.
#include "onnx_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/onnx/export.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

namespace rlx::onnx {
namespace {

namespace fs = std::filesystem;

/// Runs \p args through the shell; \returns {exit status, stdout + stderr}.
std::pair<int, std::string> rlx(const std::string& args) {
  std::string cmd = std::string(RLX_CLI_PATH) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 512> buf{};
  while (p && fgets(buf.data(), buf.size(), p.get()))
    out += buf.data();
  int rc = pclose(p.release());
  return {WEXITSTATUS(rc), out};
}

TEST(OnnxCli, RunInspectAndBenchAnOnnxFile) {
  fs::path dir = fs::temp_directory_path() / ("rlx_onnx_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  ir::Graph g("tiny");
  ir::Builder b(g);
  auto x = b.input("features", ir::Shape({ir::Dim::sym("batch"), ir::Dim(4)}, ir::DType::f32));
  auto w = b.param("w", ir::Shape::of({3, 4}));
  b.output(b.softmax(b.relu(b.matmul(x, w, false, true)), -1));
  TensorMap params{{"w", ir::Tensor::from<float>(
                             {3, 4}, {0.5f, -1, 0.25f, 2, 1, 1, -1, 0.5f, 0, 0.1f, 0.2f, 0.3f})}};
  export_file(g, dir / "tiny.onnx", params);
  ir::Tensor xv = ir::Tensor::from<float>({2, 4}, {1, 2, 3, 4, -1, 0.5f, 2, 0});
  runtime::write_npy((dir / "x.npy").string(), xv);

  auto [rc, out] = rlx("run --onnx " + (dir / "tiny.onnx").string() +
                       " --batch 2 --input features=" + (dir / "x.npy").string() +
                       " --output output0=" + (dir / "y.npy").string());
  ASSERT_EQ(rc, 0) << out;
  auto want = ir::reference::evaluate(g, {{"features", xv}}, params)[0];
  EXPECT_LT(ir::max_abs_diff(runtime::read_npy((dir / "y.npy").string()), want), 1e-6);

  auto [irc, iout] = rlx("inspect --onnx " + (dir / "tiny.onnx").string());
  EXPECT_EQ(irc, 0) << iout;
  EXPECT_NE(iout.find("features"), std::string::npos) << iout;

  auto [brc, bout] = rlx("bench --onnx " + (dir / "tiny.onnx").string() + " --batch 2");
  EXPECT_EQ(brc, 0) << bout;

  testing::ModelBuilder mb;
  mb.input("x", {2});
  mb.node("Det", {"x"}, {"y"}, "det");
  mb.output("y");
  {
    std::ofstream f(dir / "bad.onnx", std::ios::binary);
    f << mb.bytes();
  }
  auto [erc, eout] = rlx("run --onnx " + (dir / "bad.onnx").string() + " --random-inputs");
  EXPECT_NE(erc, 0);
  EXPECT_NE(eout.find("Det node 'det': op Det is not supported"), std::string::npos) << eout;
  fs::remove_all(dir);
}

TEST(OnnxCli, GradOfAnOnnxFileHasOneGradientPerInitializer) {
  // y = tanh(x W + b) with W [4, 3] and b [3]: small enough that the importer would make both
  // Constants, but `rlx grad` takes every float initializer as a parameter. The loss is sum(y), so
  // d/dW = x^T (1 - y^2) and d/db = the column sums of (1 - y^2), computed here in double.
  fs::path dir = fs::temp_directory_path() / ("rlx_onnx_grad_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const ir::Tensor w = ir::Tensor::from<float>(
      {4, 3}, {0.5f, -1, 0.25f, 0.2f, 1, -0.3f, -0.7f, 0.5f, 0, 0.1f, 0.2f, 0.3f});
  const ir::Tensor bias = ir::Tensor::from<float>({3}, {0.1f, -0.2f, 0.3f});
  testing::ModelBuilder mb;
  mb.input("x", {2, 4}).initializer("W", w).initializer("b", bias);
  mb.node("MatMul", {"x", "W"}, {"xw"});
  mb.node("Add", {"xw", "b"}, {"z"});
  mb.node("Tanh", {"z"}, {"y"});
  mb.output("y");
  {
    std::ofstream f(dir / "lin.onnx", std::ios::binary);
    f << mb.bytes();
  }
  const ir::Tensor xv = ir::Tensor::from<float>({2, 4}, {1, 2, -1, 0.5f, -0.5f, 0.25f, 2, -1});
  runtime::write_npy((dir / "x.npy").string(), xv);
  auto [rc, out] =
      rlx("grad --onnx " + (dir / "lin.onnx").string() + " --input x=" + (dir / "x.npy").string() +
          " --out " + (dir / "g.safetensors").string());
  ASSERT_EQ(rc, 0) << out;
  const auto grads = runtime::read_safetensors(dir / "g.safetensors").tensors;
  ASSERT_EQ(grads.size(), 3u) << out;
  ASSERT_TRUE(grads.count("W") && grads.count("b") && grads.count("loss")) << out;
  double loss = 0;
  std::vector<double> dz(6); // 1 - y^2 per [row, column]
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      double z = bias.get_f64(c);
      for (int k = 0; k < 4; ++k)
        z += xv.get_f64(r * 4 + k) * w.get_f64(k * 3 + c);
      loss += std::tanh(z);
      dz[static_cast<std::size_t>(r * 3 + c)] = 1 - std::tanh(z) * std::tanh(z);
    }
  EXPECT_NEAR(grads.at("loss").get_f64(0), loss, 1e-5);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(grads.at("b").get_f64(c), dz[static_cast<std::size_t>(c)] + dz[3u + c], 1e-5);
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(grads.at("W").get_f64(k * 3 + c),
                  xv.get_f64(k) * dz[static_cast<std::size_t>(c)] + xv.get_f64(4 + k) * dz[3u + c],
                  1e-5)
          << "W[" << k << ", " << c << "]";
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace rlx::onnx
