// cpu_test.cpp: gradient graphs compile through rlx-compile's CompilePipeline for rlx-cpu and run
// there with the reference interpreter's results (f32): an MLP with cross-entropy, a one-layer
// BERT-mini with a padding mask and a LLaMA block with GQA, every parameter's gradient.
//
// Tolerance: |cpu - reference| <= 2e-4 + 2e-3 |reference| per element. The CPU computes in f32
// (oneDNN / BLAS sums in any order) and the reference in double rounded per op; a gradient here
// is a chain of a few dozen ops each with an n-term f32 sum (n <= 64), so gamma_n ~ n u ~ 4e-6 per
// stage, compounded over the chain, stays well below the bound, while a wrong kernel or a wrong
// plan (an O(1) error) does not.
#include "model_testing.hpp"
#include "op_cases.hpp"
#include "rlx/autodiff/grad.hpp"
#include "rlx/autodiff/transforms.hpp"
#include "rlx/autodiff/vmap.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

namespace {

using namespace rlx;
using autodiff::testing::xent_head;
using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

struct Values {
  TensorMap inputs, params;
};

Values values_for(const Graph& g, std::int64_t int_bound) {
  std::mt19937_64 rng(3);
  Values v;
  for (NodeId id : g.ids()) {
    const auto& n = g.node(id);
    if (n.op != ir::OpKind::Input && n.op != ir::OpKind::Param)
      continue;
    const auto& name = n.attr<ir::LeafAttrs>().name;
    Tensor t(n.shape);
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      if (!ir::is_float(n.shape.dtype))
        t.set_i64(i, std::uniform_int_distribution<std::int64_t>(0, int_bound - 1)(rng));
      else if (name == "mask")
        t.set_f64(i, i % 5 == 4 ? 0.0 : 1.0);
      else
        t.set_f64(i, std::uniform_real_distribution<double>(-0.5, 0.5)(rng) +
                         (name.find("norm") != std::string::npos ? 1.0 : 0.0));
    }
    (n.op == ir::OpKind::Param ? v.params : v.inputs)[name] = t;
  }
  return v;
}

/// Compiles the gradient (or any) graph \p gg for the CPU, runs it and compares every output with
/// the reference interpreter. Sets \p listing
/// (when given) to the executable's kernel listing.
void expect_compiled_matches_reference(const Graph& gg, std::int64_t int_bound,
                                       std::string* listing = nullptr) {
  Values v = values_for(gg, int_bound);
  cpu::CpuBackend backend;
  compile::CompileResult r = compile::CompilePipeline(backend).run(gg);
  std::unique_ptr<compile::Executable> exe = backend.compile(r.lir);
  if (listing != nullptr)
    *listing = cpu::kernel_listing(*exe);
  for (const auto& [name, t] : v.inputs)
    exe->set_input(name, t);
  for (const auto& [name, t] : v.params)
    exe->set_param(name, t);
  exe->execute();
  const std::vector<Tensor> want = ir::reference::evaluate(gg, v.inputs, v.params);
  ASSERT_EQ(want.size(), gg.outputs().size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    const Tensor got = exe->output(o);
    ASSERT_EQ(got.shape(), want[o].shape()) << "output " << o;
    double worst = 0;
    for (std::int64_t i = 0; i < got.numel(); ++i) {
      double w = want[o].get_f64(i), d = std::fabs(got.get_f64(i) - w);
      worst = std::max(worst, d / (2e-4 + 2e-3 * std::fabs(w)));
    }
    EXPECT_LE(worst, 1.0) << gg.name() << " output " << o << " (0 = loss, then the params in "
                          << "order): worst error / bound " << worst;
  }
}

/// Differentiates \p g (one scalar loss) with respect to every param and checks the gradient
/// graph on the CPU (expect_compiled_matches_reference).
void expect_cpu_matches_reference(const Graph& g, std::int64_t int_bound,
                                  std::string* listing = nullptr) {
  expect_compiled_matches_reference(autodiff::grad_with_loss(g, autodiff::float_params(g)),
                                    int_bound, listing);
}

TEST(CpuGradient, Mlp) {
  Graph g("mlp");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({8, 12}));
  NodeId h = b.linear(x, b.param("w1", Shape::of({32, 12})), b.param("b1", Shape::of({32})),
                      ir::Activation::gelu);
  h = b.linear(h, b.param("w2", Shape::of({16, 32})), b.param("b2", Shape::of({16})),
               ir::Activation::relu);
  b.output(xent_head(b, h, 8, 16, 5));
  expect_cpu_matches_reference(g, 5);
}

TEST(CpuGradient, BertMiniOneLayer) {
  const std::int64_t B = 2, S = 8, H = 32, F = 64, vocab = 20, classes = 4;
  Graph g("bert_mini");
  Builder b(g);
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), b.input("ids", Shape::of({B, S}, DType::i64)), 0);
  x = b.layer_norm(x, p("emb_norm_g", {H}), p("emb_ln_b", {H}), 1e-12);
  ir::BertLayerAttrs a;
  a.num_heads = 4;
  a.padding_mask = true;
  x = b.bert_layer({x, p("wq", {H, H}), p("bq", {H}), p("wk", {H, H}), p("bk", {H}),
                    p("wv", {H, H}), p("bv", {H}), p("wo", {H, H}), p("bo", {H}),
                    p("ln1_norm_g", {H}), p("ln1_b", {H}), p("w1", {F, H}), p("b1", {F}),
                    p("w2", {H, F}), p("b2", {H}), p("ln2_norm_g", {H}), p("ln2_b", {H}),
                    b.input("mask", Shape::of({B, S}))},
                   a);
  b.output(xent_head(b, x, B * S, H, classes));
  expect_cpu_matches_reference(g, classes);
}

TEST(CpuGradient, BackwardOpsRunAsTheirOwnKernels) {
  // LayerNorm, RmsNorm, Softmax and LogSoftmax differentiate to one backward op each, which the
  // CPU claims and runs natively (not legalised back to primitives), matching the reference.
  Graph g("norms");
  Builder b(g);
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s));
  };
  NodeId x = p("x", {4, 5, 24});
  NodeId y = b.layer_norm(x, p("ln_norm_g", {24}), p("ln_b", {24}), 1e-5);
  y = b.rms_norm(b.tanh(y), p("rms_norm_g", {24}), 1e-6);
  y = b.softmax(b.log_softmax(y, 1), -1);
  b.output(b.sum(b.mul(y, b.input("w", Shape::of({4, 5, 24}))), {}));
  std::string listing;
  expect_cpu_matches_reference(g, 1, &listing);
  for (const char* op : {"layer_norm_grad [tbb]", "rms_norm_grad [tbb]", "softmax_grad [tbb]",
                         "log_softmax_grad [tbb]"})
    EXPECT_NE(listing.find(op), std::string::npos) << op << " missing:\n" << listing;
}

TEST(CpuGradient, LlamaBlockGqa) {
  const std::int64_t B = 2, S = 8, H = 32, heads = 4, kv = 2, F = 48, vocab = 24;
  Graph g("llama_gqa");
  Builder b(g);
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), b.input("ids", Shape::of({B, S}, DType::i64)), 0);
  x = autodiff::testing::gqa_llama_block(b, x, {H, heads, kv, F}, p);
  x = b.rms_norm(x, p("final_norm", {H}), 1e-6);
  b.output(xent_head(b, x, B * S, H, vocab));
  expect_cpu_matches_reference(g, vocab);
}

// ---- vmap: batched graphs compile for the CPU ------------------------------------------------

/// Per-example gradients: vmap over the example axis of the gradient graph of \p g (one example
/// per run), compiled for the CPU against the reference interpreter.
void expect_cpu_per_example_grads(const Graph& g, std::int64_t examples, std::int64_t int_bound) {
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  std::vector<autodiff::BatchedInput> batched;
  for (NodeId in : gg.inputs())
    batched.push_back({gg.node(in).attr<ir::LeafAttrs>().name, 0});
  autodiff::VmapOptions o;
  o.size = examples;
  expect_compiled_matches_reference(autodiff::vmap(gg, batched, o), int_bound);
}

TEST(CpuVmap, PerExampleGradientsOfAnMlp) {
  Graph g("mlp_example");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({1, 12}));
  NodeId h = b.linear(x, b.param("w1", Shape::of({32, 12})), b.param("b1", Shape::of({32})),
                      ir::Activation::gelu);
  b.output(xent_head(b, h, 1, 32, 5));
  expect_cpu_per_example_grads(g, 6, 5);
}

TEST(CpuVmap, PerExampleGradientsOfALlamaBlock) {
  // Attention and RoPE fold the vmap batch into their own batch dim; GQA, causal mask.
  const std::int64_t S = 6, H = 16, heads = 4, kv = 2, F = 24, vocab = 12;
  Graph g("llama_example");
  Builder b(g);
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), b.input("ids", Shape::of({1, S}, DType::i64)), 0);
  x = autodiff::testing::gqa_llama_block(b, x, {H, heads, kv, F}, p);
  b.output(xent_head(b, x, S, H, vocab));
  expect_cpu_per_example_grads(g, 3, vocab);
}

/// The vmapped graph of conformance case \p c (every leaf an Input batched at axis 0, batch 3) as
/// a case of its own: batched input types, the batched graph inlined as the node under test, the
/// case's tolerance (the same kernels run, per slice, plus exact movement).
conformance::OpCase vmapped_case(const conformance::OpCase& c) {
  std::vector<std::string> params;
  for (const auto& s : c.inputs)
    if (s.param)
      params.push_back(s.name);
  Graph g = autodiff::promote_params_to_inputs(conformance::build_graph(c), params);
  std::vector<autodiff::BatchedInput> batched;
  for (const auto& s : c.inputs)
    batched.push_back({s.name, 0});
  autodiff::VmapOptions o;
  o.size = 3;
  auto v = std::make_shared<Graph>(autodiff::vmap(g, batched, o));
  conformance::OpCase r = c;
  r.name = c.name + "_vmap";
  r.inputs.clear();
  for (NodeId in : v->inputs()) {
    const auto& name = v->node(in).attr<ir::LeafAttrs>().name;
    for (const auto& s : c.inputs)
      if (s.name == name) {
        conformance::InputSpec b = s;
        b.type = v->shape(in);
        b.param = false;
        r.inputs.push_back(b);
      }
  }
  r.build = [v](Graph& gr, const std::vector<NodeId>& ins) {
    Builder b(gr);
    return ir::inline_subgraph(b, *v, ins, "vmapped case").at(0);
  };
  return r;
}

TEST(CpuVmap, EveryBatchableConformanceCaseCompilesAndMatches) {
  conformance::register_conformance_custom_ops();
  cpu::CpuBackend backend;
  int passed = 0, skipped = 0;
  for (const auto& c : conformance::op_cases()) {
    const autodiff::BatchRule* rule = autodiff::batch_rule(c.op);
    if (rule == nullptr || rule->unbatchable != nullptr || c.inputs.empty())
      continue;
    conformance::OpCase vc;
    try {
      vc = vmapped_case(c);
    } catch (const autodiff::AutodiffError& e) { // fallible control flow (vmap_test checks it)
      EXPECT_NE(std::string(e.what()).find("can fail at run time"), std::string::npos) << e.what();
      continue;
    }
    conformance::CaseResult r = conformance::run_case(vc, backend);
    if (r.status == conformance::CaseResult::Status::skipped) {
      ++skipped;
      continue;
    }
    EXPECT_EQ(r.status, conformance::CaseResult::Status::passed) << vc.name << ": " << r.message;
    passed += r.status == conformance::CaseResult::Status::passed;
  }
  EXPECT_GT(passed, 300);
  RecordProperty("passed", passed);
  RecordProperty("skipped", skipped);
}

} // namespace
