// reference_control_test.cpp: the reference interpreter's control flow (If, While), extension ops
// (Custom, CustomFn) and HIR blocks (evaluated through their decomposition).
#include "reference_testing.hpp"

#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/hir.hpp"

#include <cmath>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

/// A one-input sub-graph computing \p make(x) for x of type \p type.
Graph body1(const Shape& type, const std::function<NodeId(Builder&, NodeId)>& make) {
  Graph g("body");
  Builder b(g);
  b.output(make(b, b.input("x", type)));
  return g;
}

/// If(pred, x): then = x + 1, else = x / 0 (an integer division by zero, an error if it runs).
Tensor run_if(bool pred) {
  Shape t = Shape::of({2}, DType::i64);
  Graph then_b = body1(t, [](Builder& b, NodeId x) { return b.add(x, b.constant(i64({}, {1}))); });
  Graph else_b = body1(t, [](Builder& b, NodeId x) { return b.div(x, b.constant(i64({}, {0}))); });
  return run({Tensor::scalar<bool>(pred), i64({2}, {10, 20})},
             [&](Builder& b, const auto& a) { return b.if_(a[0], {a[1]}, then_b, else_b); });
}

/// While over carries (i: i64, acc: f64): while i < 5: i += 1, acc *= 2.
Tensor run_while(std::int64_t start, std::int64_t max_iterations, std::int64_t output_index) {
  Shape ti = Shape::scalar(DType::i64), tf = Shape::scalar(DType::f64);
  Graph cond("cond");
  {
    Builder b(cond);
    NodeId i = b.input("i", ti);
    b.input("acc", tf);
    b.output(b.compare(CmpOp::lt, i, b.constant(Tensor::scalar<std::int64_t>(5))));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId i = b.input("i", ti);
    NodeId acc = b.input("acc", tf);
    b.output(b.add(i, b.constant(Tensor::scalar<std::int64_t>(1))));
    b.output(b.mul(acc, b.constant(Tensor::scalar<double>(2))));
  }
  return run({Tensor::scalar<std::int64_t>(start), Tensor::scalar<double>(1)},
             [&](Builder& b, const auto& a) {
               return b.while_({a[0], a[1]}, cond, body, max_iterations, output_index);
             });
}

} // namespace

TEST(ReferenceIf, EvaluatesOnlyTheChosenBranch) {
  expect_eq(run_if(true), {2}, {11, 21});
  EXPECT_THROW(run_if(false), EvalError); // the else branch divides by zero
}

TEST(ReferenceIf, BranchesWithSymbolicDims) {
  Shape t({Dim::sym("n")}, DType::f32);
  Graph then_b = body1(t, [](Builder& b, NodeId x) { return b.neg(x); });
  Graph else_b = body1(t, [](Builder& b, NodeId x) { return b.exp(x); });
  Graph g;
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", t);
  b.output(b.if_(p, {x}, then_b, else_b));
  auto r = reference::evaluate(g, {{"p", Tensor::scalar<bool>(true)}, {"x", f32({3}, {1, 2, 3})}});
  expect_eq(r.at(0), {3}, {-1, -2, -3});
}

TEST(ReferenceWhile, RunsWhileCondHolds) {
  expect_eq(run_while(0, 10, 0), {}, {5});
  expect_eq(run_while(0, 10, 1), {}, {32});
  expect_eq(run_while(4, 10, 1), {}, {2});
  expect_eq(run_while(7, 10, 1), {}, {1}); // cond false at once: the initial carry
}

TEST(ReferenceWhile, StopsAfterMaxIterations) {
  expect_eq(run_while(0, 3, 0), {}, {3});
  expect_eq(run_while(0, 3, 1), {}, {8});
}

TEST(ReferenceCustom, UsesTheRegistryKernel) {
  CustomOpDef def;
  def.name = "test.scale_by";
  def.min_arity = def.max_arity = 1;
  def.infer = [](std::span<const Shape> in, const CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const Tensor> in, const CustomAttrs& a, const Shape& out) {
    Tensor r(out);
    double k = std::stod(a.params);
    for (std::int64_t i = 0; i < r.numel(); ++i)
      r.set_f64(i, in[0].get_f64(i) * k);
    return r;
  };
  CustomOpRegistry::global().add(def);
  auto make = [](Builder& b, const auto& a) { return b.custom("test.scale_by", {a[0]}, "3"); };
  expect_eq(run({f32({2}, {1, -2})}, make), {2}, {3, -6});

  // A kernel that returns the wrong type is caught.
  CustomOpRegistry::global().remove(def.name);
  def.reference = [](std::span<const Tensor>, const CustomAttrs&, const Shape&) {
    return Tensor(Shape::of({7}));
  };
  CustomOpRegistry::global().add(def);
  EXPECT_THROW(run({f32({2}, {1, -2})}, make), EvalError);
  CustomOpRegistry::global().remove(def.name);
}

TEST(ReferenceCustom, UnregisteredAtEvaluationIsAnError) {
  CustomOpDef def;
  def.name = "test.gone";
  def.infer = [](std::span<const Shape> in, const CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const Tensor> in, const CustomAttrs&, const Shape&) {
    return in[0].clone();
  };
  CustomOpRegistry::global().add(def);
  Graph g;
  Builder b(g);
  b.output(b.custom("test.gone", {b.input("x", Shape::of({1}))}));
  CustomOpRegistry::global().remove("test.gone");
  EXPECT_THROW(reference::evaluate(g, {{"x", f32({1}, {1})}}), EvalError);
}

TEST(ReferenceCustomFn, EvaluatesTheBody) {
  // body(x, y) = x * y + 1.
  Graph body("body");
  {
    Builder b(body);
    NodeId x = b.input("x", Shape::of({2}));
    NodeId y = b.input("y", Shape::of({2}));
    b.output(b.add(b.mul(x, y), b.scalar(1)));
  }
  Tensor r = run({f32({2}, {2, 3}), f32({2}, {4, -1})}, [&](Builder& b, const auto& a) {
    return b.custom_fn({a[0], a[1]}, body);
  });
  expect_eq(r, {2}, {9, -2});
}

// ---- HIR blocks
// ----------------------------------------------------------------------------------

TEST(ReferenceHir, LinearWithActivation) {
  // x = [1, -2], W = [[1, 1], [2, 1], [0, -1]]: x W^T = [-1, 0, 2]; + b = [-0.5, 1, 1]; relu.
  Tensor x = f64({1, 2}, {1, -2});
  Tensor w = f64({3, 2}, {1, 1, 2, 1, 0, -1});
  Tensor bias = f64({3}, {0.5, 1, -1});
  expect_eq(
      run({x, w, bias},
          [](Builder& b, const auto& a) { return b.linear(a[0], a[1], a[2], Activation::relu); }),
      {1, 3}, {0, 1, 1});
  expect_eq(run({x, w}, [](Builder& b, const auto& a) { return b.linear(a[0], a[1]); }), {1, 3},
            {-1, 0, 2});
}

TEST(ReferenceHir, SwiGluFfn) {
  // x = [1, 2]; gate rows [1, 0], [0, 1] -> g = [1, 2]; up rows [1, 1], [1, -1] -> u = [3, -1];
  // h = silu(g) * u; down = [[1, 1]] -> y = h0 + h1.
  Tensor x = f64({1, 2}, {1, 2});
  Tensor wg = f64({2, 2}, {1, 0, 0, 1});
  Tensor wu = f64({2, 2}, {1, 1, 1, -1});
  Tensor wd = f64({1, 2}, {1, 1});
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  expect_near(run({x, wg, wu, wd},
                  [](Builder& b, const auto& a) { return b.swiglu_ffn(a[0], a[1], a[2], a[3]); }),
              {1, 1}, {silu(1) * 3 - silu(2)}, 1e-15);
}

namespace {

/// A deterministic f64 tensor of \p sizes with values in [-0.5, 0.5].
Tensor filled(const Sizes& sizes, double seed) {
  std::int64_t n = 1;
  for (auto s : sizes)
    n *= s;
  Vec v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5 * std::sin(seed + 0.37 * static_cast<double>(i));
  return f64(sizes, v);
}

/// Evaluates a one-block HIR graph node-by-node (the HIR kernels) and after lower_hir; both must
/// agree.
void expect_hir_matches_lowering(const std::vector<Tensor>& args, const MakeOp& make) {
  const auto [g, inputs] = one_op_graph(args, make);
  Tensor hir = reference::evaluate(g, inputs).at(0);
  Tensor mir = reference::evaluate(lower_hir(g), inputs).at(0);
  ASSERT_EQ(hir.shape(), g.shape(g.outputs()[0]));
  EXPECT_EQ(max_abs_diff(hir, mir), 0.0);
  for (double v : values(hir))
    ASSERT_TRUE(std::isfinite(v));
}

} // namespace

TEST(ReferenceHir, AttentionBlockBertLayerLlamaBlockEvaluate) {
  const std::int64_t B = 1, S = 3, E = 4, F = 6;
  Tensor x = filled({B, S, E}, 0.1);
  AttentionBlockAttrs ab;
  ab.num_heads = 2;
  ab.num_kv_heads = 1;
  ab.mask = MaskKind::causal;
  ab.rope = true;
  expect_hir_matches_lowering(
      {x, filled({E, E}, 1), filled({2, E}, 2), filled({2, E}, 3), filled({E, E}, 4)},
      [&](Builder& b, const auto& a) {
        return b.attention_block({a[0], a[1], a[2], a[3], a[4]}, ab);
      });

  std::vector<Tensor> bert{x};
  for (int i = 0; i < 4; ++i) {
    bert.push_back(filled({E, E}, 10 + i));
    bert.push_back(filled({E}, 20 + i));
  }
  bert.push_back(filled({E}, 30));    // ln1 gamma
  bert.push_back(filled({E}, 31));    // ln1 beta
  bert.push_back(filled({F, E}, 32)); // w1
  bert.push_back(filled({F}, 33));    // b1
  bert.push_back(filled({E, F}, 34)); // w2
  bert.push_back(filled({E}, 35));    // b2
  bert.push_back(filled({E}, 36));    // ln2 gamma
  bert.push_back(filled({E}, 37));    // ln2 beta
  BertLayerAttrs ba;
  ba.num_heads = 2;
  expect_hir_matches_lowering(bert, [&](Builder& b, const auto& a) { return b.bert_layer(a, ba); });

  LlamaBlockAttrs la;
  la.num_heads = 2;
  la.num_kv_heads = 1;
  std::vector<Tensor> llama{x,
                            filled({E}, 40),
                            filled({E, E}, 41),
                            filled({2, E}, 42),
                            filled({2, E}, 43),
                            filled({E, E}, 44),
                            filled({E}, 45),
                            filled({F, E}, 46),
                            filled({F, E}, 47),
                            filled({E, F}, 48)};
  expect_hir_matches_lowering(llama,
                              [&](Builder& b, const auto& a) { return b.llama_block(a, la); });
}
