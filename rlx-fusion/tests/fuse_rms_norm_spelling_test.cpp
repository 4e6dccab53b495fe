// fuse_rms_norm_spelling_test.cpp: the fuse-rms-norm-spelling recogniser on the spellings
// exporters emit (pow or mul for the square; x / sqrt, x * rsqrt or x * (1 / sqrt) as PyTorch
// exports torch.rsqrt), its negative case per precondition, and values against the reference.
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

constexpr std::string_view kPass = "fuse-rms-norm-spelling";

enum class Norm : std::uint8_t { div_sqrt, mul_rsqrt, mul_reciprocal };

struct Spelling {
  bool pow = true; ///< x ^ 2, else x * x
  Norm norm = Norm::mul_reciprocal;
  std::int64_t axis = -1; ///< the reduction's axis
  Shape gamma = Shape::of({6});
  bool share_ms = false; ///< the mean square is also a graph output
};

Graph spelled(const Spelling& s) {
  Graph g("spelled_rms_norm");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3, 6}));
  NodeId sq = s.pow ? b.pow(x, b.scalar(2, DType::f32)) : b.mul(x, x);
  NodeId ms = b.mean(sq, {s.axis}, true);
  NodeId ve = b.add(ms, b.scalar(1e-6, DType::f32));
  NodeId y = s.norm == Norm::div_sqrt    ? b.div(x, b.sqrt(ve))
             : s.norm == Norm::mul_rsqrt ? b.mul(b.rsqrt(ve), x)
                                         : b.mul(x, b.div(b.scalar(1, DType::f32), b.sqrt(ve)));
  b.output(b.mul(y, b.param("gamma", s.gamma)));
  if (s.share_ms)
    b.output(ms);
  return g;
}

TEST(FuseRmsNormSpelling, EverySpelling) {
  for (bool pow : {true, false})
    for (Norm norm : {Norm::div_sqrt, Norm::mul_rsqrt, Norm::mul_reciprocal})
      for (std::int64_t axis : {-1, 2}) {
        SCOPED_TRACE(std::string(pow ? "pow" : "mul") + " norm " +
                     std::to_string(static_cast<int>(norm)) + " axis " + std::to_string(axis));
        const Graph g = spelled({pow, norm, axis});
        FusionReport rep;
        const Graph f = run_pass(g, kPass, nullptr, rep);
        EXPECT_EQ(count_ops(f, OpKind::RmsNorm), 1) << ir::print(f);
        EXPECT_EQ(f.size(), 3u) << ir::print(f); // x, gamma, rms_norm
        EXPECT_TRUE(rep.missed.empty()) << rep.str();
        EXPECT_EQ(rep.applied.at("rms_norm_spelling"), 1);
        for (NodeId id : f.ids()) {
          if (f.node(id).op == OpKind::RmsNorm) {
            EXPECT_DOUBLE_EQ(f.node(id).attr<ir::NormAttrs>().eps, static_cast<double>(1e-6f));
          }
        }
        // ~6 f32 roundings in the spelling against the op's, on values of order 1.
        expect_same_values(g, f, 2e-6);
      }
}

/// \p g is left as it is, reported as a rms_norm_spelling miss for \p reason.
void expect_miss(const Graph& g, MissReason reason, const ir::ClaimSet* claims = nullptr) {
  testing::expect_miss(g, kPass, "rms_norm_spelling", reason, claims);
}

TEST(FuseRmsNormSpelling, ANormOverAnotherAxisIsAMiss) {
  Spelling s;
  s.axis = 1;
  expect_miss(spelled(s), MissReason::attribute_mismatch);
}

TEST(FuseRmsNormSpelling, AGammaOfAnotherShapeIsAMiss) {
  Spelling s;
  s.gamma = Shape::of({3, 6});
  expect_miss(spelled(s), MissReason::shape_mismatch);
}

TEST(FuseRmsNormSpelling, AMeanSquareReadElsewhereIsAMiss) {
  Spelling s;
  s.share_ms = true;
  expect_miss(spelled(s), MissReason::is_graph_output);
}

TEST(FuseRmsNormSpelling, AnUnclaimedRmsNormIsAMiss) {
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::RmsNorm});
  expect_miss(spelled({}), MissReason::not_claimed, &claims);
}

} // namespace
} // namespace rlx::fusion
