// pipeline_test.cpp: CompilePipeline end to end on the HIR BERT layer, LLaMA block and MLP, with
// a backend that claims everything and one that claims a subset (legalisation), run through the
// Backend API and compared with the reference interpreter on the original HIR; stage order,
// timings, options, dumps and the errors of bad input.
#include "rlx/compile/memory_plan.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::claim_all_but;
using testing::count_ops;
using testing::expect_error;
using testing::TestBackend;

/// The bindings the random inputs use (every symbol = ir::testing::kSymbolSize).
CompileOptions bound_options() {
  CompileOptions o;
  o.bindings = {{"batch", ir::testing::kSymbolSize}, {"seq", ir::testing::kSymbolSize}};
  return o;
}

/// bound_options() without fusion, for a test that counts constants (the test backends claim
/// ElementwiseRegion, which copies small constants into region bodies).
CompileOptions unfused_options() {
  CompileOptions o = bound_options();
  o.fuse = false;
  return o;
}

/// Compiles \p hir for \p backend, runs the executable through the Backend API on random inputs
/// and params, and expects the reference interpreter's values of the original HIR graph.
CompileResult compile_and_compare(const Graph& hir, const Backend& backend, double tol,
                                  CompileOptions opts = bound_options()) {
  CompilePipeline pipe(backend, std::move(opts));
  CompileResult r = pipe.run(hir);
  EXPECT_EQ(r.lir.stage(), ir::Stage::lir);
  EXPECT_FALSE(ir::has_hir_ops(r.lir.graph()));
  EXPECT_TRUE(r.lir.graph().symbols().empty());
  check_memory_plan(r.lir.graph(), r.lir.plan());
  auto in = ir::testing::random_inputs(hir, 5);
  auto params = ir::testing::random_params(hir, 5);
  std::vector<ir::Tensor> want = ir::reference::evaluate(hir, in, params);
  std::unique_ptr<Executable> exe = backend.compile(r.lir);
  for (const auto& [name, t] : in)
    exe->set_input(name, t);
  for (const auto& [name, t] : params)
    if (r.lir.graph().find_leaf(name, /*param=*/true).valid())
      exe->set_param(name, t);
  exe->execute();
  for (std::size_t i = 0; i < want.size(); ++i) {
    ir::Tensor got = exe->output(i);
    EXPECT_EQ(got.shape(), want[i].shape());
    double scale = 0;
    for (std::int64_t k = 0; k < want[i].numel(); ++k)
      scale = std::max(scale, std::fabs(want[i].get_f64(k)));
    EXPECT_LE(ir::max_abs_diff(got, want[i]), tol * (1 + scale)) << "output " << i;
  }
  return r;
}

/// A backend without the composite ops the models lower to: layer / RMS norm, softmax, GELU,
/// SiLU, rsqrt, the HIR blocks and the fused ops (so no fusion takes the SiLU away).
/// Legalisation must decompose them.
TestBackend subset_backend() {
  return TestBackend("test-subset",
                     claim_all_but({OpKind::LayerNorm, OpKind::RmsNorm, OpKind::Softmax,
                                    OpKind::Gelu, OpKind::Silu, OpKind::Sigmoid, OpKind::Rsqrt,
                                    OpKind::MatMulBiasAct, OpKind::SwiGlu, OpKind::SwiGluMatMul,
                                    OpKind::ElementwiseRegion, OpKind::ResidualLayerNorm,
                                    OpKind::ResidualRmsNorm, OpKind::FusedAttentionBlock}));
}

/// \p before, then every fusion pass of the table that is on by default, in its order (the test
/// backends claim every op a fusion emits), then \p after: a pipeline's pass names with fusion on.
std::vector<std::string> around_fusion(std::vector<std::string> before,
                                       const std::vector<std::string>& after) {
  for (const fusion::FusionPassInfo& p : fusion::fusion_pass_table())
    if (p.on_by_default)
      before.emplace_back(p.name);
  before.insert(before.end(), after.begin(), after.end());
  return before;
}

TEST(Pipeline, StageOrder) {
  TestBackend full;
  CompilePipeline pipe(full);
  EXPECT_EQ(pipe.pass_names(), around_fusion({"lower-hir", "const-fold", "simplify", "cse"},
                                             {"bind-symbols", "legalize", "dce", "memory-plan"}));
  CompileOptions o;
  o.fold_constants = false;
  o.specialize_params["w"] = ir::Tensor::scalar<float>(1);
  TestBackend explicit_bc("explicit", testing::claim_everything(), fusion::BroadcastPolicy::none);
  EXPECT_EQ(
      CompilePipeline(explicit_bc, o).pass_names(),
      around_fusion({"lower-hir", "specialize-params", "simplify", "cse"},
                    {"bind-symbols", "legalize", "legalize-broadcast", "dce", "memory-plan"}));
  // No fusion, or one pass turned off; the subset backend claims no fused op.
  CompileOptions nf;
  nf.fuse = false;
  EXPECT_EQ(CompilePipeline(full, nf).pass_names(),
            (std::vector<std::string>{"lower-hir", "const-fold", "simplify", "cse", "bind-symbols",
                                      "legalize", "dce", "memory-plan"}));
  CompileOptions one_off;
  one_off.fusion.disabled.insert("fuse-matmul-bias-act");
  const auto names = CompilePipeline(full, one_off).pass_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "fuse-matmul-bias-act"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "fuse-gelu-spelling"), 1);
  const auto sub = CompilePipeline(subset_backend()).pass_names();
  EXPECT_EQ(std::count(sub.begin(), sub.end(), "fuse-matmul-bias-act"), 0);
}

TEST(Pipeline, BertLayerOnAFullBackend) {
  TestBackend full;
  CompileResult r =
      compile_and_compare(testing::bert_hir(2, 16, 2, 32, /*padding_mask=*/true), full, 1e-5);
  EXPECT_EQ(r.dispatch.backend, "test-all");
  EXPECT_EQ(r.dispatch.total().rewritten, 0);
  EXPECT_EQ(r.dispatch.total().unsupported, 0);
  // The full backend claims the fused attention block: each layer's attention is one block.
  EXPECT_GE(count_ops(r.lir.graph(), OpKind::FusedAttentionBlock), 2);
  // per-pass timings, in the order of pass_names()
  CompilePipeline pipe(full, bound_options());
  ASSERT_EQ(r.passes.size(), pipe.pass_names().size());
  for (std::size_t i = 0; i < r.passes.size(); ++i) {
    EXPECT_EQ(r.passes[i].name, pipe.pass_names()[i]);
    EXPECT_GE(r.passes[i].ms, 0.0);
  }
  EXPECT_TRUE(r.passes[0].changed); // lower-hir
  EXPECT_GT(r.total_ms, 0.0);
  EXPECT_GT(r.lir.plan().arena_size, 0);
}

TEST(Pipeline, FusionFollowsTheClaimsAndKeepsTheValues) {
  // The full backend claims MatMulBiasAct: the MLP's Linear layers fuse (fewer kernels, same
  // values); the subset backend does not: nothing fuses, also the same values.
  TestBackend full;
  const Graph mlp = testing::mlp_hir();
  CompileResult r = compile_and_compare(mlp, full, 1e-5);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::MatMul), 0) << ir::print(r.lir.graph());
  EXPECT_GE(count_ops(r.lir.graph(), OpKind::MatMulBiasAct), 3);
  EXPECT_GE(r.fusion.total_applied(), 3) << r.fusion.str();
  EXPECT_LT(r.kernels_after_fusion, r.kernels_before_fusion);
  TestBackend subset = subset_backend();
  CompileResult s = compile_and_compare(mlp, subset, 1e-5);
  EXPECT_EQ(count_ops(s.lir.graph(), OpKind::MatMulBiasAct), 0);
  EXPECT_EQ(s.fusion.total_applied(), 0) << s.fusion.str();
  EXPECT_EQ(s.kernels_after_fusion, s.kernels_before_fusion);
  // A pass name that does not exist is an error naming the passes.
  CompileOptions typo = bound_options();
  typo.fusion.disabled.insert("fuse-everything");
  EXPECT_THROW(CompilePipeline(full, typo).run(mlp), Error);
}

TEST(Pipeline, BertLayerOnASubsetBackend) {
  TestBackend subset = subset_backend();
  CompileResult r = compile_and_compare(testing::bert_hir(1, 16, 2, 32), subset, 1e-5);
  EXPECT_GE(r.dispatch.by_op[OpKind::LayerNorm].rewritten, 2);
  EXPECT_GE(r.dispatch.by_op[OpKind::Gelu].rewritten, 1);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::LayerNorm), 0);
  EXPECT_EQ(r.dispatch.total().unsupported, 0);
}

TEST(Pipeline, LlamaBlocksOnBothBackends) {
  TestBackend full;
  compile_and_compare(testing::llama_hir(2), full, 1e-5);
  TestBackend subset = subset_backend();
  CompileResult r = compile_and_compare(testing::llama_hir(2), subset, 1e-5);
  EXPECT_GE(r.dispatch.by_op[OpKind::RmsNorm].rewritten, 4);
  EXPECT_GE(r.dispatch.by_op[OpKind::Silu].rewritten, 2);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::RmsNorm), 0);
}

TEST(Pipeline, SymbolicLlamaOnABackendWithoutAttentionAndRope) {
  // The causal-mask and RoPE decompositions need static sequence lengths: the symbols given in
  // CompileOptions::bindings are bound before legalisation, so a symbolic LLaMA graph compiles
  // for a backend that claims neither Attention nor Rope.
  TestBackend no_attention("test-no-attention", claim_all_but({OpKind::Attention, OpKind::Rope,
                                                               OpKind::FusedAttentionBlock}));
  CompileResult r = compile_and_compare(testing::llama_hir(2), no_attention, 1e-5);
  EXPECT_GE(r.dispatch.by_op[OpKind::Attention].rewritten, 2);
  EXPECT_GE(r.dispatch.by_op[OpKind::Rope].rewritten, 4);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::Attention), 0);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::Rope), 0);
}

TEST(Pipeline, MlpOnBothBackendsAndInF64) {
  TestBackend full;
  compile_and_compare(testing::mlp_hir(), full, 1e-6);
  compile_and_compare(testing::mlp_hir({8, 16, 4}, DType::f64), full, 1e-13);
  // Without Relu (and without the fused op that would absorb it), relu is legalised.
  TestBackend no_relu("no-relu", claim_all_but({OpKind::Relu, OpKind::MatMulBiasAct}));
  CompileResult r = compile_and_compare(testing::mlp_hir(), no_relu, 1e-6);
  EXPECT_EQ(r.dispatch.by_op[OpKind::Relu].rewritten, 2);
  EXPECT_EQ(count_ops(r.lir.graph(), OpKind::Maximum), 2);
}

TEST(Pipeline, MirModulesCompileToo) {
  TestBackend full;
  Graph mir = ir::lower_hir(testing::mlp_hir());
  CompileResult r = CompilePipeline(full, bound_options()).run(ir::Module::mir(mir));
  EXPECT_FALSE(r.passes[0].changed); // nothing to lower
  EXPECT_EQ(r.lir.stage(), ir::Stage::lir);
}

TEST(Pipeline, SpecializedParamsLeaveTheInterface) {
  Graph hir = testing::mlp_hir({4, 6, 3});
  CompileOptions o = unfused_options(); // counts constants: a region would absorb small ones
  o.specialize_params = ir::testing::random_params(hir, 5); // the values compile_and_compare uses
  TestBackend full;
  CompileResult r = compile_and_compare(hir, full, 1e-6, o);
  EXPECT_TRUE(r.lir.graph().params().empty());
  EXPECT_GE(count_ops(r.lir.graph(), OpKind::Constant), 4);
}

TEST(Pipeline, ExplicitBroadcastBackend) {
  TestBackend explicit_bc("explicit", testing::claim_everything(), fusion::BroadcastPolicy::none);
  CompileOptions o = bound_options();
  o.fuse = false; // keep the bias adds, which broadcast
  CompileResult r = compile_and_compare(testing::bert_hir(1, 16, 2, 32), explicit_bc, 1e-5, o);
  EXPECT_GE(count_ops(r.lir.graph(), OpKind::Expand), 1);
  const Graph& g = r.lir.graph();
  for (NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    if (ir::fusion_kind(n.op) != ir::FusionKind::broadcast || n.op == OpKind::Expand)
      continue;
    for (NodeId in : n.inputs)
      EXPECT_EQ(g.shape(in).dims, n.shape.dims) << ir::describe(g, id);
  }
}

TEST(Pipeline, ScratchIsPlanned) {
  TestBackend scratchy("scratchy", testing::claim_everything(), fusion::BroadcastPolicy::implicit,
                       4096);
  CompileResult r = compile_and_compare(testing::mlp_hir(), scratchy, 1e-6);
  EXPECT_EQ(r.lir.plan().scratch.size(), 3u);
  for (const auto& s : r.lir.plan().scratch)
    EXPECT_EQ(s.bytes, 4096);
}

TEST(Pipeline, DumpsEveryStageWhenAsked) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rlx_pipe_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("RLX_IR_DUMP", dir.c_str(), 1);
  TestBackend full;
  CompilePipeline(full, bound_options()).run(testing::mlp_hir());
  ::unsetenv("RLX_IR_DUMP");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 21u); // input + 20 graph passes (13 of them fusion passes)
  EXPECT_EQ(files.front(), "mlp.00.input.ir");
  EXPECT_EQ(files.back(), "mlp.20.dce.ir");
  fs::remove_all(dir);
}

TEST(Pipeline, EveryPassAloneKeepsTheModelsValues) {
  // Each pass on the lowered BERT layer (with padding mask), LLaMA blocks and MLP, checked against
  // the HIR original with the reference interpreter.
  const ir::ClaimSet subset = subset_backend().claims();
  const ir::Bindings sizes{{"batch", ir::testing::kSymbolSize}, {"seq", ir::testing::kSymbolSize}};
  for (const Graph& hir : {testing::bert_hir(1, 16, 2, 32, /*padding_mask=*/true),
                           testing::llama_hir(2), testing::mlp_hir()}) {
    const Graph mir = ir::lower_hir(hir);
    for (const char* pass : {"const-fold", "simplify", "cse", "dce", "lower-control-flow",
                             "lower-dot-general", "legalize-broadcast", "legalize", "bind-symbols",
                             "const-fold,simplify,cse,legalize,legalize-broadcast,dce"}) {
      SCOPED_TRACE(hir.name() + ": " + pass);
      Graph g = mir;
      fusion::PassContext ctx;
      ctx.claims = &subset;
      ctx.backend = "subset";
      ctx.bindings = &sizes;
      ctx.options.broadcast = fusion::BroadcastPolicy::none;
      run_pipeline(g, pass, ctx);
      testing::expect_equivalent(hir, g, 1e-5);
    }
  }
}

// ---- bad input -------------------------------------------------------------------------------

TEST(PipelineErrors, InputThatFailsVerification) {
  Graph g("bad");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  // A node whose recorded type is not what its op derives.
  g.add_output(g.add_unchecked(ir::Node{OpKind::Relu, {x}, ir::NoAttrs{}, Shape::of({3, 2}), ""}));
  TestBackend full;
  try {
    CompilePipeline(full).run(g);
    FAIL() << "invalid graph compiled";
  } catch (const ir::VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("input graph fails verification"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("relu %1"), std::string::npos) << e.what();
  }
}

TEST(PipelineErrors, CyclicEdge) {
  Graph g("cyclic");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId a = b.exp(x);
  NodeId c = b.neg(a);
  b.output(c);
  g.set_input(a, 0, c); // exp now reads neg, which reads exp
  TestBackend full;
  try {
    CompilePipeline(full).run(g);
    FAIL() << "cyclic graph compiled";
  } catch (const ir::VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("exp %1"), std::string::npos) << e.what();
  }
}

TEST(PipelineErrors, DanglingEdgeInTextIsAParseError) {
  EXPECT_THROW(ir::parse("graph @g {\n"
                         "  %0 = input[name=\"x\", shape=[3] f32] : [3] f32\n"
                         "  %1 = exp(%7) : [3] f32\n"
                         "  return %1\n"
                         "}"),
               ir::ParseError);
}

TEST(PipelineErrors, UnboundSymbols) {
  TestBackend full;
  CompileOptions o;
  o.bindings = {{"batch", 2}};
  expect_error("unbound seq accepted", [&] { CompilePipeline(full, o).run(testing::bert_hir()); },
               {"unbound symbols 'seq'"});
}

TEST(PipelineErrors, UnsupportedOpNamesOpNodeAndBackend) {
  // Gather has no decomposition (and symbolic attention now decomposes once bound).
  TestBackend no_gather("no-gather", claim_all_but({OpKind::Gather}));
  Graph g("embed");
  Builder b(g);
  NodeId table = b.input("table", Shape::of({8, 4}));
  NodeId ids = b.input("ids", Shape({ir::Dim::sym("seq")}, DType::i64));
  b.output(b.gather(table, ids, 0));
  expect_error("unsupported gather accepted",
               [&] { CompilePipeline(no_gather, bound_options()).run(g); },
               {"pass 'legalize'", "backend 'no-gather'", "gather %"});
}

TEST(PipelineErrors, LirModulesAreRejected) {
  TestBackend full;
  CompileResult r = CompilePipeline(full, bound_options()).run(testing::mlp_hir());
  EXPECT_THROW(CompilePipeline(full).run(r.lir), Error);
}

} // namespace
} // namespace rlx::compile
