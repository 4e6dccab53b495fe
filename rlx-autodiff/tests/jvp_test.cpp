// jvp_test.cpp: the JVP table covers ops.def; jvp against central differences along random
// directions for every conformance case of a differentiable op (f64, reference interpreter); hvp
// (forward over reverse) against central differences of the gradient, per op family and on the
// whole models. Tolerance as fd_ops_test: 1e-6 relative (h = 1e-5 in f64).
#include "fd_cases.hpp"

#include "rlx/autodiff/jvp.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/op.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace rlx;
namespace conf = rlx::conformance;
using autodiff::Wrt;
using autodiff::testing::differentiable_case_names;
using autodiff::testing::find_case;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

TEST(JvpTable, EveryDifferentiableOpHasARule) {
  ir::for_each_op([](ir::OpKind k) {
    if (ir::is_differentiable(k) && !ir::is_leaf(k) && !ir::is_hir(k)) {
      EXPECT_NE(autodiff::jvp_rule(k), nullptr) << "no JVP rule for " << ir::op_name(k);
    }
  });
}

class OpJvp : public ::testing::TestWithParam<std::string> {};

TEST_P(OpJvp, MatchesFiniteDifferences) {
  const conf::OpCase& c = find_case(GetParam());
  conf::register_conformance_custom_ops();
  Graph g = autodiff::testing::to_f64(conf::build_graph(c));
  auto wrt = autodiff::testing::differentiable_leaves(g);
  ASSERT_FALSE(wrt.empty());
  const conf::CaseValues v = autodiff::testing::f64_values(c);
  auto r = autodiff::testing::check_jvp(g, v.inputs, v.params, wrt);
  EXPECT_LE(r.max_err, 1e-6) << c.name << ": " << r.worst;
  EXPECT_GT(r.checked, 0);
  // a kink (or sqrt's steepness near 0) within h of an element: rare, at most 1 in 1000
  EXPECT_LE(r.kinks, 2 + r.checked / 1000) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Conformance, OpJvp, ::testing::ValuesIn(differentiable_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(Jvp, InterfaceAndZeroTangents) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}, DType::f64));
  NodeId p = b.param("p", Shape::of({3}, DType::f64));
  b.output(b.mul(b.exp(x), p));
  b.output(b.exp(p)); // independent of x
  Graph j = autodiff::jvp(g, {Wrt{"x", false}});
  ASSERT_EQ(j.outputs().size(), 4u);
  ASSERT_TRUE(j.find_leaf("tangent_x").valid());
  Tensor xv = Tensor::from<double>({3}, {0, 1, -1}), pv = Tensor::from<double>({3}, {1, 2, 3});
  Tensor tv = Tensor::from<double>({3}, {1, 1, 2});
  auto out = ir::reference::evaluate(j, {{"x", xv}, {"tangent_x", tv}}, {{"p", pv}});
  for (std::int64_t i = 0; i < 3; ++i)
    EXPECT_NEAR(out[2].get_f64(i), std::exp(xv.get_f64(i)) * pv.get_f64(i) * tv.get_f64(i), 1e-14);
  EXPECT_TRUE(out[3].identical(Tensor(Shape::of({3}, DType::f64))));
  EXPECT_THROW(autodiff::jvp(g, {Wrt{"nope", true}}), autodiff::AutodiffError);
}

TEST(Jvp, MaxPoolTiesTakeTheCellTheVjpRoutesTo) {
  // Max pooling over many ties (values in {0, 1, 2}, overlapping padded windows): the JVP takes
  // the tangent at the first cell equal to the max, the cell pool2d_grad sends the cotangent to,
  // so <jvp(t), u> = <t, vjp(u)> holds to rounding. The Reduce-max form shared a tie's tangent
  // among the tied cells, and the two sides differed.
  const DType t = DType::f64;
  const Shape xs = Shape::of({1, 2, 4, 4}, t);
  ir::Pool2dAttrs pa;
  pa.kernel = {3, 3};
  pa.stride = {1, 1};
  pa.padding = {1, 1};
  Graph g;
  Builder b(g);
  b.output(b.pool2d(b.input("x", xs), pa));
  const Graph j = autodiff::jvp(g, {Wrt{"x", false}});
  Graph l;
  Builder lb(l);
  const NodeId y = lb.pool2d(lb.input("x", xs), pa);
  lb.output(lb.sum(lb.mul(y, lb.input("u", lb.shape(y))), {}));
  const Graph gg = autodiff::grad_with_loss(l, {Wrt{"x", false}});

  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Tensor xv(xs), tv(xs), uv(l.node(y).shape);
  for (std::int64_t i = 0; i < xv.numel(); ++i) {
    xv.set_f64(i, static_cast<double>(rng() % 3));
    tv.set_f64(i, uniform(rng));
  }
  for (std::int64_t i = 0; i < uv.numel(); ++i)
    uv.set_f64(i, uniform(rng));
  const auto jo = ir::reference::evaluate(j, {{"x", xv}, {"tangent_x", tv}}, {});
  const auto go = ir::reference::evaluate(gg, {{"x", xv}, {"u", uv}}, {});
  double jvp_u = 0, t_vjp = 0;
  for (std::int64_t i = 0; i < uv.numel(); ++i)
    jvp_u += jo[1].get_f64(i) * uv.get_f64(i);
  for (std::int64_t i = 0; i < tv.numel(); ++i)
    t_vjp += tv.get_f64(i) * go[1].get_f64(i);
  EXPECT_NEAR(jvp_u, t_vjp, 1e-12);
  // each output's tangent is one of its window's tangents (window (0, 0) holds cells 0, 1, 4, 5)
  const double t00 = jo[1].get_f64(0);
  bool found = false;
  for (std::int64_t c : {0, 1, 4, 5})
    found = found || tv.get_f64(c) == t00;
  EXPECT_TRUE(found) << t00;
}

/// A loss over one op family, for the hvp checks.
struct HvpCase {
  const char* name;
  std::function<NodeId(Builder&)> build; // returns the scalar loss
};

TEST(Hvp, MatchesFiniteDifferencesOfTheGradient) {
  const DType t = DType::f64;
  const HvpCase cases[] = {
      {"mlp_gelu_tanh",
       [&](Builder& b) {
         NodeId x = b.input("x", Shape::of({4, 5}, t));
         NodeId h = b.gelu(b.matmul(x, b.param("w1", Shape::of({5, 6}, t))));
         h = b.tanh(b.matmul(h, b.param("w2", Shape::of({6, 3}, t))));
         return b.mean(b.mul(h, h), {});
       }},
      {"layer_norm_softmax_xent",
       [&](Builder& b) {
         NodeId x = b.input("x", Shape::of({4, 6}, t));
         NodeId y =
             b.layer_norm(x, b.param("g", Shape::of({6}, t)), b.param("bb", Shape::of({6}, t)));
         NodeId labels = b.input("labels", Shape::of({4}, DType::i64));
         return b.sum(b.softmax_cross_entropy(y, labels), {});
       }},
      {"rms_norm_silu_div_pow",
       [&](Builder& b) {
         NodeId x = b.param("x", Shape::of({3, 8}, t));
         NodeId y = b.silu(b.rms_norm(x, b.param("g", Shape::of({8}, t))));
         NodeId z = b.div(y, b.add(b.exp(x), b.scalar(1, t)));
         return b.sum(b.pow(b.add(b.mul(z, z), b.scalar(1, t)), b.scalar(1.5, t)), {});
       }},
      {"attention_causal_gqa_rope",
       [&](Builder& b) {
         ir::AttentionAttrs a;
         a.num_heads = 4;
         a.num_kv_heads = 2;
         a.mask = ir::MaskKind::causal;
         a.softcap = 3.0;
         ir::RopeAttrs r;
         r.position_offset = 2;
         NodeId q = b.rope(b.param("q", Shape::of({1, 5, 4, 4}, t)), r);
         NodeId k = b.rope(b.param("k", Shape::of({1, 5, 2, 4}, t)), r);
         NodeId v = b.param("v", Shape::of({1, 5, 2, 4}, t));
         NodeId o = b.attention(q, k, v, a);
         return b.sum(b.mul(o, o), {});
       }},
      {"conv_pool_log_softmax",
       [&](Builder& b) {
         ir::Conv2dAttrs ca;
         ca.stride = {2, 1};
         ca.padding = {1, 1};
         ca.groups = 2;
         NodeId x = b.param("x", Shape::of({1, 4, 6, 5}, t));
         NodeId y = b.conv2d(x, b.param("w", Shape::of({4, 2, 3, 3}, t)),
                             b.param("cb", Shape::of({4}, t)), ca);
         ir::Pool2dAttrs pa;
         pa.kind = ir::PoolKind::avg;
         pa.kernel = {2, 2};
         pa.stride = {1, 1};
         NodeId p = b.pool2d(b.tanh(y), pa);
         NodeId ls = b.log_softmax(b.reshape(p, {ir::Dim(4), ir::Dim(-1)}), -1);
         return b.sum(b.mul(ls, b.sigmoid(ls)), {});
       }},
      {"reduce_max_prod_gather",
       [&](Builder& b) {
         NodeId e = b.param("e", Shape::of({5, 3}, t));
         NodeId ids = b.input("ids", Shape::of({4}, DType::i64));
         NodeId g = b.gather(e, ids, 0);
         NodeId m = b.reduce(ir::ReduceOp::max, b.sin(g), {1});
         NodeId pr = b.reduce(ir::ReduceOp::prod, b.add(g, b.scalar(2, t)), {1});
         return b.sum(b.mul(b.exp(m), pr), {});
       }},
  };
  for (const HvpCase& hc : cases) {
    Graph g(hc.name);
    Builder b(g);
    b.output(hc.build(b));
    std::mt19937_64 rng(5);
    autodiff::testing::TensorMap in, pa;
    for (NodeId id : g.ids()) {
      const auto& n = g.node(id);
      if (n.op != ir::OpKind::Input && n.op != ir::OpKind::Param)
        continue;
      Tensor v(n.shape);
      for (std::int64_t i = 0; i < v.numel(); ++i)
        v.set_f64(i, ir::is_float(n.shape.dtype)
                         ? std::uniform_real_distribution<double>(-1, 1)(rng)
                         : static_cast<double>(std::uniform_int_distribution<int>(0, 2)(rng)));
      (n.op == ir::OpKind::Param ? pa : in)[n.attr<ir::LeafAttrs>().name] = v;
    }
    auto wrt = autodiff::float_params(g);
    auto r = autodiff::testing::check_hvp(g, in, pa, wrt);
    EXPECT_LE(r.max_err, 1e-6) << hc.name << ": " << r.worst;
    EXPECT_GT(r.checked, 0) << hc.name;
    EXPECT_LE(r.kinks, 1) << hc.name;
  }
}

} // namespace
