// concurrency_test.cpp: Executable::run from several threads at once: each run gets a backend
// executable of its own (its own activation arena; the weights are shared), and the results are
// the serial results bit for bit.
#include "rlx/runtime/runtime.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace rlx::runtime {
namespace {

using ir::Tensor;

TEST(Executable, FourThreadsTwoShapesGetTheSerialResultsBitForBit) {
  BertConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.ffn = 128;
  const ir::Graph g = build_bert(c);
  Session s;
  Executable exe = s.compile(g);
  const TensorMap params = init_params(g, 1);
  exe.set_params(params);
  const std::vector<TensorMap> inputs{random_inputs(g, {{"batch", 1}, {"seq", 16}}, 2),
                                      random_inputs(g, {{"batch", 2}, {"seq", 7}}, 3)};
  std::vector<Tensor> serial;
  for (const TensorMap& in : inputs) {
    serial.push_back(exe.run({in.begin(), in.end()}).at("y"));
    const Tensor ref = ir::reference::evaluate(g, in, params)[0];
    ASSERT_LT(ir::max_abs_diff(serial.back(), ref), 1e-4); // the serial results are right
  }
  const std::int64_t weight_bytes = exe.weights()->plain_bytes() + exe.weights()->derived_bytes();

  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const auto k = static_cast<std::size_t>((t + i) % 2);
        try {
          if (!exe.run({inputs[k].begin(), inputs[k].end()}).at("y").identical(serial[k]))
            ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  // At most one backend executable per run in flight and variant, reused across runs; none holds
  // a copy of the weights.
  EXPECT_GE(exe.contexts(), 2u);
  EXPECT_LE(exe.contexts(), 8u);
  EXPECT_EQ(exe.weights()->plain_bytes() + exe.weights()->derived_bytes(), weight_bytes);
}

TEST(Executable, SetParamBetweenConcurrentRunsReachesEveryContext) {
  ir::Graph g("one_weight");
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape({ir::Dim::sym("n"), ir::Dim(32)}, ir::DType::f32));
  auto w = b.param("w", ir::Shape::of({48, 32}));
  b.output(b.matmul(x, w, false, true));
  Session s;
  Executable exe = s.compile(g);
  const TensorMap p1 = init_params(g, 1), p2 = init_params(g, 2);
  const TensorMap in = random_inputs(g, {{"n", 8}}, 3);
  std::vector<Tensor> want;
  for (const TensorMap* p : {&p1, &p2})
    want.push_back(ir::reference::evaluate(g, in, *p)[0]);
  for (int round = 0; round < 4; ++round) {
    const TensorMap& p = round % 2 ? p2 : p1;
    exe.set_params(p);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 20; ++i)
          if (ir::max_abs_diff(exe.run({in.begin(), in.end()}).at(exe.output_names()[0]),
                               want[static_cast<std::size_t>(round % 2)]) > 1e-4)
            ++wrong;
      });
    for (auto& th : threads)
      th.join();
    EXPECT_EQ(wrong.load(), 0) << "round " << round;
  }
}

} // namespace
} // namespace rlx::runtime
