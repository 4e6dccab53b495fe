// fuse_rope_spelling_test.cpp: the fuse-rope-spelling recogniser on PyTorch's rotate-half spelling
// with constant cos / sin tables computed in f32 as an exporter does, the move of a Rope behind a
// head Transpose, the negative case per precondition, and values against the reference.
#include "fusion_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"

#include <cmath>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using testing::count_ops;
using testing::expect_same_values;
using testing::run_pass;

constexpr std::string_view kPass = "fuse-rope-spelling";
constexpr std::int64_t B = 2, H = 3, S = 5, D = 8;

/// The [S, D] cos or sin table of \p theta, computed in f32 like torch's
/// `1 / theta ** (arange(0, D, 2) / D)`, `outer(arange(S), inv)`, `cat((ang, ang))`.
Tensor table(double theta, bool sine, Shape shape = Shape::of({S, D})) {
  std::vector<float> v;
  for (std::int64_t p = 0; p < S; ++p)
    for (std::int64_t j = 0; j < D; ++j) {
      const float e = static_cast<float>(2 * (j % (D / 2))) / static_cast<float>(D);
      const float inv = 1.0f / std::pow(static_cast<float>(theta), e);
      const float ang = static_cast<float>(p) * inv;
      v.push_back(sine ? std::sin(ang) : std::cos(ang));
    }
  return Tensor::from<float>(shape.sizes(), v);
}

struct Spelling {
  double theta = 10000;
  Shape table_shape = Shape::of({S, D});
  float perturb = 0;          ///< added to one sin entry
  bool transpose_in = false;  ///< x is Transpose {0,2,1,3} of a [B, S, H, D] input
  bool share_rotated = false; ///< the rotated half is also a graph output
};

Graph spelled(const Spelling& s) {
  Graph g("spelled_rope");
  Builder b(g);
  NodeId x = s.transpose_in ? b.transpose(b.input("y", Shape::of({B, S, H, D})), {0, 2, 1, 3})
                            : b.input("x", Shape::of({B, H, S, D}));
  Tensor sin = table(s.theta, true, s.table_shape);
  if (s.perturb != 0)
    sin.set_f64(D + 3, sin.get_f64(D + 3) + s.perturb);
  NodeId lo = b.narrow(x, -1, 0, D / 2);
  NodeId hi = b.narrow(x, -1, D / 2, D / 2);
  NodeId rot = b.concat({b.neg(hi), lo}, -1);
  b.output(b.add(b.mul(x, b.constant(table(s.theta, false, s.table_shape))),
                 b.mul(b.constant(sin), rot)));
  if (s.share_rotated)
    b.output(rot);
  return g;
}

TEST(FuseRopeSpelling, RotateHalfWithExportedTables) {
  for (double theta : {10000.0, 500000.0}) {
    for (bool leading_ones : {false, true}) {
      SCOPED_TRACE(std::to_string(theta) + (leading_ones ? " [1, 1, S, D]" : " [S, D]"));
      Spelling s;
      s.theta = theta;
      if (leading_ones)
        s.table_shape = Shape::of({1, 1, S, D});
      const Graph g = spelled(s);
      FusionReport rep;
      const Graph f = run_pass(g, kPass, nullptr, rep);
      ASSERT_EQ(count_ops(f, OpKind::Rope), 1) << ir::print(f) << rep.str();
      EXPECT_EQ(f.size(), 2u) << ir::print(f); // x, rope
      for (NodeId id : f.ids()) {
        if (f.node(id).op == OpKind::Rope) {
          const auto& a = f.node(id).attr<ir::RopeAttrs>();
          EXPECT_EQ(a.theta, theta);
          EXPECT_EQ(a.layout, ir::AttnLayout::bhsd);
          EXPECT_EQ(a.style, ir::RopeStyle::half);
          EXPECT_EQ(a.n_rot, D);
        }
      }
      // The tables hold f32 roundings of the angles; the op computes them exactly.
      expect_same_values(g, f, 2e-6);
    }
  }
}

TEST(FuseRopeSpelling, ARopeOfAHeadTransposeMovesBehindIt) {
  Spelling s;
  s.transpose_in = true;
  const Graph g = spelled(s);
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  EXPECT_EQ(rep.applied.at("rope_bshd"), 1) << rep.str();
  for (NodeId id : f.ids()) {
    const ir::Node& n = f.node(id);
    if (n.op == OpKind::Rope) {
      EXPECT_EQ(n.attr<ir::RopeAttrs>().layout, ir::AttnLayout::bshd);
      EXPECT_EQ(f.node(n.inputs[0]).op, OpKind::Input) << ir::print(f);
    }
  }
  EXPECT_EQ(count_ops(f, OpKind::Transpose), 1) << ir::print(f);
  expect_same_values(g, f, 2e-6);
}

/// \p g is left as it is, reported as a rope_spelling miss for \p reason.
void expect_miss(const Graph& g, MissReason reason, const ir::ClaimSet* claims = nullptr) {
  testing::expect_miss(g, kPass, "rope_spelling", reason, claims);
}

TEST(FuseRopeSpelling, TablesOfNoThetaAreAMiss) {
  Spelling s;
  s.perturb = 1e-3f;
  expect_miss(spelled(s), MissReason::attribute_mismatch);
}

TEST(FuseRopeSpelling, TablesOfAnotherShapeAreAMiss) {
  Spelling s;
  s.table_shape = Shape::of({1, S, D}); // fine: leading ones
  FusionReport rep;
  EXPECT_EQ(count_ops(run_pass(spelled(s), kPass, nullptr, rep), OpKind::Rope), 1) << rep.str();
  Graph g("per_head_tables");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({B, H, S, D}));
  std::vector<float> ones(static_cast<std::size_t>(H * S * D), 1.0f);
  NodeId c = b.constant(Tensor::from<float>({H, S, D}, ones));
  NodeId rot = b.concat({b.neg(b.narrow(x, -1, D / 2, D / 2)), b.narrow(x, -1, 0, D / 2)}, -1);
  b.output(b.add(b.mul(x, c), b.mul(rot, c)));
  expect_miss(g, MissReason::shape_mismatch);
}

TEST(FuseRopeSpelling, ARotatedHalfReadElsewhereIsAMiss) {
  Spelling s;
  s.share_rotated = true;
  expect_miss(spelled(s), MissReason::is_graph_output);
}

TEST(FuseRopeSpelling, AnUnclaimedRopeIsAMiss) {
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::Rope});
  expect_miss(spelled({}), MissReason::not_claimed, &claims);
}

} // namespace
} // namespace rlx::fusion
