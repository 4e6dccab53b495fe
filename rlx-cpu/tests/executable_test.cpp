// executable_test.cpp: the CPU executable: the arena and kernel list, views without kernels,
// constants, I/O type checks, clear errors, and no allocation per run.
#include "rlx/compile/memory_plan.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <thread>

// Counts global allocations while g_counting is set (the no-allocation-per-run test). The whole
// replaceable operator new / delete family is replaced, every form on malloc / aligned_alloc and
// free: a form left to the runtime (libstdc++'s, or AddressSanitizer's in the sanitizer build)
// would allocate with its own allocator and be released here with free, which the sanitizer
// rightly reports as alloc-dealloc-mismatch (std::stable_sort's buffer uses the nothrow form).
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* counted_alloc(std::size_t n, std::size_t align) noexcept {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0)
    n = 1;
  if (align <= alignof(std::max_align_t))
    return std::malloc(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align); // size: a multiple of align
}

void* counted_alloc_or_throw(std::size_t n, std::size_t align) {
  if (void* p = counted_alloc(n, align))
    return p;
  throw std::bad_alloc();
}
} // namespace

void* operator new(std::size_t n) {
  return counted_alloc_or_throw(n, 0);
}
void* operator new[](std::size_t n) {
  return counted_alloc_or_throw(n, 0);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
// Every form above allocates with malloc or aligned_alloc, so free is the matching release; GCC
// cannot see through the replacement.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace {

using namespace rlx;
using ir::DType;
using ir::Shape;
using ir::Tensor;

std::unique_ptr<compile::Executable> compile_graph(const ir::Graph& g,
                                                   const cpu::CpuBackend& backend) {
  compile::CompileOptions o;
  o.fold_constants = false;
  o.fuse = false;
  return backend.compile(compile::CompilePipeline(backend, o).run(g).lir);
}

Tensor iota(const std::vector<std::int64_t>& sizes, double scale = 0.1) {
  Tensor t(Shape::of(sizes));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, scale * static_cast<double>(i % 17) - 0.7);
  return t;
}

template <class Fn> std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CpuExecutable, RunsAGraphAndMatchesTheReference) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({4, 6}));
  auto w = b.param("w", Shape::of({5, 6}));
  auto y = b.matmul(x, w, false, true);
  b.output(b.relu(b.add(y, b.constant(iota({5}, 0.3)))));
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  Tensor xv = iota({4, 6}), wv = iota({5, 6}, 0.05);
  exe->set_input("x", xv);
  exe->set_param("w", wv);
  exe->execute();
  auto want = ir::reference::evaluate(g, {{"x", xv}}, {{"w", wv}});
  EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-5);
  // A second run with new inputs reuses the same arena.
  Tensor x2 = iota({4, 6}, -0.2);
  exe->set_input("x", x2);
  exe->execute();
  want = ir::reference::evaluate(g, {{"x", x2}}, {{"w", wv}});
  EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-5);
  EXPECT_GT(exe->device_bytes(), 0);
}

TEST(CpuExecutable, PackedWeightsFollowTheirParam) {
  // oneDNN reads 2-D Param / Constant weights from copies packed in its preferred layout: a new
  // set_param must repack, a Constant is packed at compile time.
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({16, 64}));
  auto w = b.param("w", Shape::of({96, 64}));
  auto y = b.matmul(x, w, false, true);
  b.output(b.matmul(y, b.constant(iota({96, 32}, 0.01)), false, false));
  cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn});
  auto exe = compile_graph(g, backend);
  Tensor xv = iota({16, 64});
  exe->set_input("x", xv);
  for (double scale : {0.02, -0.03}) {
    Tensor wv = iota({96, 64}, scale);
    exe->set_param("w", wv);
    exe->execute();
    auto want = ir::reference::evaluate(g, {{"x", xv}}, {{"w", wv}});
    double peak = 0;
    for (std::int64_t i = 0; i < want[0].numel(); ++i)
      peak = std::max(peak, std::fabs(want[0].get_f64(i)));
    // Two f32 GEMMs (K = 64, then 96): relative error well under 1e-5 of the largest value; a
    // stale packed copy of w would be off by O(1) relative.
    EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-5 * peak) << "scale " << scale;
  }
  // The packed copies are counted (w's at least; the Constant's too where oneDNN prefers another
  // layout for it, as on AVX-512, padded to 96 x 64); the Param slot of the plan is not (w is
  // read from the region).
  const std::int64_t copies = cpu::compile_breakdown(*exe).copy_bytes;
  EXPECT_GE(copies, 96 * 64 * 4);
  auto lir = compile::CompilePipeline(backend).run(g).lir;
  EXPECT_LE(exe->device_bytes(), lir.plan().arena_size - 96 * 64 * 4 + copies + 4096);
}

/// x·wᵀ + b and a LayerNorm over it with gain g, compiled for \p rows rows of x.
ir::Graph weights_graph(std::int64_t rows) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({rows, 64}));
  auto w = b.param("w", Shape::of({96, 64}));
  auto bias = b.param("b", Shape::of({96}));
  auto gain = b.param("g", Shape::of({96}));
  auto y = b.add(b.matmul(x, w, false, true), bias);
  b.output(b.layer_norm(y, gain, bias, 1e-5));
  return g;
}

std::unique_ptr<compile::Executable> compile_bound(const ir::Graph& g,
                                                   const cpu::CpuBackend& backend,
                                                   std::shared_ptr<compile::WeightRegion> weights) {
  compile::CompileOptions o;
  o.fold_constants = false;
  o.fuse = false;
  return backend.compile_with_weights(compile::CompilePipeline(backend, o).run(g).lir,
                                      std::move(weights));
}

/// max |exe(x) - reference(x)| relative to the largest reference value.
double relative_error(compile::Executable& exe, const ir::Graph& g, const Tensor& x,
                      const ir::reference::TensorMap& params) {
  exe.set_input("x", x);
  exe.execute();
  auto want = ir::reference::evaluate(g, {{"x", x}}, params);
  double peak = 0;
  for (std::int64_t i = 0; i < want[0].numel(); ++i)
    peak = std::max(peak, std::fabs(want[0].get_f64(i)));
  return ir::max_abs_diff(exe.output(0), want[0]) / peak;
}

TEST(CpuExecutable, WeightsAreSharedAndPackedCopiesReplaceThePlainOnes) {
  // Two executables of different shapes read one region: the GEMM weight w is held once, packed
  // (its plain bytes are given back), and the norm's gain and the bias stay plain.
  cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn});
  auto weights = std::make_shared<compile::WeightRegion>();
  ir::Graph g8 = weights_graph(8), g16 = weights_graph(16);
  auto e8 = compile_bound(g8, backend, weights);
  auto e16 = compile_bound(g16, backend, weights);
  EXPECT_FALSE(weights->plain_held("w"));
  EXPECT_TRUE(weights->plain_held("b"));
  EXPECT_TRUE(weights->plain_held("g"));
  EXPECT_EQ(weights->derived("w").size(), 1u); // one packed copy for both shapes
  EXPECT_EQ(weights->plain_bytes(), 2 * 96 * 4);
  ir::reference::TensorMap params{
      {"w", iota({96, 64}, 0.02)}, {"b", iota({96}, 0.1)}, {"g", iota({96}, 0.05)}};
  for (const auto& [name, value] : params)
    e8->set_param(name, value); // through one executable, seen by both
  EXPECT_FALSE(weights->plain_held("w"));
  EXPECT_LE(relative_error(*e8, g8, iota({8, 64}), params), 1e-5);
  EXPECT_LE(relative_error(*e16, g16, iota({16, 64}, 0.3), params), 1e-5);
  // A new weight value reaches both (a stale packed copy would be off by O(1)).
  params["w"] = iota({96, 64}, -0.03);
  weights->write("w", params["w"]);
  EXPECT_LE(relative_error(*e8, g8, iota({8, 64}), params), 1e-5);
  EXPECT_LE(relative_error(*e16, g16, iota({16, 64}, 0.3), params), 1e-5);
  // OpenBLAS reads the transposed weight from a [K, N] copy too (on AVX2 the very copy oneDNN
  // reads): the plain bytes stay given back.
  cpu::CpuBackend blas(cpu::CpuOptions{cpu::GemmProvider::openblas, 1});
  auto eb = compile_bound(g8, blas, weights);
  EXPECT_FALSE(weights->plain_held("w"));
  EXPECT_LE(relative_error(*eb, g8, iota({8, 64}), params), 1e-5);
  // An executable that reads w plainly gets its plain bytes restored from the copy.
  ir::Graph plain;
  {
    ir::Builder b(plain);
    auto w = b.param("w", Shape::of({96, 64}));
    b.output(b.add(w, w));
  }
  auto ep = compile_bound(plain, backend, weights);
  EXPECT_TRUE(weights->plain_held("w"));
  ep->execute();
  Tensor twice(params["w"].shape());
  for (std::int64_t i = 0; i < twice.numel(); ++i)
    twice.set_f64(i, 2 * params["w"].get_f64(i));
  EXPECT_LE(ir::max_abs_diff(ep->output(0), twice), 1e-6);
  // Once it is gone, nothing reads w plainly: the next compile gives the bytes back again.
  ep.reset();
  auto again = compile_bound(g8, backend, weights);
  EXPECT_FALSE(weights->plain_held("w"));
  EXPECT_LE(relative_error(*again, g8, iota({8, 64}), params), 1e-5);
}

TEST(CpuExecutable, CompileBreakdownNamesEveryPhaseAndAddsUp) {
  // The phases are disjoint parts of the backend compile. Weight preparation fills the copies of
  // weights that hold a value: w's only once it is written (or at compile when written before).
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({16, 64}));
  auto w = b.param("w", Shape::of({96, 64}));
  b.output(b.matmul(b.matmul(x, w, false, true), b.constant(iota({96, 32}, 0.01)), false, false));
  cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn});
  auto exe = compile_graph(g, backend);
  const cpu::CompileBreakdown cb = cpu::compile_breakdown(*exe);
  EXPECT_GT(cb.total_ms, 0);
  EXPECT_GT(cb.primitives_ms, 0); // two oneDNN matmuls
  EXPECT_GE(cb.weights_ms, 0);    // w's packed copy is made, not filled
  EXPECT_EQ(cb.measure_ms, 0);    // --gemm onednn times no candidates
  EXPECT_GE(cb.lower_ms, 0);
  EXPECT_LE(cb.lower_ms + cb.primitives_ms + cb.weights_ms + cb.measure_ms, cb.total_ms + 1e-6);
  // Writing w fills its packed copy, once, and the process-wide totals count it. The compile
  // filled only the Constant's copy (where it has one: on AVX2 oneDNN reads it as it lies), not
  // w's, which has no value yet: the two fills are every copy the executable reads, each once.
  const cpu::WeightPreparation before = cpu::weight_preparation();
  exe->set_param("w", iota({96, 64}, 0.02));
  const cpu::WeightPreparation after = cpu::weight_preparation();
  EXPECT_GE(after.bytes - before.bytes, 96 * 64 * 4);
  EXPECT_EQ(cb.weight_bytes + (after.bytes - before.bytes), cb.copy_bytes);
  EXPECT_GT(after.ms, before.ms);
  // Compiled against weights already written, the copy is filled at compile time instead.
  auto weights = std::make_shared<compile::WeightRegion>();
  weights->write("w", iota({96, 64}, 0.02));
  weights->write("b", iota({96}, 0.1));
  weights->write("g", iota({96}, 0.05));
  auto loaded = compile_bound(weights_graph(8), backend, weights);
  const cpu::CompileBreakdown lb = cpu::compile_breakdown(*loaded);
  EXPECT_GE(lb.weight_bytes, 96 * 64 * 4);
  EXPECT_GT(lb.weights_ms, 0);
  EXPECT_LE(lb.lower_ms + lb.primitives_ms + lb.weights_ms + lb.measure_ms, lb.total_ms + 1e-6);
  EXPECT_LE(relative_error(
                *loaded, weights_graph(8), iota({8, 64}),
                {{"w", iota({96, 64}, 0.02)}, {"b", iota({96}, 0.1)}, {"g", iota({96}, 0.05)}}),
            1e-5);
}

TEST(CpuExecutable, ExecutablesOfOneRegionRunConcurrently) {
  // Each executable has its own arena; the weights are shared. Four threads, two shapes, the
  // serial results bit for bit.
  cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn, 1});
  auto weights = std::make_shared<compile::WeightRegion>();
  std::vector<ir::Graph> graphs{weights_graph(8), weights_graph(16)};
  weights->write("w", iota({96, 64}, 0.02));
  weights->write("b", iota({96}, 0.1));
  weights->write("g", iota({96}, 0.05));
  std::vector<Tensor> xs{iota({8, 64}), iota({16, 64}, 0.3)}, serial;
  std::vector<ir::Module> lirs;
  for (const ir::Graph& g : graphs)
    lirs.push_back(compile::CompilePipeline(backend).run(g).lir);
  for (int s = 0; s < 2; ++s) {
    auto e = backend.compile_with_weights(lirs[static_cast<std::size_t>(s)], weights);
    e->set_input("x", xs[static_cast<std::size_t>(s)]);
    e->execute();
    serial.push_back(e->output(0));
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto s = static_cast<std::size_t>(t % 2);
      auto e = backend.compile_with_weights(lirs[s], weights); // concurrently with the others
      e->set_input("x", xs[s]);
      for (int i = 0; i < 100; ++i) {
        e->execute();
        if (!e->output(0).identical(serial[s]))
          ++mismatches;
      }
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(CpuExecutable, KernelTimingsCountEveryRecordAndItsWork) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({4, 6}));
  auto w = b.param("w", Shape::of({5, 6}));
  b.output(b.exp(b.matmul(x, w, false, true))); // [4, 5]: 2 * 4 * 5 * 6 flops, then exp
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  exe->set_input("x", iota({4, 6}));
  exe->set_param("w", iota({5, 6}, 0.05));
  exe->execute(); // not profiled
  cpu::set_kernel_profiling(*exe, true);
  for (int i = 0; i < 3; ++i)
    exe->execute();
  compile::KernelTimings t = cpu::kernel_timings(*exe);
  EXPECT_EQ(t.runs, 3);
  ASSERT_EQ(t.kernels.size(), 2u) << cpu::kernel_listing(*exe);
  EXPECT_EQ(t.kernels[0].op, "matmul"); // execution order
  EXPECT_DOUBLE_EQ(t.kernels[0].flops, 2.0 * 4 * 5 * 6);
  EXPECT_DOUBLE_EQ(t.kernels[0].bytes, 4.0 * (4 * 6 + 5 * 6 + 4 * 5));
  EXPECT_FALSE(t.kernels[0].provider.empty());
  EXPECT_EQ(t.kernels[1].op, "exp");
  EXPECT_DOUBLE_EQ(t.kernels[1].flops, 0.0);
  EXPECT_DOUBLE_EQ(t.kernels[1].bytes, 4.0 * (4 * 5 + 4 * 5));
  for (const auto& k : t.kernels) {
    EXPECT_GT(k.median_ms, 0.0);
    EXPECT_GE(k.total_ms, k.median_ms);
  }
  // Stopping clears the totals; the string form still works.
  cpu::set_kernel_profiling(*exe, false);
  exe->execute();
  t = cpu::kernel_timings(*exe);
  EXPECT_EQ(t.runs, 0);
  EXPECT_DOUBLE_EQ(t.kernels[0].total_ms, 0.0);
  EXPECT_NE(cpu::kernel_profile(*exe).find("matmul"), std::string::npos);
}

/// gelu(x [16, 32] · w [64, 32]^T + b) through the pipeline with every fusion on.
compile::CompileResult dense_gelu_compiled(const cpu::CpuBackend& backend, ir::Graph& g) {
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({16, 32}));
  auto w = b.param("w", Shape::of({64, 32}));
  auto bias = b.param("b", Shape::of({64}));
  b.output(b.gelu(b.add(b.matmul(x, w, false, true), bias)));
  compile::CompileOptions o;
  o.fold_constants = false;
  return compile::CompilePipeline(backend, o).run(g);
}

TEST(CpuExecutable, TheIoGateKnobsDecideTheEpilogue) {
  // The checked-in knobs: the GELU goes into the GEMM's epilogue.
  {
    cpu::CpuBackend backend;
    ASSERT_NE(backend.io_fusion_gate(), nullptr);
    ir::Graph g;
    auto r = dense_gelu_compiled(backend, g);
    EXPECT_EQ(r.fusion.applied["matmul_bias_act"], 1) << r.fusion.str();
  }
  // Knobs that make the fused epilogue slower than the one-op kernel: bias fused, GELU alone,
  // reported as not_profitable, and the values still match the reference.
  cpu::CpuOptions o;
  fusion::IoFusionGate slow = cpu::cpu_io_gate_defaults();
  slow.ns_per_element["matmul_bias_act.gelu"] = 1e4;
  o.io_gate = slow;
  cpu::CpuBackend backend(o);
  ir::Graph g;
  auto r = dense_gelu_compiled(backend, g);
  EXPECT_EQ(r.fusion.applied.count("matmul_bias_act"), 0u) << r.fusion.str();
  EXPECT_EQ(r.fusion.applied["matmul_bias"], 1) << r.fusion.str();
  EXPECT_NE(r.fusion.str().find("not_profitable"), std::string::npos) << r.fusion.str();
  auto exe = backend.compile(r.lir);
  Tensor xv = iota({16, 32}), wv = iota({64, 32}, 0.05), bv = iota({64}, 0.2);
  exe->set_input("x", xv);
  exe->set_param("w", wv);
  exe->set_param("b", bv);
  exe->execute();
  EXPECT_NE(cpu::kernel_listing(*exe).find("gelu"), std::string::npos);
  auto want = ir::reference::evaluate(g, {{"x", xv}}, {{"w", wv}, {"b", bv}});
  EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-5);
  // The gate off: every legal fusion.
  o.use_io_gate = false;
  EXPECT_EQ(cpu::CpuBackend(o).io_fusion_gate(), nullptr);
}

TEST(CpuExecutable, TheIoGateKnobsDecideTheRegion) {
  // relu(tanh(x * s) - x) on [32, 64]: one elementwise region under the checked-in knobs (the
  // region loop's tanh is faster than the one-op kernel's; regions are claimed by default).
  auto build = [](ir::Graph& g) {
    ir::Builder b(g);
    auto x = b.input("x", Shape::of({32, 64}));
    auto s = b.param("s", Shape::of({64}));
    b.output(b.relu(b.sub(b.tanh(b.mul(x, s)), x)));
  };
  compile::CompileOptions co;
  co.fold_constants = false;
  {
    cpu::CpuBackend backend;
    ir::Graph g;
    build(g);
    auto r = compile::CompilePipeline(backend, co).run(g);
    EXPECT_EQ(r.fusion.applied["elementwise_region"], 1) << r.fusion.str();
  }
  // Knobs whose region loop runs a tanh far slower than the one-op kernel: four kernels, the
  // region reported as not_profitable, the same values.
  cpu::CpuOptions o;
  fusion::IoFusionGate slow = cpu::cpu_io_gate_defaults();
  slow.ns_per_element["elementwise_region.tanh"] = 1e4;
  o.io_gate = slow;
  cpu::CpuBackend backend(o);
  ir::Graph g;
  build(g);
  auto r = compile::CompilePipeline(backend, co).run(g);
  EXPECT_EQ(r.fusion.applied.count("elementwise_region"), 0u) << r.fusion.str();
  EXPECT_NE(r.fusion.str().find("missed  elementwise_region"), std::string::npos) << r.fusion.str();
  EXPECT_NE(r.fusion.str().find("not_profitable"), std::string::npos) << r.fusion.str();
  EXPECT_EQ(r.kernels_after_fusion, 4);
  auto exe = backend.compile(r.lir);
  Tensor xv = iota({32, 64}), sv = iota({64}, 0.2);
  exe->set_input("x", xv);
  exe->set_param("s", sv);
  exe->execute();
  auto want = ir::reference::evaluate(g, {{"x", xv}}, {{"s", sv}});
  EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-6);
}

TEST(CpuExecutable, CalibrationMeasuresEveryKnob) {
  cpu::CpuOptions o;
  o.num_threads = 1;
  o.gemm = cpu::GemmProvider::onednn; // no compile-time GEMM timing in a test
  const fusion::IoFusionGate m = cpu::calibrate_cpu_io_gate(o);
  EXPECT_GT(m.dispatch_ns, 0.0);
  EXPECT_GT(m.memory_bytes_per_ns, 0.0);
  std::vector<std::string> keys{"elementwise_region", "elementwise_region.neg"};
  // The activations, and the ops of ReLU's backward (compare, where) and of optimizer updates.
  for (const char* op :
       {"relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "erf", "compare", "where",
        "cast", "expand", "add", "sub", "mul", "div", "maximum", "sqrt", "swiglu"}) {
    keys.push_back(op);
    keys.push_back("elementwise_region." + std::string(op));
  }
  for (const char* act : {"relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"})
    keys.push_back("matmul_bias_act." + std::string(act));
  for (const std::string& k : keys) {
    ASSERT_TRUE(m.ns_per_element.count(k)) << k;
    EXPECT_GE(m.ns_per_element.at(k), 0.0) << k;
  }
  // Every op is priced on both sides: as a kernel of its own and as a region instruction.
  const std::string region = "elementwise_region.";
  for (const auto& [k, v] : m.ns_per_element) {
    if (k.rfind("matmul_bias_act.", 0) == 0 || k == "elementwise_region")
      continue;
    const bool in_region = k.rfind(region, 0) == 0;
    const std::string other = in_region ? k.substr(region.size()) : region + k;
    EXPECT_TRUE(m.ns_per_element.count(other)) << k << " without " << other;
  }
  // The defaults price the same keys, and a transcendental costs more than a cheap instruction
  // in the region loop (exp against abs / neg), on any machine.
  const fusion::IoFusionGate d = cpu::cpu_io_gate_defaults();
  for (const auto& [k, v] : m.ns_per_element)
    EXPECT_TRUE(d.ns_per_element.count(k)) << k;
  EXPECT_EQ(d.ns_per_element.size(), m.ns_per_element.size());
  EXPECT_GT(d.ns_per_element.at("elementwise_region.exp"),
            d.ns_per_element.at("elementwise_region"));
}

TEST(CpuExecutable, ViewsGetNoKernel) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({2, 3, 4}));
  auto e = b.exp(x);
  auto r = b.reshape(e, {6, 4}); // a view: aliased, no kernel
  auto n = b.narrow(r, 0, 2, 3); // axis-0 narrow: a view too
  b.output(b.mul(n, n));
  b.output(b.reshape(n, {12})); // a view that is an output: its root becomes one
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  std::string listing = cpu::kernel_listing(*exe);
  EXPECT_EQ(listing.find("reshape"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("narrow"), std::string::npos) << listing;
  EXPECT_NE(listing.find("exp"), std::string::npos) << listing;
  int kernels = 0;
  for (char ch : listing)
    kernels += ch == '\n';
  EXPECT_EQ(kernels, 2) << listing; // exp and mul
  Tensor xv = iota({2, 3, 4});
  exe->set_input("x", xv);
  exe->execute();
  auto want = ir::reference::evaluate(g, {{"x", xv}});
  EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-6);
  EXPECT_LE(ir::max_abs_diff(exe->output(1), want[1]), 1e-6);
}

TEST(CpuExecutable, InputTypesAreCheckedExactly) {
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.neg(b.input("x", Shape::of({2, 3}))));
  b.param("unused_w", Shape::of({2}, DType::f64));
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  std::string e = error_of([&] { exe->set_input("x", Tensor(Shape::of({2, 4}))); });
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 3] f32"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 4] f32"), std::string::npos) << e;
  e = error_of([&] { exe->set_input("x", Tensor(Shape::of({2, 3}, DType::f64))); });
  EXPECT_NE(e.find("f64"), std::string::npos) << e;
  e = error_of([&] { exe->set_input("y", Tensor(Shape::of({2, 3}))); });
  EXPECT_NE(e.find("no input named 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("x"), std::string::npos) << e;
  e = error_of([&] { exe->set_param("x", Tensor(Shape::of({2, 3}))); });
  EXPECT_NE(e.find("no param named 'x'"), std::string::npos) << e;
  e = error_of([&] { exe->execute(); });
  EXPECT_NE(e.find("never set"), std::string::npos) << e;
  exe->set_input("x", iota({2, 3}));
  e = error_of([&] { exe->execute(); });
  EXPECT_NE(e.find("'unused_w'"), std::string::npos) << e;
  exe->set_param("unused_w", Tensor(Shape::of({2}, DType::f64)));
  exe->execute();
  e = error_of([&] { (void)exe->output(1); });
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(CpuExecutable, RunTimeErrorsNameTheNode) {
  ir::Graph g;
  ir::Builder b(g);
  auto table = b.input("table", Shape::of({4, 2}));
  auto idx = b.input("idx", Shape::of({3}, DType::i64));
  b.output(b.gather(table, idx, 0));
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  exe->set_input("table", iota({4, 2}));
  exe->set_input("idx", Tensor::from<std::int64_t>({3}, {0, 7, 1}));
  std::string e = error_of([&] { exe->execute(); });
  EXPECT_NE(e.find("gather"), std::string::npos) << e;
  EXPECT_NE(e.find("index 7"), std::string::npos) << e;

  ir::Graph g2;
  ir::Builder b2(g2);
  b2.output(
      b2.div(b2.input("a", Shape::of({3}, DType::i32)), b2.input("b", Shape::of({3}, DType::i32))));
  auto exe2 = compile_graph(g2, backend);
  exe2->set_input("a", Tensor::from<std::int32_t>({3}, {1, 2, 3}));
  exe2->set_input("b", Tensor::from<std::int32_t>({3}, {1, 0, 3}));
  e = error_of([&] { exe2->execute(); });
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
}

TEST(CpuExecutable, CompileRejectsWhatItCannotRun) {
  cpu::CpuBackend backend;
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({2, 3, 4}));
  ir::DotGeneralAttrs dg;
  dg.lhs_contracting = {2};
  dg.rhs_contracting = {2};
  b.output(b.dot_general(x, x, dg));
  // MIR module: not LIR.
  std::string e = error_of([&] { (void)backend.compile(ir::Module::mir(g)); });
  EXPECT_NE(e.find("LIR"), std::string::npos) << e;
  // An LIR that still holds an unclaimed op (no legalisation).
  compile::PlanOptions po;
  auto lir = ir::Module::lir(g, compile::plan_memory(g, po));
  e = error_of([&] { (void)backend.compile(lir); });
  EXPECT_NE(e.find("dot_general"), std::string::npos) << e;
  EXPECT_NE(e.find("does not claim"), std::string::npos) << e;
}

TEST(CpuExecutable, ScratchMustBePlanned) {
  cpu::CpuBackend backend;
  ir::Graph g;
  ir::Builder b(g);
  ir::AttentionAttrs a;
  a.num_heads = 2;
  a.num_kv_heads = 2;
  auto q = b.input("q", Shape::of({1, 5, 2, 8}));
  b.output(b.attention(q, q, q, a));
  EXPECT_GT(backend.scratch_bytes(g, ir::NodeId(1)), 0);
  compile::PlanOptions po; // no scratch_bytes: the attention tiles are missing
  std::string e =
      error_of([&] { (void)backend.compile(ir::Module::lir(g, compile::plan_memory(g, po))); });
  EXPECT_NE(e.find("scratch"), std::string::npos) << e;
  EXPECT_NE(e.find("attention"), std::string::npos) << e;
}

TEST(CpuExecutable, ExecuteDoesNotAllocate) {
  // Our own kernels only (oneDNN's execute builds small argument maps inside the library).
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({2, 12, 4, 16}));
  auto gamma = b.param("g", Shape::of({16}));
  auto n = b.rms_norm(x, gamma, 1e-6);
  ir::RopeAttrs ra;
  auto r = b.rope(n, ra);
  ir::AttentionAttrs aa;
  aa.num_heads = 4;
  aa.num_kv_heads = 4;
  aa.mask = ir::MaskKind::causal;
  auto att = b.attention(r, r, x, aa);
  auto t = b.transpose(att, {0, 2, 1, 3});
  auto s = b.sum(b.add(t, t), {-1});
  auto idx = b.input("idx", Shape::of({3}, DType::i64));
  b.output(b.gather(s, idx, 1));
  cpu::CpuBackend backend;
  auto exe = compile_graph(g, backend);
  exe->set_input("x", iota({2, 12, 4, 16}));
  exe->set_param("g", iota({16}, 0.2));
  exe->set_input("idx", Tensor::from<std::int64_t>({3}, {0, 3, 1}));
  exe->execute(); // warm up (TBB's pool starts its threads)
  // Rounds of two runs each; the fewest allocations of a round must be none. A kernel that
  // allocates does so in every round; TBB allocates once for each worker that joins the arena
  // for the first time, which on a 16-core host can still happen after the warm-up run (it did
  // once on a Sapphire Rapids host: 1 allocation in the only round).
  std::int64_t fewest = -1;
  for (int round = 0; round < 5 && fewest != 0; ++round) {
    g_allocations = 0;
    g_counting = true;
    exe->execute();
    exe->execute();
    g_counting = false;
    const std::int64_t allocations = g_allocations.load();
    fewest = fewest < 0 ? allocations : std::min(fewest, allocations);
  }
  EXPECT_EQ(fewest, 0) << cpu::kernel_listing(*exe);
}

TEST(CpuExecutable, ThreadCountsAgree) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", Shape::of({3, 40, 2, 32}));
  ir::AttentionAttrs a;
  a.num_heads = 2;
  a.num_kv_heads = 1;
  a.mask = ir::MaskKind::causal;
  auto kv = b.narrow(x, 2, 0, 1);
  b.output(b.softmax(b.attention(x, kv, kv, a), -1));
  Tensor xv = iota({3, 40, 2, 32});
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn, threads});
    auto exe = compile_graph(g, backend);
    exe->set_input("x", xv);
    exe->execute();
    outs.push_back(exe->output(0));
  }
  // Tasks are split differently but each task computes its rows the same way.
  EXPECT_TRUE(outs[0].identical(outs[1]));
}

} // namespace
