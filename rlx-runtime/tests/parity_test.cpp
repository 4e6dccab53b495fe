// parity_test.cpp: end-to-end parity of the workloads through Session on the CPU backend against
// the reference interpreter, in f32, with seeded weights and inputs.
//
// Tolerance. The reference interpreter evaluates each op in double and rounds its result to f32;
// rlx's kernels accumulate in f32 (blocked GEMM sums, vectorised reductions, online softmax). So
// the difference is the f32 accumulation error of the kernels, carried through the layers: for a
// dot product of length K it is about sqrt(K) * 2^-24 * sum|a_i b_i| (K up to 3072 here: a few
// 1e-7 relative), and every LayerNorm / RMSNorm rescales it by 1/std of its input. Measured on
// these seeds: 1.4e-6 to 1.9e-6 on the transformers (outputs up to ~6 in magnitude, i.e. 3-4 f32
// ulps), 2.1e-7 on the MLP (outputs ~0.3). The bounds are 10x those figures: room for another
// summation order (other thread counts, GEMM providers), while a semantic mistake lands far above
// (tanh-GELU for erf-GELU, a RoPE pairing or mask error: 1e-3 and more).
#include "rlx/runtime/runtime.hpp"

#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace rlx::runtime {
namespace {

/// The sequence length of the transformer cases: 128, or 40 in the sanitizer build
/// (scripts/test-sanitizers.sh sets RLX_SANITIZER_BUILD), where the reference interpreter runs
/// several times slower; 40 is no multiple of the kernels' tiles, so the tails run under ASan.
std::int64_t seq_len() {
  return std::getenv("RLX_SANITIZER_BUILD") ? 40 : 128;
}

/// Compiles \p g, runs it on seeded inputs with seeded weights and \returns max |rlx - reference|
/// (also printed and recorded as a test property).
double max_error(const ir::Graph& g, const ir::Bindings& sizes, const std::string& label) {
  Session s;
  Executable exe = s.compile(g);
  const TensorMap params = init_params(g, 1234);
  exe.set_params(params);
  const TensorMap in = random_inputs(g, sizes, 1235);
  auto out = exe.run({in.begin(), in.end()});
  auto ref = ir::reference::evaluate(g, in, params);
  const double err = ir::max_abs_diff(out.at(exe.output_names()[0]), ref[0]);
  double scale = 0;
  for (std::int64_t i = 0; i < ref[0].numel(); ++i)
    scale = std::max(scale, std::abs(ref[0].get_f64(i)));
  std::cout << label << ": max |rlx - reference| = " << err << " (max |reference| = " << scale
            << ")\n";
  ::testing::Test::RecordProperty("max_abs_error", std::to_string(err));
  return err;
}

TEST(Parity, BertMini) {
  BertConfig c; // 4 layers, hidden 256, 4 heads, FFN 1024
  const std::int64_t seq = seq_len();
  EXPECT_LT(max_error(build_bert(c), {{"batch", 2}, {"seq", seq}},
                      "bert-mini b2 s" + std::to_string(seq)),
            2e-5);
}

TEST(Parity, BertMiniWithPaddingMask) {
  BertConfig c;
  c.padding_mask = true;
  ir::Graph g = build_bert(c);
  Session s;
  Executable exe = s.compile(g);
  const TensorMap params = init_params(g, 7);
  exe.set_params(params);
  TensorMap in = random_inputs(g, {{"batch", 2}, {"seq", 16}}, 8);
  for (std::int64_t i = 10; i < 16; ++i) // the second sequence is 10 tokens long
    in["attention_mask"].set_i64(16 + i, 0);
  auto out = exe.run({in.begin(), in.end()});
  auto ref = ir::reference::evaluate(g, in, params);
  EXPECT_LT(ir::max_abs_diff(out.at("y"), ref[0]), 2e-5);
}

// BERT-base widths (hidden 768, 12 heads, FFN 3072) with 2 of its 12 layers, to keep the reference
// interpreter fast; the full 12 layers run in the rlx-parity program.
TEST(Parity, BertBaseWidths) {
  BertConfig c;
  c.layers = 2;
  c.hidden = 768;
  c.heads = 12;
  c.ffn = 3072;
  const std::int64_t seq = seq_len();
  EXPECT_LT(max_error(build_bert(c), {{"batch", 1}, {"seq", seq}},
                      "bert-base (2 layers) s" + std::to_string(seq)),
            2e-5);
}

TEST(Parity, LlamaGroupedQuery) {
  LlamaConfig c; // 4 blocks, hidden 512, 8 heads
  c.kv_heads = 2;
  c.ffn = 1376;
  const std::int64_t seq = seq_len();
  EXPECT_LT(
      max_error(build_llama(c), {{"batch", 1}, {"seq", seq}}, "llama gqa s" + std::to_string(seq)),
      2e-5);
}

TEST(Parity, Mlp) {
  EXPECT_LT(max_error(build_mlp({}), {{"batch", 64}}, "mlp b64"), 2e-6);
}

} // namespace
} // namespace rlx::runtime
