// decompositions_test.cpp: every decomposition of the table (rlx/ir/decompose.hpp), one test each:
// the op's sample graph (testing/op_samples.hpp) with every node of the op replaced by that form
// must compute what the reference interpreter computes for the op, on random inputs. Then the
// lookups, inlining, and the forms that refuse (effects, fallible branches, symbolic sizes).
//
// Tolerances, per element type of the output, relative to max(1, |reference|):
// - f64: 1e-12. Each emitted op rounds once (2^-53 relative); the longest chains (attention,
//   layer norm) have about 15 ops, a few of them reductions over at most 8 terms.
// - f32 (and narrower floats, which the samples do not use): 1e-5. The reference kernel of a
//   composite op computes in double and rounds its result once, its decomposition rounds to f32
//   after every op (2^-24 = 6e-8 relative each); 15 roundings plus the cancellation in x - mean
//   (layer norm) or s - max (softmax) on values of order 1 stay below 1e-6; 1e-5 leaves a
//   factor 10 and still catches any wrong constant or operand (those err by 1e-3 or more).
// - integers and bools: exact.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/effect_op.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace rlx::ir {
namespace {

struct Form {
  OpKind op;
  std::size_t index; ///< position in decompositions(op)
};

std::vector<Form> all_forms() {
  std::vector<Form> out;
  for (OpKind op : testing::all_ops()) {
    const auto forms = decompositions(op);
    for (std::size_t i = 0; i < forms.size(); ++i)
      out.push_back({op, i});
  }
  return out;
}

double tolerance(DType t) {
  if (t == DType::f64)
    return 1e-12;
  if (is_float(t))
    return 1e-5;
  return 0;
}

/// \p g with every live node of op \p op replaced by form \p form (symbols bound first: some forms
/// build constant tables and need sizes); a tuple-typed node's gets read the form's part values.
Graph replace_by(const Graph& g, OpKind op, const Decomposition& form) {
  Graph out = g.bind(testing::sample_bindings(g));
  const std::size_t n = out.size();
  int replaced = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const NodeId id(i);
    if (out.node(id).op != op || out.use_count(id) == 0)
      continue;
    Builder b(out);
    std::string why;
    const std::vector<NodeId> r = emit_decomposition(form, b, id, DecomposeOptions{}, why);
    if (r.empty())
      throw Error("the form does not apply to " + describe(out, id) + ": " + why);
    const Shape& type = out.shape(id);
    if (type.is_tuple()) {
      EXPECT_EQ(r.size(), type.parts.size()) << describe(out, id);
      for (std::size_t p = 0; p < r.size() && p < type.parts.size(); ++p)
        EXPECT_EQ(out.shape(r[p]), type.parts[p]) << describe(out, id) << " part " << p;
    } else {
      EXPECT_EQ(r.size(), 1u) << describe(out, id);
      EXPECT_EQ(out.shape(r[0]), type) << describe(out, id);
    }
    replace_by_values(out, id, r);
    ++replaced;
  }
  EXPECT_GE(replaced, 1) << "the sample holds no live " << op_name(op);
  out.compact();
  return out;
}

class EveryDecomposition : public ::testing::TestWithParam<Form> {};

TEST_P(EveryDecomposition, MatchesTheReferenceOnRandomInputs) {
  const Form f = GetParam();
  const Decomposition& d = decompositions(f.op)[f.index];
  const Graph g = testing::sample_graph(f.op);
  Graph out;
  ASSERT_NO_THROW(out = replace_by(g, f.op, d));
  verify(out);
  for (NodeId id : out.ids())
    EXPECT_NE(out.node(id).op, f.op) << print(out);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto inputs = testing::random_inputs(g, seed);
    const auto params = testing::random_params(g, seed);
    const auto want = reference::evaluate(g, inputs, params);
    const auto got = reference::evaluate(out, inputs, params);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].shape(), want[o].shape()) << "output " << o;
      const double tol = tolerance(want[o].shape().dtype);
      for (std::int64_t i = 0; i < want[o].numel(); ++i) {
        const double w = want[o].get_f64(i), v = got[o].get_f64(i);
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(v)) << "output " << o << " element " << i;
          continue;
        }
        EXPECT_LE(std::abs(v - w), tol * std::max(1.0, std::abs(w)))
            << "output " << o << " element " << i << ": " << v << " vs " << w << " (seed " << seed
            << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, EveryDecomposition, ::testing::ValuesIn(all_forms()),
                         [](const ::testing::TestParamInfo<Form>& p) {
                           return std::string(op_name(p.param.op)) + "_" +
                                  std::string(decompositions(p.param.op)[p.param.index].name);
                         });

TEST(Decompositions, TheTableCoversTheCompositeOps) {
  // Pinned, so moving or splitting the table cannot silently drop an op (HIR blocks: all of them).
  const std::set<OpKind> expected = {OpKind::Neg,
                                     OpKind::Abs,
                                     OpKind::Relu,
                                     OpKind::Reciprocal,
                                     OpKind::Rsqrt,
                                     OpKind::Sqrt,
                                     OpKind::Sigmoid,
                                     OpKind::Silu,
                                     OpKind::Gelu,
                                     OpKind::GeluTanh,
                                     OpKind::Sub,
                                     OpKind::Div,
                                     OpKind::Maximum,
                                     OpKind::Minimum,
                                     OpKind::Softmax,
                                     OpKind::LogSoftmax,
                                     OpKind::LayerNorm,
                                     OpKind::RmsNorm,
                                     OpKind::SoftmaxCrossEntropy,
                                     OpKind::Expand,
                                     OpKind::Attention,
                                     OpKind::Rope,
                                     OpKind::DotGeneral,
                                     OpKind::If,
                                     OpKind::While,
                                     OpKind::CustomFn,
                                     OpKind::ElementwiseRegion,
                                     OpKind::FakeQuantize,
                                     OpKind::Dequantize,
                                     OpKind::SwiGlu,
                                     OpKind::SwiGluMatMul,
                                     OpKind::ResidualLayerNorm,
                                     OpKind::ResidualRmsNorm};
  for (OpKind op : testing::all_ops()) {
    SCOPED_TRACE(std::string(op_name(op)));
    if (is_hir(op) || has_flag(op, kFused) || expected.count(op)) {
      EXPECT_TRUE(has_decomposition(op));
    }
    for (const Decomposition& d : decompositions(op)) {
      EXPECT_FALSE(d.name.empty());
      EXPECT_NE(d.fn == nullptr, d.parts == nullptr) << d.name; // exactly one is set
    }
  }
  EXPECT_EQ(decompositions(OpKind::Neg).front().name, "neg_by_mul"); // preferred first
  EXPECT_FALSE(has_decomposition(OpKind::Gather));
  EXPECT_TRUE(decompositions(OpKind::Gather).empty());
}

TEST(Decompositions, DecomposeTakesTheFirstFormThatApplies) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4}, DType::u8));
  NodeId n = b.neg(x);
  b.output(n);
  std::string why;
  // neg_by_mul does not apply to u8 (no -1), neg_by_sub does.
  NodeId r = decompose(b, n, {}, why);
  ASSERT_TRUE(r.valid()) << why;
  EXPECT_EQ(g.node(r).op, OpKind::Sub);
  // Gather has none: a reason, no value.
  NodeId idx = b.input("i", Shape::of({2}, DType::i64));
  NodeId gat = b.gather(b.input("t", Shape::of({5, 3})), idx, 0);
  why.clear();
  EXPECT_FALSE(decompose(b, gat, {}, why).valid());
  EXPECT_NE(why.find("no decomposition"), std::string::npos) << why;
  // fake_quantize of f64: its only form refuses, and says why.
  NodeId fq = b.fake_quantize(b.input("d", Shape::of({3}, DType::f64)), QuantAttrs{{}, {0.5}, {0}});
  why.clear();
  EXPECT_FALSE(decompose(b, fq, {}, why).valid());
  EXPECT_NE(why.find("only f32"), std::string::npos) << why;
}

/// `if p then f(a) else a` where f is \p then_op applied by \p make.
Graph if_graph(const std::function<NodeId(Builder&, NodeId)>& make) {
  const Shape v({3}, DType::f32);
  Graph then_g("then");
  {
    Builder t(then_g);
    t.output(make(t, t.input("a", v)));
  }
  Graph else_g("else");
  {
    Builder e(else_g);
    e.output(e.input("a", v));
  }
  Graph g("g");
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  b.output(b.if_(p, {b.input("a", v)}, std::move(then_g), std::move(else_g)));
  return g;
}

TEST(Decompositions, IfWithEffectsOrFallibleBranchesIsNotLowered) {
  testing::register_effect_op();
  testing::register_sample_custom_op();
  struct Case {
    std::function<NodeId(Builder&, NodeId)> make;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {[](Builder& t, NodeId a) { return t.custom(testing::kEffectOp, {a}, ""); }, "has effects"},
      {[](Builder& t, NodeId a) {
         return t.custom(std::string(testing::kSampleCustomOp), {a}, "2");
       },
       "can fail"},
  };
  for (const Case& c : cases) {
    Graph g = if_graph(c.make);
    const NodeId id = g.outputs()[0];
    Builder b(g);
    std::string why;
    EXPECT_FALSE(lower_if(b, id, {}, why).valid());
    EXPECT_NE(why.find(c.reason), std::string::npos) << why;
    EXPECT_NE(why.find("must claim If"), std::string::npos) << why;
  }
  // A total, pure branch is lowered.
  Graph g = if_graph([](Builder& t, NodeId a) { return t.exp(a); });
  Builder b(g);
  std::string why;
  EXPECT_TRUE(lower_if(b, g.outputs()[0], {}, why).valid()) << why;
}

TEST(Decompositions, WhileWithEffectsIsNotUnrolled) {
  testing::register_effect_op();
  const Shape v({2}, DType::f32);
  Graph cond("cond");
  {
    Builder c(cond);
    NodeId x = c.input("x", v);
    c.output(
        c.compare(CmpOp::lt, c.reduce(ReduceOp::sum, x, {0}, false), c.scalar(10, DType::f32)));
  }
  Graph body("body");
  {
    Builder c(body);
    NodeId x = c.input("x", v);
    c.output(c.custom(testing::kEffectOp, {c.add(x, x)}, ""));
  }
  Graph g("g");
  Builder b(g);
  NodeId w = b.while_({b.input("x", v)}, std::move(cond), std::move(body), 4, 0);
  b.output(w);
  std::string why;
  EXPECT_FALSE(lower_while(b, w, {}, why).valid());
  EXPECT_NE(why.find("has effects"), std::string::npos) << why;
  EXPECT_NE(why.find("must claim While"), std::string::npos) << why;
}

TEST(Decompositions, InlineSubgraphChecksArity) {
  Graph sub("sub");
  {
    Builder s(sub);
    s.output(s.add(s.input("a", Shape::of({2})), s.input("b", Shape::of({2}))));
  }
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  std::vector<NodeId> one{x}, two{x, x}, three{x, x, x};
  EXPECT_THROW(inline_subgraph(b, sub, one, "test"), Error);
  EXPECT_THROW(inline_subgraph(b, sub, three, "test"), Error);
  const auto outs = inline_subgraph(b, sub, two, "test");
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(g.node(outs[0]).op, OpKind::Add);
  EXPECT_EQ(first_fallible(sub), "");
}

} // namespace
} // namespace rlx::ir
