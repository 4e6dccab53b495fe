// fuse_layer_norm_spelling_test.cpp: the fuse-layer-norm-spelling recogniser on the spellings
// exporters emit (pow or mul for the square, div-sqrt or mul-rsqrt, with and without beta), its
// negative case per precondition, the text before and after, and values against the reference.
#include "fusion_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;
using testing::expect_same_values;
using testing::run_pass;

constexpr std::string_view kPass = "fuse-layer-norm-spelling";

struct Spelling {
  bool pow = true;        ///< d ^ 2, else d * d
  bool rsqrt = false;     ///< d * rsqrt(var + eps), else d / sqrt(var + eps)
  bool beta = true;       ///< + beta
  std::int64_t axis = -1; ///< the reductions' axis
  Shape gamma = Shape::of({6});
  bool share_d = false; ///< d is also a graph output
};

Graph spelled(const Spelling& s) {
  Graph g("spelled_layer_norm");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3, 6}));
  NodeId d = b.sub(x, b.mean(x, {s.axis}, true));
  NodeId sq = s.pow ? b.pow(d, b.scalar(2, DType::f32)) : b.mul(d, d);
  NodeId ve = b.add(b.mean(sq, {s.axis}, true), b.scalar(1e-5, DType::f32));
  NodeId y = s.rsqrt ? b.mul(b.rsqrt(ve), d) : b.div(d, b.sqrt(ve));
  y = b.mul(b.param("gamma", s.gamma), y);
  if (s.beta)
    y = b.add(y, b.param("beta", Shape::of({6})));
  b.output(y);
  if (s.share_d)
    b.output(d);
  return g;
}

TEST(FuseLayerNormSpelling, EverySpelling) {
  for (bool pow : {true, false})
    for (bool rsqrt : {false, true})
      for (bool beta : {true, false})
        for (std::int64_t axis : {-1, 2}) {
          SCOPED_TRACE(std::string(pow ? "pow" : "mul") + (rsqrt ? " rsqrt" : " div") +
                       (beta ? " beta" : "") + " axis " + std::to_string(axis));
          const Graph g = spelled({pow, rsqrt, beta, axis});
          FusionReport rep;
          const Graph f = run_pass(g, kPass, nullptr, rep);
          EXPECT_EQ(count_ops(f, OpKind::LayerNorm), 1) << ir::print(f);
          EXPECT_EQ(f.size(), beta ? 4u : 3u) << ir::print(f); // x, gamma, (beta,) layer_norm
          EXPECT_TRUE(rep.missed.empty()) << rep.str();
          for (NodeId id : f.ids())
            if (f.node(id).op == OpKind::LayerNorm) {
              EXPECT_DOUBLE_EQ(f.node(id).attr<ir::NormAttrs>().eps, static_cast<double>(1e-5f));
              EXPECT_EQ(f.node(id).inputs.size(), beta ? 3u : 2u);
            }
          // ~9 f32 roundings in the spelling against one in the op, on values of order 1.
          expect_same_values(g, f, 2e-6);
        }
}

TEST(FuseLayerNormSpelling, TextBeforeAndAfter) {
  const Graph g = spelled({});
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  const std::string before = ir::print(g), after = ir::print(f);
  EXPECT_NE(before.find("= reduce[op=mean"), std::string::npos) << before;
  EXPECT_EQ(after.find("= reduce["), std::string::npos) << after;
  EXPECT_EQ(after.find("= sqrt("), std::string::npos) << after;
  EXPECT_NE(after.find("= layer_norm[eps="), std::string::npos) << after;
  EXPECT_EQ(rep.applied.at("layer_norm_spelling"), 1);
  EXPECT_EQ(rep.applied.at("layer_norm_beta"), 1);
}

/// \p g is left as it is, reported as a layer_norm_spelling miss for \p reason.
void expect_miss(const Graph& g, MissReason reason, const ir::ClaimSet* claims = nullptr) {
  testing::expect_miss(g, kPass, "layer_norm_spelling", reason, claims);
}

TEST(FuseLayerNormSpelling, ANormOverAnotherAxisIsAMiss) {
  Spelling s;
  s.axis = 1;
  s.gamma = Shape::of({6});
  s.beta = false;
  expect_miss(spelled(s), MissReason::attribute_mismatch);
}

TEST(FuseLayerNormSpelling, AGammaOfAnotherShapeIsAMiss) {
  Spelling s;
  s.gamma = Shape::of({3, 6});
  s.beta = false;
  expect_miss(spelled(s), MissReason::shape_mismatch);
}

TEST(FuseLayerNormSpelling, ACentredValueReadElsewhereIsAMiss) {
  Spelling s;
  s.share_d = true;
  expect_miss(spelled(s), MissReason::is_graph_output);
}

TEST(FuseLayerNormSpelling, AnUnclaimedLayerNormIsAMiss) {
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::LayerNorm});
  expect_miss(spelled({}), MissReason::not_claimed, &claims);
}

} // namespace
} // namespace rlx::fusion
