// reference_attention_test.cpp: the reference interpreter's Attention (scale, softcap, every mask
// kind, GQA, both layouts) and Rope (half / interleaved pairing, partial rotation, position
// offset) against hand-computed values.
#include "reference_testing.hpp"

#include <cmath>
#include <limits>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

Tensor attention(const std::vector<Tensor>& args, AttentionAttrs attrs) {
  return run(args, [&](Builder& b, const auto& a) {
    return b.attention(a[0], a[1], a[2], attrs, a.size() == 4 ? a[3] : NodeId{});
  });
}
AttentionAttrs masked(MaskKind m, std::int64_t window = 0) {
  AttentionAttrs a;
  a.mask = m;
  a.window = window;
  return a;
}
/// Zero queries: every visible key scores 0, so a row is the plain mean of its visible values.
Tensor zeros(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
  return f64({b, s, h, d}, Vec(static_cast<std::size_t>(b * s * h * d), 0.0));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

} // namespace

TEST(ReferenceAttention, DefaultScaleIsOneOverSqrtHeadDim) {
  // q = k = [[1, 0], [0, 1]], v = [[1, 2], [3, 4]]: row 0 scores [1/sqrt2, 0], row 1 [0, 1/sqrt2].
  Tensor q = f64({1, 2, 1, 2}, {1, 0, 0, 1});
  Tensor v = f64({1, 2, 1, 2}, {1, 2, 3, 4});
  double p = sigmoid(1 / std::sqrt(2.0)); // weight of the matching key
  expect_near(attention({q, q, v}, {}), {1, 2, 1, 2},
              {p * 1 + (1 - p) * 3, p * 2 + (1 - p) * 4, (1 - p) * 1 + p * 3, (1 - p) * 2 + p * 4},
              1e-15);
  AttentionAttrs scaled;
  scaled.scale = 2.0;
  double p2 = sigmoid(2.0);
  expect_near(
      attention({q, q, v}, scaled), {1, 2, 1, 2},
      {p2 * 1 + (1 - p2) * 3, p2 * 2 + (1 - p2) * 4, (1 - p2) * 1 + p2 * 3, (1 - p2) * 2 + p2 * 4},
      1e-15);
}

TEST(ReferenceAttention, SoftcapThenBias) {
  // scale 1, q = [2, 0], keys e0, e1: raw scores [2, 0]; softcap 1 gives [tanh 2, 0]; the bias
  // [0, 1] is added after the cap: [tanh 2, 1].
  Tensor q = f64({1, 1, 1, 2}, {2, 0});
  Tensor k = f64({1, 2, 1, 2}, {1, 0, 0, 1});
  Tensor v = f64({1, 2, 1, 1}, {1, 0});
  AttentionAttrs a;
  a.scale = 1.0;
  a.softcap = 1.0;
  expect_near(attention({q, k, v}, a), {1, 1, 1, 1}, {sigmoid(std::tanh(2.0))}, 1e-15);
  a.mask = MaskKind::bias;
  Tensor bias = f64({2}, {0, 1}); // broadcasts to [B, H, Sq, Sk]
  expect_near(attention({q, k, v, bias}, a), {1, 1, 1, 1}, {sigmoid(std::tanh(2.0) - 1)}, 1e-15);
}

TEST(ReferenceAttention, CausalAlignsTheLastQueryWithTheLastKey) {
  Tensor v = f64({1, 3, 1, 1}, {1, 2, 4});
  // Sq = Sk = 3: query i sees keys 0..i.
  expect_near(attention({zeros(1, 3, 1, 1), zeros(1, 3, 1, 1), v}, masked(MaskKind::causal)),
              {1, 3, 1, 1}, {1, 1.5, 7.0 / 3}, 1e-15);
  // Sq = 2, Sk = 3: query i sees keys j <= i + 1.
  expect_near(attention({zeros(1, 2, 1, 1), zeros(1, 3, 1, 1), v}, masked(MaskKind::causal)),
              {1, 2, 1, 1}, {1.5, 7.0 / 3}, 1e-15);
  // Sq = 3, Sk = 1: queries 0 and 1 see nothing (rows of 0), query 2 sees key 0.
  expect_near(attention({zeros(1, 3, 1, 1), zeros(1, 1, 1, 1), f64({1, 1, 1, 1}, {5})},
                        masked(MaskKind::causal)),
              {1, 3, 1, 1}, {0, 0, 5}, 1e-15);
}

TEST(ReferenceAttention, CausalWithScores) {
  // q = [1, 1], k = [0, ln 3] (D = 1, scale 1), v = [4, 8]: row 0 sees key 0 only; row 1 weighs
  // the keys 1/4 and 3/4.
  Tensor q = f64({1, 2, 1, 1}, {1, 1});
  Tensor k = f64({1, 2, 1, 1}, {0, std::log(3.0)});
  Tensor v = f64({1, 2, 1, 1}, {4, 8});
  AttentionAttrs a = masked(MaskKind::causal);
  a.scale = 1.0;
  expect_near(attention({q, k, v}, a), {1, 2, 1, 1}, {4, 7}, 1e-14);
}

TEST(ReferenceAttention, SlidingWindowKeepsTheLastWindowKeys) {
  Tensor v = f64({1, 3, 1, 1}, {1, 2, 4});
  // window 2, Sq = Sk: query i sees i-1 and i.
  expect_near(
      attention({zeros(1, 3, 1, 1), zeros(1, 3, 1, 1), v}, masked(MaskKind::sliding_window, 2)),
      {1, 3, 1, 1}, {1, 1.5, 3}, 1e-15);
  // Sq = 1, Sk = 3: the query is aligned with key 2 and sees keys 1 and 2.
  expect_near(
      attention({zeros(1, 1, 1, 1), zeros(1, 3, 1, 1), v}, masked(MaskKind::sliding_window, 2)),
      {1, 1, 1, 1}, {3}, 1e-15);
}

TEST(ReferenceAttention, PaddingMaskKeepsNonzeroKeysAndFullyMaskedRowsAreZero) {
  Tensor v = f64({2, 3, 1, 1}, {1, 2, 4, 10, 20, 40});
  Tensor keep = i64({2, 3}, {1, 1, 0, 0, 0, 0}); // batch 1 has no key at all
  expect_near(attention({zeros(2, 2, 1, 1), zeros(2, 3, 1, 1), v, keep}, masked(MaskKind::padding)),
              {2, 2, 1, 1}, {1.5, 1.5, 0, 0}, 1e-15);
  Tensor keep_f = f32({2, 3}, {0, 0.5f, 1, 1, 0, 0});
  Tensor v32 = f32({2, 3, 1, 1}, {1, 2, 4, 10, 20, 40});
  Tensor z = f32({2, 1, 1, 1}, {0, 0});
  Tensor zk = f32({2, 3, 1, 1}, {0, 0, 0, 0, 0, 0});
  expect_near(attention({z, zk, v32, keep_f}, masked(MaskKind::padding)), {2, 1, 1, 1}, {3, 10},
              1e-6);
}

TEST(ReferenceAttention, AllMinusInfinityBiasRowIsZero) {
  Tensor v = f64({1, 2, 1, 1}, {3, 5});
  Tensor bias = f64({1, 1, 2, 2}, {-kInf, -kInf, 0, -kInf}); // row 0 fully masked by the bias
  expect_near(attention({zeros(1, 2, 1, 1), zeros(1, 2, 1, 1), v, bias}, masked(MaskKind::bias)),
              {1, 2, 1, 1}, {0, 3}, 1e-15);
}

TEST(ReferenceAttention, GroupedQueryHeadsShareKvHeadHOverGroup) {
  // H = 4, KVH = 2: query heads 0, 1 read kv head 0 (value 10), heads 2, 3 read kv head 1 (20).
  AttentionAttrs a;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  Tensor v = f64({1, 1, 2, 1}, {10, 20});
  expect_near(attention({zeros(1, 1, 4, 1), zeros(1, 1, 2, 1), v}, a), {1, 1, 4, 1},
              {10, 10, 20, 20}, 1e-15);
  // The same in [B, H, S, D] with two positions: out[h][s] = v[h / 2][mean].
  a.layout = AttnLayout::bhsd;
  Tensor vb = f64({1, 2, 2, 1}, {10, 12, 20, 22});
  Tensor qb = f64({1, 4, 2, 1}, Vec(8, 0.0));
  Tensor kb = f64({1, 2, 2, 1}, Vec(4, 0.0));
  expect_near(attention({qb, kb, vb}, a), {1, 4, 2, 1}, {11, 11, 11, 11, 21, 21, 21, 21}, 1e-15);
}

TEST(ReferenceAttention, LayoutsAgree) {
  // Random-ish values in [B, S, H, D]; the [B, H, S, D] result must be its transpose.
  const std::int64_t B = 2, S = 3, H = 2, D = 4;
  Vec qv, kv, vv;
  for (std::int64_t i = 0; i < B * S * H * D; ++i) {
    qv.push_back(std::sin(0.7 * static_cast<double>(i)));
    kv.push_back(std::cos(1.3 * static_cast<double>(i)));
    vv.push_back(std::sin(0.3 * static_cast<double>(i) + 1));
  }
  Tensor q = f64({B, S, H, D}, qv), k = f64({B, S, H, D}, kv), v = f64({B, S, H, D}, vv);
  AttentionAttrs a = masked(MaskKind::causal);
  a.num_heads = a.num_kv_heads = H;
  Tensor r1 = attention({q, k, v}, a);
  auto to_bhsd = [](const Tensor& t) {
    return run({t}, [](Builder& b, const auto& x) { return b.transpose(x[0], {0, 2, 1, 3}); });
  };
  a.layout = AttnLayout::bhsd;
  Tensor r2 = attention({to_bhsd(q), to_bhsd(k), to_bhsd(v)}, a);
  expect_near(r2, {B, H, S, D}, values(to_bhsd(r1)), 1e-15);
}

// ---- RoPE
// ----------------------------------------------------------------------------------------

namespace {

Tensor rope(const Tensor& x, RopeAttrs attrs) {
  return run({x}, [&](Builder& b, const auto& a) { return b.rope(a[0], attrs); });
}
RopeAttrs rope_attrs(RopeStyle style, std::int64_t n_rot = 0, std::int64_t offset = 0,
                     AttnLayout layout = AttnLayout::bshd) {
  RopeAttrs a;
  a.style = style;
  a.n_rot = n_rot;
  a.position_offset = offset;
  a.layout = layout;
  a.theta = 100.0; // inv_freq_k = 100^(-2k/4): 1 and 0.1 for a 4-feature rotation
  return a;
}

} // namespace

TEST(ReferenceRope, HalfStylePairsIWithIPlusHalf) {
  // Position 0 is unchanged; position 1 rotates pair (0, 2) by 1 rad and pair (1, 3) by 0.1.
  Tensor x = f64({1, 2, 1, 4}, {1, 2, 3, 4, 1, 2, 3, 4});
  double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
  expect_near(rope(x, rope_attrs(RopeStyle::half)), {1, 2, 1, 4},
              {1, 2, 3, 4, 1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2},
              1e-15);
}

TEST(ReferenceRope, InterleavedStylePairs2IWith2IPlus1) {
  Tensor x = f64({1, 2, 1, 4}, {1, 2, 3, 4, 1, 2, 3, 4});
  double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
  expect_near(rope(x, rope_attrs(RopeStyle::interleaved)), {1, 2, 1, 4},
              {1, 2, 3, 4, 1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2},
              1e-15);
}

TEST(ReferenceRope, PartialRotationUsesNRotAndLeavesTheRest) {
  // D = 6, n_rot = 4: frequencies come from n_rot (1 and 0.1), features 4 and 5 stay.
  Tensor x = f64({1, 2, 1, 6}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
  expect_near(
      rope(x, rope_attrs(RopeStyle::half, 4)), {1, 2, 1, 6},
      {1, 2, 3, 4, 5, 6, 1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2, 5, 6},
      1e-15);
}

TEST(ReferenceRope, PositionOffsetShiftsPositions) {
  // One position with offset 3: angles 3 and 0.3.
  Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  double c1 = std::cos(3.0), s1 = std::sin(3.0), c2 = std::cos(0.3), s2 = std::sin(0.3);
  expect_near(rope(x, rope_attrs(RopeStyle::interleaved, 0, 3)), {1, 1, 1, 4},
              {1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2}, 1e-6);
}

TEST(ReferenceRope, BhsdTakesPositionsFromAxis2) {
  // [B=1, H=2, S=2, D=2]: rows (h, s) = (0,0), (0,1), (1,0), (1,1); only s = 1 rotates (by 1 rad).
  Tensor x = f64({1, 2, 2, 2}, {1, 0, 1, 0, 0, 1, 0, 1});
  double c = std::cos(1.0), s = std::sin(1.0);
  expect_near(rope(x, rope_attrs(RopeStyle::half, 0, 0, AttnLayout::bhsd)), {1, 2, 2, 2},
              {1, 0, c, s, 0, 1, -s, c}, 1e-15);
}
