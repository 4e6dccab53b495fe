// vmap_test.cpp: vmap against a loop of single runs (reference interpreter) for every case of the
// conformance table whose op has a batching rule, with several batched-input / axis choices;
// per-example gradients (vmap of grad_with_loss) against a loop of per-example gradients; control
// flow; clear errors; the batching table's completeness.
//
// Tolerance: the graphs run in f64; a rule either keeps the op (the same arithmetic, bit for bit)
// or rewrites it exactly (folds, transposes, index offsets) except LayerNorm / RmsNorm with a
// batched gamma (norm, then scale: one extra rounding), so |vmap - loop| <= 1e-12 (1 + |loop|) is
// a hundredfold margin over f64 rounding, while a wrong slice, axis or broadcast is an O(1) error.
#include "fd_cases.hpp"
#include "model_testing.hpp"

#include "rlx/autodiff/transforms.hpp"
#include "rlx/autodiff/vmap.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace {

using namespace rlx;
namespace conf = rlx::conformance;
using autodiff::AutodiffError;
using autodiff::BatchedInput;
using autodiff::testing::find_case;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

constexpr std::int64_t kB = 3;

/// Sizes of \p t with \p n inserted at \p axis.
std::vector<std::int64_t> with_batch(const Tensor& t, std::size_t axis, std::int64_t n) {
  std::vector<std::int64_t> s = t.shape().sizes();
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(axis), n);
  return s;
}

/// Copies element-wise between a slice (rank r) and a stacked tensor (rank r + 1, the slice index
/// at \p axis): \p to_stack chooses the direction.
void copy_slice(Tensor& stacked, Tensor& slice, std::size_t axis, std::int64_t k, bool to_stack) {
  const auto ss = stacked.shape().sizes();
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i)
    outer *= ss[i];
  for (std::size_t i = axis + 1; i < ss.size(); ++i)
    inner *= ss[i];
  const bool flt = ir::is_float(stacked.dtype());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t si = (o * ss[axis] + k) * inner + i, li = o * inner + i;
      if (to_stack) {
        if (flt)
          stacked.set_f64(si, slice.get_f64(li));
        else
          stacked.set_i64(si, slice.get_i64(li));
      } else if (flt) {
        slice.set_f64(li, stacked.get_f64(si));
      } else {
        slice.set_i64(li, stacked.get_i64(si));
      }
    }
}

Tensor stack(const std::vector<Tensor>& ts, std::size_t axis) {
  Tensor r(Shape::of(with_batch(ts[0], axis, static_cast<std::int64_t>(ts.size())), ts[0].dtype()));
  for (std::size_t k = 0; k < ts.size(); ++k) {
    Tensor s = ts[k];
    copy_slice(r, s, axis, static_cast<std::int64_t>(k), true);
  }
  return r;
}

Tensor slice(const Tensor& stacked, std::size_t axis, std::int64_t k) {
  std::vector<std::int64_t> s = stacked.shape().sizes();
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
  Tensor r(Shape::of(s, stacked.dtype()));
  Tensor st = stacked;
  copy_slice(st, r, axis, k, false);
  return r;
}

/// Largest |got - want| / (1 + |want|); NaN must match NaN.
double rel_err(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (!(got.shape() == want.shape()))
    return INFINITY;
  double worst = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get_f64(i), w = want.get_f64(i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g))
        return INFINITY;
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w)
        return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(g - w) / (1 + std::fabs(w)));
  }
  return worst;
}

/// Runs vmap(\p g, \p batched, out_axis) on stacked per-slice values and compares each slice of
/// every output with a single run of \p g on that slice. \p slices[k]: the values of run k (the
/// unbatched inputs take slice 0's values in every run).
void expect_vmap_matches_loop(const Graph& g, const std::vector<BatchedInput>& batched,
                              std::int64_t out_axis, const std::vector<TensorMap>& slices,
                              const TensorMap& params, const std::string& what) {
  autodiff::VmapOptions opts;
  opts.out_axis = out_axis;
  opts.size = static_cast<std::int64_t>(slices.size());
  Graph v = autodiff::vmap(g, batched, opts);
  ASSERT_NO_THROW(ir::verify(v, {.allow_hir = false})) << what;
  TensorMap stacked = slices[0];
  for (const BatchedInput& bi : batched) {
    std::vector<Tensor> ts;
    for (const auto& s : slices)
      ts.push_back(s.at(bi.name));
    auto r = static_cast<std::int64_t>(ts[0].shape().rank());
    std::int64_t ax = bi.axis < 0 ? bi.axis + r + 1 : bi.axis;
    stacked[bi.name] = stack(ts, static_cast<std::size_t>(ax));
  }
  std::vector<std::vector<Tensor>> want;
  for (const auto& s : slices) {
    TensorMap in = slices[0];
    for (const BatchedInput& bi : batched)
      in[bi.name] = s.at(bi.name);
    want.push_back(ir::reference::evaluate(g, in, params));
  }
  std::vector<Tensor> got = ir::reference::evaluate(v, stacked, params);
  ASSERT_EQ(got.size(), want[0].size()) << what;
  for (std::size_t o = 0; o < got.size(); ++o) {
    auto r = static_cast<std::int64_t>(got[o].shape().rank());
    auto ax = static_cast<std::size_t>(out_axis < 0 ? out_axis + r : out_axis);
    for (std::size_t k = 0; k < slices.size(); ++k) {
      Tensor s = slice(got[o], ax, static_cast<std::int64_t>(k));
      EXPECT_LE(rel_err(s, want[k][o]), 1e-12)
          << what << ": output " << o << ", slice " << k << "\n got " << s.str(16) << "\nwant "
          << want[k][o].str(16);
    }
  }
}

// ---- the conformance table ----------------------------------------------------------------------

std::vector<std::string> batchable_case_names() {
  std::vector<std::string> r;
  for (const auto& c : conf::op_cases()) {
    const autodiff::BatchRule* rule = autodiff::batch_rule(c.op);
    if (rule != nullptr && rule->unbatchable == nullptr && !c.inputs.empty())
      r.push_back(c.name);
  }
  return r;
}

class OpVmap : public ::testing::TestWithParam<std::string> {};

TEST_P(OpVmap, MatchesALoopOfSingleRuns) {
  conf::register_conformance_custom_ops();
  const conf::OpCase& c = find_case(GetParam());
  // Every leaf an Input (so any of them can be batched), in f64 (region bodies keep their type:
  // vmap inlines them as the reference interpreter evaluates them, so f32 compares exactly too).
  const bool f64 = c.op != OpKind::ElementwiseRegion;
  Graph g0 = conf::build_graph(c);
  if (f64)
    g0 = autodiff::testing::to_f64(g0);
  std::vector<std::string> names;
  std::vector<std::string> param_names;
  for (const auto& s : c.inputs) {
    names.push_back(s.name);
    if (s.param)
      param_names.push_back(s.name);
  }
  Graph g = autodiff::promote_params_to_inputs(g0, param_names);
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < kB; ++k) {
    conf::OpCase ck = c;
    ck.name = c.name + "#slice" + std::to_string(k);
    conf::CaseValues v = conf::make_values(ck);
    TensorMap all = f64 ? autodiff::testing::to_f64(v.inputs) : v.inputs;
    for (auto& [n, t] : f64 ? autodiff::testing::to_f64(v.params) : v.params)
      all[n] = t;
    slices.push_back(all);
  }
  // A batched If predicate or While carry runs both branches / every unrolled body for every
  // slice; a sub-graph that can fail at run time then cannot be batched, and says so.
  const std::string fallible = ir::first_fallible(g);
  auto run = [&](const std::vector<BatchedInput>& bi, std::int64_t out_axis,
                 const std::string& what) {
    if (fallible.empty() || (c.op != OpKind::If && c.op != OpKind::While)) {
      expect_vmap_matches_loop(g, bi, out_axis, slices, {}, what);
      return;
    }
    try {
      expect_vmap_matches_loop(g, bi, out_axis, slices, {}, what);
    } catch (const AutodiffError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(std::string(ir::op_name(c.op)) + " %"), std::string::npos) << m;
      EXPECT_NE(m.find("can fail at run time"), std::string::npos) << m;
    }
  };
  // Every leaf batched at axis 0.
  std::vector<BatchedInput> every;
  for (const auto& n : names)
    every.push_back({n, 0});
  run(every, 0, c.name + " [all leaves batched, axis 0]");
  // The first leaf alone, batched at its last axis, batch dim of the outputs last.
  run({{names.front(), -1}}, -1, c.name + " [first leaf only, axis -1, out_axis -1]");
  // The last leaf alone (the others shared), batched at axis 1 when it has one.
  if (names.size() > 1) {
    std::int64_t ax = g.shape(g.find_leaf(names.back())).rank() >= 1 ? 1 : 0;
    run({{names.back(), ax}}, 0, c.name + " [last leaf only, axis " + std::to_string(ax) + "]");
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, OpVmap, ::testing::ValuesIn(batchable_case_names()),
                         [](const auto& p) { return p.param; });

// ---- the table ----------------------------------------------------------------------------------

TEST(VmapTable, EveryOpHasABatchingRuleOrSaysWhyNot) {
  ir::for_each_op([](OpKind k) {
    const autodiff::BatchRule* r = autodiff::batch_rule(k);
    if (ir::is_leaf(k)) {
      EXPECT_EQ(r, nullptr) << ir::op_name(k);
      return;
    }
    ASSERT_NE(r, nullptr) << ir::op_name(k);
    int ways = (r->fn != nullptr) + (r->via_decomposition ? 1 : 0) + (r->unbatchable != nullptr);
    EXPECT_EQ(ways, 1) << "op '" << ir::op_name(k)
                       << "' needs exactly one of: a batching rule, via_decomposition, or an "
                          "unbatchable reason";
    if (r->via_decomposition) {
      EXPECT_TRUE(ir::has_decomposition(k) || ir::is_hir(k)) << ir::op_name(k);
    }
  });
}

TEST(VmapTable, EveryBatchableOpHasAConformanceCase) {
  std::set<OpKind> covered;
  for (const auto& c : conf::op_cases())
    covered.insert(c.op);
  ir::for_each_op([&](OpKind k) {
    if (!ir::is_leaf(k)) {
      EXPECT_TRUE(covered.count(k)) << ir::op_name(k) << " has no conformance case to vmap";
    }
  });
}

// ---- graphs -------------------------------------------------------------------------------------

using ir::testing::uniform_tensor;

/// A per-example MLP loss: x [1, 4], label y (i64 [1]); W1 [4, 5], b1 [5], W2 [5, 3].
Graph mlp() {
  Graph g("mlp");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({1, 4}, DType::f64));
  NodeId y = b.input("y", Shape::of({1}, DType::i64));
  NodeId w1 = b.param("w1", Shape::of({4, 5}, DType::f64));
  NodeId b1 = b.param("b1", Shape::of({5}, DType::f64));
  NodeId w2 = b.param("w2", Shape::of({5, 3}, DType::f64));
  NodeId h = b.tanh(b.add(b.matmul(x, w1), b1));
  NodeId logits = b.matmul(h, w2);
  b.output(b.mean(b.softmax_cross_entropy(logits, y), {}));
  return g;
}

TEST(Vmap, PerExampleGradientsEqualALoopOfGradients) {
  Graph g = mlp();
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  TensorMap params{{"w1", uniform_tensor(Shape::of({4, 5}, DType::f64), 1)},
                   {"b1", uniform_tensor(Shape::of({5}, DType::f64), 2)},
                   {"w2", uniform_tensor(Shape::of({5, 3}, DType::f64), 3)}};
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < 4; ++k)
    slices.push_back({{"x", uniform_tensor(Shape::of({1, 4}, DType::f64), 10 + k)},
                      {"y", Tensor::from<std::int64_t>({1}, {k % 3})}});
  expect_vmap_matches_loop(gg, {{"x", 0}, {"y", 0}}, 0, slices, params, "per-example grads");
  // The same with the batch axis of x in the middle and the outputs' batch dim last.
  expect_vmap_matches_loop(gg, {{"x", 1}, {"y", 0}}, -1, slices, params,
                           "per-example grads, x axis 1");
}

TEST(Vmap, PerExampleGradientsWithRespectToPromotedWeights) {
  // Params promoted to Inputs and batched: one weight set per example (ensembles, MC runs).
  Graph g = autodiff::promote_params_to_inputs(mlp(), {"w1", "w2"});
  EXPECT_EQ(g.params().size(), 1u);
  EXPECT_TRUE(g.find_leaf("w1").valid());
  Graph gg = autodiff::grad_with_loss(g, {{"w1", false}, {"w2", false}, {"b1", true}});
  TensorMap params{{"b1", uniform_tensor(Shape::of({5}, DType::f64), 2)}};
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < 3; ++k)
    slices.push_back({{"x", uniform_tensor(Shape::of({1, 4}, DType::f64), 10 + k)},
                      {"y", Tensor::from<std::int64_t>({1}, {k})},
                      {"w1", uniform_tensor(Shape::of({4, 5}, DType::f64), 20 + k)},
                      {"w2", uniform_tensor(Shape::of({5, 3}, DType::f64), 30 + k)}});
  expect_vmap_matches_loop(gg, {{"x", 0}, {"y", 0}, {"w1", 0}, {"w2", 2}}, 0, slices, params,
                           "per-example weights");
}

Graph branch(bool then) {
  Graph br(then ? "then" : "else");
  Builder b(br);
  NodeId x = b.input("x", Shape::of({3}, DType::f64));
  NodeId s = b.input("s", Shape::of({3}, DType::f64));
  b.output(then ? b.mul(b.sin(x), s) : b.sub(x, s));
  return br;
}

TEST(Vmap, IfWithSharedAndBatchedPredicate) {
  Graph g("if");
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", Shape::of({3}, DType::f64));
  NodeId s = b.param("s", Shape::of({3}, DType::f64));
  NodeId y = b.if_(p, {x, s}, branch(true), branch(false));
  b.output(b.sum(y, {}));
  TensorMap params{{"s", uniform_tensor(Shape::of({3}, DType::f64), 5)}};
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < 3; ++k)
    slices.push_back({{"p", Tensor::scalar<bool>(k != 1)},
                      {"x", uniform_tensor(Shape::of({3}, DType::f64), 40 + k)}});
  // The predicate shared: an If of the vmapped branches stays.
  Graph v = autodiff::vmap(g, {{"x", 0}});
  EXPECT_EQ(std::count_if(v.nodes().begin(), v.nodes().end(),
                          [](const ir::Node& n) { return n.op == OpKind::If; }),
            1);
  expect_vmap_matches_loop(g, {{"x", 0}}, 0, slices, params, "if, shared predicate");
  // The predicate batched: both branches and a select.
  expect_vmap_matches_loop(g, {{"x", 0}, {"p", 0}}, 0, slices, params, "if, batched predicate");
}

TEST(Vmap, WhileCarryingABatchedValue) {
  Graph cond("cond"), body("body");
  {
    Builder b(cond);
    NodeId i = b.input("i", Shape::scalar(DType::i64));
    b.input("x", Shape::of({2}, DType::f64));
    NodeId n = b.input("n", Shape::scalar(DType::i64));
    b.output(b.compare(ir::CmpOp::lt, i, n));
  }
  {
    Builder b(body);
    NodeId i = b.input("i", Shape::scalar(DType::i64));
    NodeId x = b.input("x", Shape::of({2}, DType::f64));
    NodeId n = b.input("n", Shape::scalar(DType::i64));
    b.output(b.add(i, b.scalar(1, DType::i64)));
    b.output(b.add(b.mul(x, x), b.scalar(0.25, DType::f64)));
    b.output(n);
  }
  Graph g("loop");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}, DType::f64));
  NodeId n = b.input("n", Shape::scalar(DType::i64));
  b.output(b.while_({b.scalar(0, DType::i64), x, n}, cond, body, 4, 1));
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < 3; ++k)
    slices.push_back({{"x", uniform_tensor(Shape::of({2}, DType::f64), 50 + k, -0.5, 0.5)},
                      {"n", Tensor::scalar<std::int64_t>(k + 1)}});
  auto whiles = [](const Graph& v) {
    return std::count_if(v.nodes().begin(), v.nodes().end(),
                         [](const ir::Node& nd) { return nd.op == OpKind::While; });
  };
  // The trip count shared: every slice runs the same iterations, the loop stays a While.
  EXPECT_EQ(whiles(autodiff::vmap(g, {{"x", 0}})), 1);
  expect_vmap_matches_loop(g, {{"x", 0}}, 0, slices, {}, "while, batched carry");
  // The trip count batched: slices stop at different iterations, the loop is unrolled (guarded).
  EXPECT_EQ(whiles(autodiff::vmap(g, {{"x", 0}, {"n", 0}})), 0);
  expect_vmap_matches_loop(g, {{"x", 0}, {"n", 0}}, 0, slices, {}, "while, batched trip count");
}

TEST(Vmap, ErrorsNameTheCause) {
  Graph g = mlp();
  auto msg = [&](const std::vector<BatchedInput>& bi, const autodiff::VmapOptions& o = {}) {
    try {
      autodiff::vmap(g, bi, o);
    } catch (const AutodiffError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({{"nope", 0}}).find("no input named 'nope'"), std::string::npos);
  EXPECT_NE(msg({{"w1", 0}}).find("promote_params_to_inputs"), std::string::npos);
  EXPECT_NE(msg({{"x", 0}, {"x", 1}}).find("listed twice"), std::string::npos);
  EXPECT_NE(msg({}).find("no batched input"), std::string::npos);
  // Folding the batch into SoftmaxCrossEntropy's rows needs a static batch size.
  EXPECT_NE(msg({{"x", 0}}).find("static"), std::string::npos);
  try {
    autodiff::vmap(g, {{"x", 5}});
    ADD_FAILURE() << "an axis out of range was accepted";
  } catch (const Error&) {}
}

TEST(Vmap, UnbatchableOpIsNamed) {
  conf::register_conformance_custom_ops();
  for (const auto& c : conf::op_cases()) {
    if (c.op != OpKind::Custom || c.inputs.empty())
      continue;
    Graph g = conf::build_graph(c);
    std::string name;
    for (const auto& s : c.inputs)
      if (!s.param)
        name = s.name;
    if (name.empty())
      continue;
    try {
      autodiff::vmap(g, {{name, 0}});
      ADD_FAILURE() << c.name << ": vmap over a custom op was accepted";
    } catch (const AutodiffError& e) {
      EXPECT_NE(std::string(e.what()).find("custom"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot be batched"), std::string::npos) << e.what();
    }
    return;
  }
  ADD_FAILURE() << "no custom-op conformance case with an input";
}

TEST(Vmap, BatchedGatherIndexOutOfRangeStaysAnError) {
  // Batched table and indices fold the batch into the table's axis; an index past the slice's end
  // must not read the next slice.
  Graph g("gather");
  Builder b(g);
  NodeId t = b.input("t", Shape::of({4, 2}, DType::f64));
  NodeId i = b.input("i", Shape::of({2}, DType::i64));
  b.output(b.gather(t, i, 0));
  autodiff::VmapOptions o;
  o.size = 2;
  Graph v = autodiff::vmap(g, {{"t", 0}, {"i", 0}}, o);
  Tensor tv = uniform_tensor(Shape::of({2, 4, 2}, DType::f64), 1);
  EXPECT_NO_THROW(ir::reference::evaluate(
      v, {{"t", tv}, {"i", Tensor::from<std::int64_t>({2, 2}, {0, 3, 1, 2})}}));
  EXPECT_THROW(ir::reference::evaluate(
                   v, {{"t", tv}, {"i", Tensor::from<std::int64_t>({2, 2}, {0, 4, 1, 2})}}),
               Error);
  EXPECT_THROW(ir::reference::evaluate(
                   v, {{"t", tv}, {"i", Tensor::from<std::int64_t>({2, 2}, {0, 1, -1, 2})}}),
               Error);
}

TEST(Vmap, SharedOperandsAreNotCopiedPerSlice) {
  // x [B, 4] batched, W [4, 5] shared: the MatMul reads W as it is (no Expand of W).
  Graph g("lin");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 4}, DType::f32));
  NodeId w = b.param("w", Shape::of({4, 5}, DType::f32));
  NodeId bias = b.param("bias", Shape::of({5}, DType::f32));
  b.output(b.relu(b.add(b.matmul(x, w), bias)));
  Graph v = autodiff::vmap(g, {{"x", 0}});
  for (const auto& n : v.nodes())
    EXPECT_NE(n.op, OpKind::Expand) << "a shared operand was broadcast";
  EXPECT_EQ(v.shape(v.find_leaf("x")).str(), "[vmap_batch, 2, 4] f32");
}

TEST(Vmap, SymbolicBatchWithAnInferredReshapeDim) {
  // The batch size stays the symbol vmap_batch; a Reshape's -1 is resolved from the per-example
  // type (an inferred dim next to a symbol could not be).
  Graph g("flat");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}, DType::f64));
  b.output(b.exp(b.reshape(x, {ir::Dim(-1)})));
  std::vector<TensorMap> slices;
  for (std::int64_t k = 0; k < 4; ++k)
    slices.push_back({{"x", uniform_tensor(Shape::of({2, 3}, DType::f64), 60 + k)}});
  Graph v = autodiff::vmap(g, {{"x", 1}});
  EXPECT_EQ(v.shape(v.outputs()[0]).str(), "[vmap_batch, 6] f64");
  TensorMap stacked{
      {"x",
       stack({slices[0].at("x"), slices[1].at("x"), slices[2].at("x"), slices[3].at("x")}, 1)}};
  std::vector<Tensor> got = ir::reference::evaluate(v, stacked);
  for (std::int64_t k = 0; k < 4; ++k)
    EXPECT_LE(rel_err(slice(got[0], 0, k),
                      ir::reference::evaluate(g, slices[static_cast<std::size_t>(k)])[0]),
              1e-12);
}

TEST(Vmap, PerExampleGradientsOfALlamaBlockEqualALoop) {
  // RoPE and causal GQA attention fold the vmap batch into their own; RmsNorm, SwiGLU, the
  // embedding Gather and the loss's SoftmaxCrossEntropy, forward and backward.
  const std::int64_t S = 5, H = 8, heads = 2, kv = 1, F = 12, vocab = 10;
  Graph g("llama_example");
  Builder b(g);
  TensorMap params;
  std::uint64_t seed = 100;
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    params[n] = uniform_tensor(Shape::of(s, DType::f64), seed++, -0.5, 0.5);
    return b.param(n, Shape::of(s, DType::f64));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), b.input("ids", Shape::of({1, S}, DType::i64)), 0);
  x = autodiff::testing::gqa_llama_block(b, x, {H, heads, kv, F}, p);
  NodeId logits =
      b.matmul(b.reshape(x, {ir::Dim(S), ir::Dim(H)}), p("head", {vocab, H}), false, true);
  NodeId labels = b.input("labels", Shape::of({S}, DType::i64));
  b.output(b.mean(b.softmax_cross_entropy(logits, labels), {}));
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  std::vector<TensorMap> slices;
  std::mt19937_64 rng(7);
  for (std::int64_t k = 0; k < 3; ++k) {
    std::vector<std::int64_t> ids, lab;
    for (std::int64_t i = 0; i < S; ++i) {
      ids.push_back(static_cast<std::int64_t>(rng() % vocab));
      lab.push_back(static_cast<std::int64_t>(rng() % vocab));
    }
    slices.push_back({{"ids", Tensor::from<std::int64_t>({1, S}, ids)},
                      {"labels", Tensor::from<std::int64_t>({S}, lab)}});
  }
  expect_vmap_matches_loop(gg, {{"ids", 0}, {"labels", 0}}, 0, slices, params,
                           "llama per-example grads");
}

TEST(Vmap, CustomFnKeepsItsVjpBody) {
  // body(x, w) = x * w; the VJP body says dx = 2 d w (deliberately not the derivative) and
  // dw = d x, so a gradient that went through the inlined body instead would differ.
  Graph body("body"), vjp("vjp");
  {
    Builder b(body);
    NodeId x = b.input("x", Shape::of({3}, DType::f64));
    NodeId w = b.input("w", Shape::of({3}, DType::f64));
    b.output(b.mul(x, w));
  }
  {
    Builder b(vjp);
    NodeId x = b.input("x", Shape::of({3}, DType::f64));
    NodeId w = b.input("w", Shape::of({3}, DType::f64));
    NodeId d = b.input("d", Shape::of({3}, DType::f64));
    b.output(b.mul(b.mul(d, w), b.scalar(2.0, DType::f64)));
    b.output(b.mul(d, x));
  }
  Graph g("cfn");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}, DType::f64));
  NodeId w = b.param("w", Shape::of({3}, DType::f64));
  b.output(b.sum(b.custom_fn({x, w}, body, vjp), {}));
  autodiff::VmapOptions o;
  o.size = 4;
  Graph v = autodiff::vmap(g, {{"x", 0}}, o);
  EXPECT_EQ(std::count_if(v.nodes().begin(), v.nodes().end(),
                          [](const ir::Node& n) { return n.op == OpKind::CustomFn; }),
            1);
  // The total loss over the batch, differentiated: dx per slice and dw summed over slices.
  Graph total = v;
  {
    Builder tb(total);
    total.set_outputs({tb.sum(total.outputs()[0], {})});
  }
  Graph gt = autodiff::grad_with_loss(total, {{"x", false}, {"w", true}});
  Tensor xs = uniform_tensor(Shape::of({4, 3}, DType::f64), 70),
         wv = uniform_tensor(Shape::of({3}, DType::f64), 71);
  auto got = ir::reference::evaluate(gt, {{"x", xs}}, {{"w", wv}});
  Graph g1 = autodiff::grad_with_loss(g, {{"x", false}, {"w", true}});
  Tensor dw(Shape::of({3}, DType::f64));
  for (std::int64_t k = 0; k < 4; ++k) {
    auto one = ir::reference::evaluate(g1, {{"x", slice(xs, 0, k)}}, {{"w", wv}});
    EXPECT_LE(rel_err(slice(got[1], 0, k), one[1]), 1e-12) << "dx of slice " << k;
    for (std::int64_t i = 0; i < 3; ++i) {
      EXPECT_DOUBLE_EQ(one[1].get_f64(i), 2 * wv.get_f64(i)); // the VJP body's marker
      dw.set_f64(i, dw.get_f64(i) + one[2].get_f64(i));
    }
  }
  EXPECT_LE(rel_err(got[2], dw), 1e-12);
}

} // namespace
