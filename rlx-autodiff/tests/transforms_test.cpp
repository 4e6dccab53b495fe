// transforms_test.cpp: nth_order_grad against closed forms and finite differences of the previous
// order, its graph growth; promote_params_to_inputs; the module forms of the transforms.
//
// Tolerances (f64): closed forms 1e-12 (1 + |want|): a handful of correctly rounded ops per
// derivative. Finite differences of the (n-1)th derivative, central with h = 1e-4: truncation
// h^2 |f^(n+2)| / 6 < 1e-8 and rounding u |f^(n-1)| / h ~ 1e-12 for these inputs, so 1e-6
// (1 + |fd|) has a hundredfold margin, while a wrong order, sign or missing term is O(1).
#include "rlx/autodiff/transforms.hpp"
#include "rlx/fusion/node_key.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace {

using namespace rlx;
using autodiff::AutodiffError;
using autodiff::Wrt;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

/// f(x) for a scalar f64 input x built by \p body.
Graph scalar_fn(const std::string& name, const std::function<NodeId(Builder&, NodeId)>& body) {
  Graph g(name);
  Builder b(g);
  NodeId x = b.input("x", Shape::scalar(DType::f64));
  b.output(body(b, x));
  return g;
}

std::vector<double> derivatives(const Graph& d, double x, const ir::reference::TensorMap& p = {}) {
  auto out = ir::reference::evaluate(d, {{"x", Tensor::scalar<double>(x)}}, p);
  std::vector<double> r;
  for (const auto& t : out)
    r.push_back(t.get_f64(0));
  return r;
}

void expect_closed_form(const Graph& f, int n,
                        const std::function<std::vector<double>(double)>& want) {
  Graph d = autodiff::nth_order_grad(f, {"x", false}, n);
  ASSERT_EQ(d.outputs().size(), static_cast<std::size_t>(n + 1));
  for (double x : {-1.3, -0.2, 0.4, 1.7}) {
    std::vector<double> got = derivatives(d, x), w = want(x);
    for (int k = 0; k <= n; ++k)
      EXPECT_NEAR(got[static_cast<std::size_t>(k)], w[static_cast<std::size_t>(k)],
                  1e-12 * (1 + std::fabs(w[static_cast<std::size_t>(k)])))
          << f.name() << " derivative " << k << " at " << x;
  }
}

TEST(NthOrderGrad, Sin) {
  expect_closed_form(
      scalar_fn("sin", [](Builder& b, NodeId x) { return b.sin(x); }), 3, [](double x) {
        return std::vector<double>{std::sin(x), std::cos(x), -std::sin(x), -std::cos(x)};
      });
}

TEST(NthOrderGrad, Tanh) {
  expect_closed_form(scalar_fn("tanh", [](Builder& b, NodeId x) { return b.tanh(x); }), 3,
                     [](double x) {
                       double t = std::tanh(x), s = 1 - t * t;
                       return std::vector<double>{t, s, -2 * t * s, -2 * s * (1 - 3 * t * t)};
                     });
}

TEST(NthOrderGrad, PowerAndItsVanishingOrder) {
  // x^3: 3x^2, 6x, 6, then 0 (a derivative that no longer depends on x is zeros, not an error).
  Graph f =
      scalar_fn("cube", [](Builder& b, NodeId x) { return b.pow(x, b.scalar(3.0, DType::f64)); });
  expect_closed_form(f, 4, [](double x) {
    return std::vector<double>{x * x * x, 3 * x * x, 6 * x, 6, 0};
  });
}

/// A small MLP of a one-element input: sum(w2 * tanh(w1 x + b1)) with x [1, 1].
Graph mlp() {
  Graph g("mlp");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({1, 1}, DType::f64));
  NodeId w1 = b.param("w1", Shape::of({1, 6}, DType::f64));
  NodeId b1 = b.param("b1", Shape::of({6}, DType::f64));
  NodeId w2 = b.param("w2", Shape::of({6}, DType::f64));
  NodeId h = b.tanh(b.add(b.matmul(x, w1), b1));
  b.output(b.sum(b.mul(h, w2), {}));
  return g;
}

ir::reference::TensorMap mlp_params() {
  return {{"w1", Tensor::from<double>({1, 6}, {0.9, -1.2, 0.3, 1.5, -0.7, 0.2})},
          {"b1", Tensor::from<double>({6}, {0.1, -0.3, 0.5, 0.0, 0.2, -0.4})},
          {"w2", Tensor::from<double>({6}, {1.0, 0.5, -0.8, 0.3, 1.2, -0.6})}};
}

TEST(NthOrderGrad, MlpMatchesFiniteDifferencesOfThePreviousOrder) {
  Graph f = mlp();
  auto p = mlp_params();
  auto at = [&](const Graph& d, double x) {
    auto out = ir::reference::evaluate(d, {{"x", Tensor::from<double>({1, 1}, {x})}}, p);
    std::vector<double> r;
    for (const auto& t : out)
      r.push_back(t.get_f64(0));
    return r;
  };
  for (int n : {2, 3}) {
    Graph d = autodiff::nth_order_grad(f, {"x", false}, n);
    for (double x : {-0.8, 0.3, 1.1}) {
      const double h = 1e-4;
      std::vector<double> c = at(d, x), hi = at(d, x + h), lo = at(d, x - h);
      for (int k = 1; k <= n; ++k) {
        double fd =
            (hi[static_cast<std::size_t>(k - 1)] - lo[static_cast<std::size_t>(k - 1)]) / (2 * h);
        EXPECT_NEAR(c[static_cast<std::size_t>(k)], fd, 1e-6 * (1 + std::fabs(fd)))
            << "order " << k << " of " << n << " at " << x;
      }
    }
  }
}

TEST(NthOrderGrad, GraphGrowsWithTheDerivativeNotExponentially) {
  Graph f = mlp();
  std::vector<std::size_t> sizes;
  for (int n = 1; n <= 4; ++n)
    sizes.push_back(autodiff::nth_order_grad(f, {"x", false}, n).size());
  // Each order adds a backward pass over the previous one; without merging, the node count would
  // at least double per order. Simplified, each order adds a bounded number of nodes.
  for (std::size_t k = 2; k < sizes.size(); ++k)
    EXPECT_LT(sizes[k] - sizes[k - 1], 2 * (sizes[k - 1] - sizes[k - 2]) + 8)
        << "orders " << k - 1 << ".." << k + 1 << ": " << sizes[k - 2] << ", " << sizes[k - 1]
        << ", " << sizes[k];
  // Every order is left with no two structurally equal nodes (what CSE guarantees).
  Graph d3 = autodiff::nth_order_grad(f, {"x", false}, 3);
  for (NodeId a : d3.ids())
    for (NodeId c : d3.ids())
      if (a < c && !ir::is_leaf(d3.node(a).op)) {
        EXPECT_FALSE(fusion::node_equal(d3.node(a), d3.node(c)))
            << ir::describe(d3, a) << " and " << ir::describe(d3, c) << " are the same value";
      }
  RecordProperty("nodes_by_order", std::to_string(sizes[0]) + "," + std::to_string(sizes[1]) + "," +
                                       std::to_string(sizes[2]) + "," + std::to_string(sizes[3]));
}

TEST(NthOrderGrad, Errors) {
  Graph f = mlp();
  EXPECT_THROW(autodiff::nth_order_grad(f, {"x", false}, 0), AutodiffError);
  EXPECT_THROW(autodiff::nth_order_grad(f, {"nope", false}, 2), AutodiffError);
  try {
    autodiff::nth_order_grad(f, {"w1", true}, 2); // six elements
    ADD_FAILURE() << "a six-element wrt was accepted";
  } catch (const AutodiffError& e) {
    EXPECT_NE(std::string(e.what()).find("one element"), std::string::npos) << e.what();
  }
  Graph unused = scalar_fn("const", [](Builder& b, NodeId) { return b.scalar(2.0, DType::f64); });
  EXPECT_THROW(autodiff::nth_order_grad(unused, {"x", false}, 2), AutodiffError);
}

// ---- promote_params_to_inputs ---------------------------------------------------------------

TEST(PromoteParams, InputsWithTheSameNamesTypesAndValues) {
  Graph f = mlp();
  Graph g = autodiff::promote_params_to_inputs(f, {"w1", "b1"});
  EXPECT_EQ(g.params().size(), 1u);
  EXPECT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.shape(g.find_leaf("w1")), f.shape(f.find_leaf("w1", true)));
  auto p = mlp_params();
  ir::reference::TensorMap in{{"x", Tensor::from<double>({1, 1}, {0.4})}};
  auto want = ir::reference::evaluate(f, in, p);
  in["w1"] = p.at("w1");
  in["b1"] = p.at("b1");
  auto got = ir::reference::evaluate(g, in, {{"w2", p.at("w2")}});
  EXPECT_EQ(got[0].get_f64(0), want[0].get_f64(0));
  EXPECT_THROW(autodiff::promote_params_to_inputs(f, {"nope"}), AutodiffError);
  EXPECT_THROW(autodiff::promote_params_to_inputs(g, {"w2", "w1"}), AutodiffError);
}

TEST(PromoteParams, AnInPlaceUpdateOfAPromotedParamIsDropped) {
  Graph f("step");
  Builder b(f);
  NodeId w = b.param("w", Shape::of({2}, DType::f64));
  NodeId v = b.param("v", Shape::of({2}, DType::f64));
  b.output(b.neg(w));
  b.output(b.neg(v));
  f.add_alias(0, "w");
  f.add_alias(1, "v");
  Graph g = autodiff::promote_params_to_inputs(f, {"w"});
  ASSERT_EQ(g.aliases().size(), 1u);
  EXPECT_EQ(g.aliases()[0].param, "v");
}

// ---- module forms -------------------------------------------------------------------------------

TEST(ModuleForms, HirInMirOutSameValuesAsTheGraphForm) {
  Graph f("hir");
  Builder b(f);
  NodeId x = b.input("x", Shape::of({2, 3}, DType::f64));
  NodeId w = b.param("w", Shape::of({4, 3}, DType::f64));
  b.output(b.sum(b.linear(x, w, {}, ir::Activation::tanh), {}));
  ir::Module m = ir::Module::hir(f);
  ir::Module gm = autodiff::grad_with_loss(m, {{"w", true}});
  EXPECT_EQ(gm.stage(), ir::Stage::mir);
  EXPECT_EQ(gm.graph(), autodiff::grad_with_loss(f, {{"w", true}}));
  EXPECT_EQ(autodiff::prepare_module_for_ad(m).stage(), ir::Stage::mir);
  EXPECT_EQ(autodiff::jvp(m, {{"w", true}}).graph(), autodiff::jvp(f, {{"w", true}}));
  EXPECT_EQ(autodiff::hvp(m, {{"w", true}}).graph(), autodiff::hvp(f, {{"w", true}}));
  EXPECT_EQ(autodiff::vmap(m, {{"x", 0}}).graph(), autodiff::vmap(f, {{"x", 0}}));
  EXPECT_EQ(autodiff::promote_params_to_inputs(m, {"w"}).stage(), ir::Stage::hir);
  ir::Module scalar =
      ir::Module::mir(scalar_fn("sin", [](Builder& bb, NodeId xx) { return bb.sin(xx); }));
  EXPECT_EQ(autodiff::nth_order_grad(scalar, {"x", false}, 2).graph().outputs().size(), 3u);
}

TEST(ModuleForms, LirIsAClearError) {
  Graph f = mlp();
  ir::MemoryPlan plan;
  plan.assignments.resize(f.size());
  plan.schedule = f.ids();
  ir::Module lir = ir::Module::lir(f, plan);
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { autodiff::grad_with_loss(lir, autodiff::float_params(f)); },
           [&] {
             autodiff::jvp(lir, {{"x", false}});
           },
           [&] {
             autodiff::vmap(lir, {{"x", 0}});
           },
           [&] {
             autodiff::nth_order_grad(lir, {"x", false}, 2);
           },
           [&] { autodiff::promote_params_to_inputs(lir, {"w1"}); }}) {
    try {
      call();
      ADD_FAILURE() << "an LIR module was accepted";
    } catch (const AutodiffError& e) {
      EXPECT_NE(std::string(e.what()).find("LIR"), std::string::npos) << e.what();
    }
  }
}

} // namespace
