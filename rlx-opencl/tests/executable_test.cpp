// executable_test.cpp: the OpenCL executable below the conformance table: the arena split, the
// program cache, I/O errors, run-time index errors, and a clear error for a missing device.
#include "executable.hpp"
#include "lower.hpp"
#include "program_cache.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/opencl/backend.hpp"
#include "runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

namespace rlx::opencl {
namespace {

using Extents = std::vector<std::pair<std::int64_t, std::int64_t>>;

TEST(SplitArena, OneChunkWhenItFits) {
  EXPECT_EQ(split_arena({{0, 100}, {128, 300}}, 1000), (Extents{{0, 300}}));
}

TEST(SplitArena, SplitsBetweenGroupsOfOverlappingBuffers) {
  // [0,100) and [50,200) overlap (one group); [256,400) and [512,600) are groups of their own.
  EXPECT_EQ(split_arena({{512, 600}, {0, 100}, {50, 200}, {256, 400}}, 256),
            (Extents{{0, 200}, {256, 400}, {512, 600}}));
  EXPECT_EQ(split_arena({{0, 100}, {128, 200}, {256, 300}}, 200), (Extents{{0, 200}, {256, 300}}));
}

TEST(SplitArena, AGroupLargerThanOneAllocationIsAnError) {
  EXPECT_THROW(split_arena({{0, 100}, {50, 300}}, 256), Error);
}

ir::Tensor random_f32(const ir::Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  ir::Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, u(rng));
  return t;
}

/// softmax(relu(x · W + b)) with x [64, 64]: every temporary is 16 KiB.
ir::Graph small_graph() {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({64, 64}));
  auto w = b.param("w", ir::Shape::of({64, 64}));
  auto bias = b.param("b", ir::Shape::of({64}));
  b.output(b.softmax(b.relu(b.add(b.matmul(x, w), bias))));
  return g;
}

std::unique_ptr<compile::Executable> compile_for(const OpenClBackend& be, const ir::Graph& g) {
  compile::CompileResult r = compile::CompilePipeline(be).run(g);
  return be.compile(r.lir);
}

TEST(AttentionChoice, TilesFromSixteenQueryRowsWhereTheyFit) {
  const std::size_t d64 = attention_tile_bytes(64, 64);
  EXPECT_EQ(d64, (16u * 65 + 16u * 128) * 4); // Q tile padded by one float a row, K and V tiles
  EXPECT_TRUE(attention_tiled(AttentionKernel::automatic, 16, d64, 65536));
  EXPECT_TRUE(attention_tiled(AttentionKernel::automatic, 128, d64, 65536));
  EXPECT_FALSE(attention_tiled(AttentionKernel::automatic, 15, d64, 65536));
  EXPECT_FALSE(attention_tiled(AttentionKernel::automatic, 1, d64, 65536));
  // Tiles larger than the device's local memory: the rows kernel, pinned or not.
  const std::size_t d256 = attention_tile_bytes(256, 256);
  EXPECT_FALSE(attention_tiled(AttentionKernel::automatic, 128, d256, 32768));
  EXPECT_FALSE(attention_tiled(AttentionKernel::tiled, 128, d256, 32768));
  EXPECT_TRUE(attention_tiled(AttentionKernel::tiled, 1, d64, 65536));
  EXPECT_FALSE(attention_tiled(AttentionKernel::rows, 128, d64, 65536));
}

TEST(AttentionChoice, TheGpuKernelOnGpuDevicesWhereItFits) {
  const std::size_t d64 = attention_gpu_bytes(64, 64);
  // Q block, K tile and score rows padded by one float, V tile, reduction slots, NaN flags.
  EXPECT_EQ(d64, (8u * 64 + 64u * 65 + 64u * 64 + 8u * 65 + 64u) * 4 + 8u * 4);
  const auto path = [](AttentionKernel k, const char* type, std::int64_t sq, std::int64_t d,
                       std::int64_t local) { return attention_path(k, type, sq, d, d, local); };
  using P = AttentionPath;
  EXPECT_EQ(path(AttentionKernel::automatic, "gpu", 128, 64, 49152), P::gpu);
  EXPECT_EQ(path(AttentionKernel::automatic, "gpu", 1, 64, 49152), P::gpu); // decode steps too
  EXPECT_EQ(path(AttentionKernel::automatic, "cpu", 128, 64, 49152), P::tiled);
  EXPECT_EQ(path(AttentionKernel::automatic, "cpu", 1, 64, 49152), P::rows);
  // D = Dv = 128 needs 70.6 KiB: a 48 KiB GPU falls back to the tiles (24.6 KiB).
  EXPECT_EQ(path(AttentionKernel::automatic, "gpu", 128, 128, 49152), P::tiled);
  EXPECT_EQ(path(AttentionKernel::gpu, "cpu", 3, 64, 49152), P::gpu); // pinned
  EXPECT_EQ(path(AttentionKernel::gpu, "gpu", 3, 128, 49152), P::tiled);
  EXPECT_EQ(path(AttentionKernel::gpu, "gpu", 3, 256, 49152), P::rows);
  EXPECT_EQ(path(AttentionKernel::tiled, "gpu", 128, 64, 49152), P::tiled);
  EXPECT_EQ(path(AttentionKernel::rows, "gpu", 128, 64, 49152), P::rows);
}

TEST(AttentionGpuKernel, NanRowsAndFullyMaskedRowsMatchTheReference) {
  // q [1, 20, 2, 8] against k / v [1, 70, 2, 8] with an additive bias: row 3's bias is -inf for
  // every key (a row of weight 0: the reference gives 0), row 5 of head 1 has a NaN query (the
  // reference gives a NaN row), row 9's bias is -inf for every key of the second tile only.
  // 20 rows are three 8-row blocks (the last partial), 70 keys two 64-key tiles (the last
  // partial). The gpu kernel pinned, the tiles and the rows kernel must all give the reference.
  ir::Graph g;
  ir::Builder b(g);
  auto q = b.input("q", ir::Shape::of({1, 20, 2, 8}));
  auto k = b.input("k", ir::Shape::of({1, 70, 2, 8}));
  auto v = b.input("v", ir::Shape::of({1, 70, 2, 8}));
  auto bias = b.input("bias", ir::Shape::of({1, 2, 20, 70}));
  ir::AttentionAttrs a;
  a.num_heads = 2;
  a.num_kv_heads = 2;
  a.mask = ir::MaskKind::bias;
  b.output(b.op(ir::OpKind::Attention, {q, k, v, bias}, a));
  ir::reference::TensorMap in;
  unsigned seed = 30;
  for (ir::NodeId id : g.inputs()) {
    const std::string& name = g.node(id).attr<ir::LeafAttrs>().name;
    in[name] = random_f32(g.shape(id), seed++);
  }
  ir::Tensor& bt = in["bias"];
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t j = 0; j < 70; ++j) {
      bt.set_f64((h * 20 + 3) * 70 + j, -INFINITY);
      if (j >= 64)
        bt.set_f64((h * 20 + 9) * 70 + j, -INFINITY);
    }
  in["q"].set_f64((5 * 2 + 1) * 8 + 0, NAN);
  const ir::Tensor want = ir::reference::evaluate(g, in, {})[0];
  ASSERT_TRUE(std::isnan(want.get_f64((5 * 2 + 1) * 8 + 3)));
  ASSERT_EQ(want.get_f64((3 * 2 + 0) * 8 + 3), 0.0);
  for (AttentionKernel kind :
       {AttentionKernel::gpu, AttentionKernel::tiled, AttentionKernel::rows}) {
    OpenClOptions o;
    o.attention = kind;
    const OpenClBackend be(o);
    auto exe = compile_for(be, g);
    if (kind == AttentionKernel::gpu) {
      EXPECT_NE(kernel_listing(*exe).find("attention_gpu_f32_k"), std::string::npos);
    }
    for (const auto& [name, t] : in)
      exe->set_input(name, t);
    exe->execute();
    const ir::Tensor got = exe->output(0);
    int bad = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double x = got.get_f64(i), y = want.get_f64(i);
      const bool ok = std::isnan(y) ? std::isnan(x) : std::abs(x - y) <= 1e-5;
      if (!ok && bad++ < 5)
        ADD_FAILURE() << "kernel " << static_cast<int>(kind) << " element " << i << ": " << x
                      << " against " << y;
    }
  }
}

TEST(AttentionGpuKernel, WindowsWiderThanATileInBhsdMatchTheReference) {
  // The conformance table's sliding windows (3, 20) fit in one 64-key tile; here a window of 100
  // and a causal mask span up to three tiles per row, with Sq != Sk (70 queries aligned to the last
  // of 150 keys), bhsd, GQA (4 heads on 2), softcap and scale, and Dv = 37 (lanes own 5 or 4
  // features).
  for (ir::MaskKind mask : {ir::MaskKind::sliding_window, ir::MaskKind::causal}) {
    ir::Graph g;
    ir::Builder b(g);
    auto q = b.input("q", ir::Shape::of({2, 4, 70, 24}));
    auto k = b.input("k", ir::Shape::of({2, 2, 150, 24}));
    auto v = b.input("v", ir::Shape::of({2, 2, 150, 37}));
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 100 : 0;
    a.scale = 0.7;
    a.softcap = 3.0;
    b.output(b.op(ir::OpKind::Attention, {q, k, v}, a));
    ir::reference::TensorMap in;
    unsigned seed = 50;
    for (ir::NodeId id : g.inputs()) {
      const std::string& name = g.node(id).attr<ir::LeafAttrs>().name;
      in[name] = random_f32(g.shape(id), seed++);
    }
    OpenClOptions o;
    o.attention = AttentionKernel::gpu;
    const OpenClBackend be(o);
    auto exe = compile_for(be, g);
    EXPECT_NE(kernel_listing(*exe).find("attention_gpu_f32_k"), std::string::npos);
    for (const auto& [name, t] : in)
      exe->set_input(name, t);
    exe->execute();
    EXPECT_LT(ir::max_abs_diff(exe->output(0), ir::reference::evaluate(g, in, {})[0]), 1e-5)
        << "mask " << static_cast<int>(mask);
  }
}

TEST(AttentionChoice, APrefillRunsTheTilesAndADecodeStepTheRows) {
  // q [1, S, 4, 16], k / v [1, 40, 2, 16] (GQA, causal): 32 query rows take the tiles, 3 the rows.
  auto graph = [](std::int64_t sq) {
    ir::Graph g;
    ir::Builder b(g);
    auto q = b.input("q", ir::Shape::of({1, sq, 4, 16}));
    auto k = b.input("k", ir::Shape::of({1, 40, 2, 16}));
    auto v = b.input("v", ir::Shape::of({1, 40, 2, 16}));
    ir::AttentionAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::causal;
    b.output(b.op(ir::OpKind::Attention, {q, k, v}, a));
    return g;
  };
  const OpenClBackend be;
  for (std::int64_t sq : {32, 3}) {
    const ir::Graph g = graph(sq);
    auto exe = compile_for(be, g);
    const std::string l = kernel_listing(*exe);
    EXPECT_EQ(l.find("attention_tiled_f32_k") != std::string::npos, sq == 32) << l;
    ir::reference::TensorMap in;
    unsigned seed = 10;
    for (ir::NodeId id : g.inputs()) {
      const std::string& name = g.node(id).attr<ir::LeafAttrs>().name;
      in[name] = random_f32(g.shape(id), seed++);
      exe->set_input(name, in[name]);
    }
    exe->execute();
    EXPECT_LT(ir::max_abs_diff(exe->output(0), ir::reference::evaluate(g, in, {})[0]), 1e-5);
  }
}

TEST(Executable, ArenaLargerThanOneAllocationSplitsIntoBuffers) {
  const ir::Graph g = small_graph();
  ir::reference::TensorMap in{{"x", random_f32(ir::Shape::of({64, 64}), 1)}};
  ir::reference::TensorMap params{{"w", random_f32(ir::Shape::of({64, 64}), 2)},
                                  {"b", random_f32(ir::Shape::of({64}), 3)}};
  const ir::Tensor want = ir::reference::evaluate(g, in, params)[0];
  for (std::int64_t limit : {std::int64_t{0}, std::int64_t{20000}}) {
    OpenClOptions o;
    o.max_buffer_bytes = limit;
    OpenClBackend be(o);
    auto exe = compile_for(be, g);
    if (limit == 0)
      EXPECT_EQ(arena_buffer_count(*exe), 1);
    else
      EXPECT_GE(arena_buffer_count(*exe), 3) << "16 KiB buffers under a 20000-byte limit";
    exe->set_input("x", in["x"]);
    exe->set_param("w", params["w"]);
    exe->set_param("b", params["b"]);
    exe->execute();
    EXPECT_LT(ir::max_abs_diff(exe->output(0), want), 1e-6) << "limit " << limit;
  }
}

TEST(Executable, ListingNamesEveryKernel) {
  // The bias and the relu fuse into the GEMM's epilogue (MatMulBiasAct): no separate launches.
  OpenClOptions o;
  o.gemm = GemmKernel::tiled;
  OpenClBackend be(o);
  auto exe = compile_for(be, small_graph());
  const std::string l = kernel_listing(*exe);
  for (const char* k : {"matmul_bias_act [matmul_f32_k]", "softmax_f32_k"})
    EXPECT_NE(l.find(k), std::string::npos) << l;
  for (const char* k : {"binary_f32_k", "unary_f32_k"})
    EXPECT_EQ(l.find(k), std::string::npos) << l;
  // The automatic choice runs this 64-row product on CLBlast (then the epilogue in place).
  if (have_clblast()) {
    OpenClBackend automatic;
    const std::string la = kernel_listing(*compile_for(automatic, small_graph()));
    for (const char* k : {"[clblast sgemm 64x64x64]", "[epilogue_f32_k]"})
      EXPECT_NE(la.find(k), std::string::npos) << la;
  }
}

TEST(Executable, BatchOfOneIsOneLibraryProduct) {
  // x [1, 64, 32] · W [32, 48] (BERT's activations at batch 1): the batch dim of size 1 merges
  // into the rows, so the product is one unbatched SGEMM that CLBlast takes (it ran on the tiled
  // kernel's batched path before, 3-4x slower than CLBlast on an H200).
  if (!have_clblast())
    GTEST_SKIP() << "rlx-opencl was built without CLBlast";
  ir::Graph g;
  ir::Builder b(g);
  b.output(
      b.matmul(b.input("x", ir::Shape::of({1, 64, 32})), b.param("w", ir::Shape::of({32, 48}))));
  OpenClOptions o;
  o.gemm = GemmKernel::clblast;
  OpenClBackend be(o);
  auto exe = compile_for(be, g);
  const std::string l = kernel_listing(*exe);
  EXPECT_NE(l.find("[clblast sgemm 64x48x32]"), std::string::npos) << l;
  ir::reference::TensorMap in{{"x", random_f32(ir::Shape::of({1, 64, 32}), 1)}},
      params{{"w", random_f32(ir::Shape::of({32, 48}), 2)}};
  exe->set_input("x", in["x"]);
  exe->set_param("w", params["w"]);
  exe->execute();
  EXPECT_LT(ir::max_abs_diff(exe->output(0), ir::reference::evaluate(g, in, params)[0]), 1e-5);
}

TEST(Profile, TimesEveryNodeOfTheProfiledRunsOnly) {
  OpenClBackend be; // automatic: CLBlast (then the epilogue) where built with it, else ours
  const ir::Graph g = small_graph();
  auto exe = compile_for(be, g);
  ir::reference::TensorMap in{{"x", random_f32(ir::Shape::of({64, 64}), 1)}};
  ir::reference::TensorMap params{{"w", random_f32(ir::Shape::of({64, 64}), 2)},
                                  {"b", random_f32(ir::Shape::of({64}), 3)}};
  exe->set_input("x", in["x"]);
  for (const auto& [name, t] : params)
    exe->set_param(name, t);
  exe->execute(); // not profiled
  EXPECT_EQ(kernel_timings(*exe).runs, 0);
  EXPECT_TRUE(kernel_timings(*exe).kernels.empty());
  set_kernel_profiling(*exe, true);
  for (int i = 0; i < 3; ++i)
    exe->execute();
  const ir::Tensor want = ir::reference::evaluate(g, in, params)[0];
  EXPECT_LT(ir::max_abs_diff(exe->output(0), want), 1e-5); // the profiling queue computes too
  const compile::KernelTimings kt = kernel_timings(*exe);
  EXPECT_EQ(kt.runs, 3);
  ASSERT_EQ(kt.kernels.size(), 2u); // matmul_bias_act, softmax
  const compile::KernelTiming& mm = kt.kernels[0];
  const compile::KernelTiming& sm = kt.kernels[1];
  EXPECT_EQ(mm.op, "matmul_bias_act");
  EXPECT_EQ(sm.op, "softmax");
  EXPECT_EQ(sm.provider, "softmax_f32_k");
  if (have_clblast()) { // a library call (timed between markers) and its epilogue launch
    EXPECT_EQ(mm.provider, "clblast_sgemm");
    EXPECT_EQ(mm.note, "+ epilogue_f32_k");
  }
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 64 * 64 * 64);
  EXPECT_EQ(sm.flops, 0.0);                      // GB/s for the rest
  EXPECT_DOUBLE_EQ(sm.bytes, 2.0 * 64 * 64 * 4); // its operand and result
  for (const compile::KernelTiming& k : kt.kernels) {
    EXPECT_GT(k.median_ms, 0.0) << k.node;
    EXPECT_GE(k.total_ms, k.median_ms) << k.node;
  }
  set_kernel_profiling(*exe, false); // clears, and later runs are not timed
  exe->execute();
  EXPECT_EQ(kernel_timings(*exe).runs, 0);
}

TEST(Executable, IoErrorsAreClear) {
  OpenClBackend be;
  auto exe = compile_for(be, small_graph());
  EXPECT_THROW(exe->execute(), Error); // nothing set
  EXPECT_THROW(exe->set_input("y", ir::Tensor(ir::Shape::of({64, 64}))), Error);
  EXPECT_THROW(exe->set_input("x", ir::Tensor(ir::Shape::of({64, 63}))), Error);
  EXPECT_THROW(exe->set_param("w", ir::Tensor(ir::Shape::of({64, 64}, ir::DType::f64))), Error);
  EXPECT_THROW((void)exe->output(1), Error);
}

TEST(Executable, GatherIndexOutOfRangeIsAnErrorNamingTheNode) {
  ir::Graph g;
  ir::Builder b(g);
  auto table = b.param("table", ir::Shape::of({5, 3}));
  auto idx = b.input("idx", ir::Shape::of({4}, ir::DType::i64));
  b.output(b.gather(table, idx));
  OpenClBackend be;
  auto exe = compile_for(be, g);
  exe->set_param("table", random_f32(ir::Shape::of({5, 3}), 4));
  ir::Tensor i(ir::Shape::of({4}, ir::DType::i64));
  for (std::int64_t k = 0; k < 4; ++k)
    i.set_i64(k, k);
  exe->set_input("idx", i);
  EXPECT_NO_THROW(exe->execute());
  i.set_i64(2, 5);
  exe->set_input("idx", i);
  try {
    exe->execute();
    FAIL() << "index 5 of 5 rows did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
  }
  i.set_i64(2, -1);
  exe->set_input("idx", i);
  EXPECT_THROW(exe->execute(), Error);
  i.set_i64(2, 4); // and the executable recovers
  exe->set_input("idx", i);
  EXPECT_NO_THROW(exe->execute());
}

TEST(Devices, AMissingDeviceIsAClearError) {
  try {
    OpenClOptions o;
    o.device = 99;
    OpenClBackend be(o);
    FAIL() << "device 99 opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opencl:99"), std::string::npos) << e.what();
  }
}

TEST(Devices, ListsTheDevices) {
  const auto devices = list_devices();
  ASSERT_FALSE(devices.empty());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i].index, static_cast<int>(i));
    EXPECT_FALSE(devices[i].name.empty());
    EXPECT_GT(devices[i].global_memory, 0);
    EXPECT_GT(devices[i].compute_units, 0);
  }
}

TEST(ProgramCache, TheSecondBuildLoadsTheBinaryFromDisk) {
  auto found = enumerate_devices(nullptr);
  ASSERT_FALSE(found.empty());
  cl_int err = CL_SUCCESS;
  Context ctx(clCreateContext(nullptr, 1, &found[0].id, nullptr, nullptr, &err));
  ASSERT_EQ(err, CL_SUCCESS);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("rlx-opencl-cache-test-" +
                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                    std::to_string(std::random_device{}()));
  const std::string src = "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2; }";
  ProgramOrigin origin{};
  Program p1 = build_program(ctx.get(), found[0], src, "", dir.string(), &origin);
  EXPECT_EQ(origin, ProgramOrigin::source);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files += e.path().extension() == ".bin" ? 1 : 0;
  EXPECT_EQ(files, 1u);
  Program p2 = build_program(ctx.get(), found[0], src, "", dir.string(), &origin);
  EXPECT_EQ(origin, ProgramOrigin::disk_cache);
  // Another source is another key.
  Program p3 = build_program(ctx.get(), found[0], src + "\n", "", dir.string(), &origin);
  EXPECT_EQ(origin, ProgramOrigin::source);
  std::filesystem::remove_all(dir);
}

TEST(ProgramCache, ABrokenProgramReportsTheBuildLog) {
  auto found = enumerate_devices(nullptr);
  ASSERT_FALSE(found.empty());
  cl_int err = CL_SUCCESS;
  Context ctx(clCreateContext(nullptr, 1, &found[0].id, nullptr, nullptr, &err));
  ASSERT_EQ(err, CL_SUCCESS);
  EXPECT_THROW(build_program(ctx.get(), found[0], "__kernel void f() { nope; }", "", "", nullptr),
               Error);
}

TEST(ProgramCache, KeyDependsOnDeviceDriverOptionsAndSource) {
  DeviceInfo d;
  d.name = "a";
  d.driver = "1";
  const std::string k = program_cache_key(d, "-O", "src");
  EXPECT_NE(k, program_cache_key(d, "-O", "src2"));
  EXPECT_NE(k, program_cache_key(d, "", "src"));
  DeviceInfo d2 = d;
  d2.driver = "2";
  EXPECT_NE(k, program_cache_key(d2, "-O", "src"));
  d2 = d;
  d2.name = "b";
  EXPECT_NE(k, program_cache_key(d2, "-O", "src"));
}

/// gelu(x · Wᵀ + b) with x [batch, 8] (batch symbolic), W [6, 8], b [6].
ir::Graph projection_graph() {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape({ir::Dim::sym("batch"), 8}));
  auto w = b.param("w", ir::Shape::of({6, 8}));
  auto bias = b.param("b", ir::Shape::of({6}));
  b.output(b.gelu(b.add(b.matmul(x, w, false, true), bias)));
  return g;
}

TEST(WeightRegion, ShapeVariantsShareOneDeviceCopyAndSeeSetParam) {
  const OpenClBackend be;
  const ir::Graph g = projection_graph();
  auto weights = std::make_shared<compile::WeightRegion>();
  weights->write("w", random_f32(ir::Shape::of({6, 8}), 1));
  weights->write("b", random_f32(ir::Shape::of({6}), 2));
  std::vector<std::unique_ptr<compile::Executable>> exes;
  for (std::int64_t batch : {2, 5}) {
    compile::CompileOptions co;
    co.bindings = {{"batch", batch}};
    exes.push_back(be.compile_with_weights(compile::CompilePipeline(be, co).run(g).lir, weights));
  }
  // One device copy per weight, the same buffer in both executables; not in either arena.
  auto* a = dynamic_cast<OpenClExecutable*>(exes[0].get());
  auto* c = dynamic_cast<OpenClExecutable*>(exes[1].get());
  ASSERT_TRUE(a && c);
  for (const char* name : {"w", "b"}) {
    ASSERT_NE(a->weight_buffer(name), nullptr) << name;
    EXPECT_EQ(a->weight_buffer(name), c->weight_buffer(name)) << name;
    EXPECT_EQ(weights->derived(name).size(), 1u) << name;
  }
  EXPECT_TRUE(exes[0]->reads_weights_in_place());
  auto run_all = [&](unsigned seed) {
    for (std::size_t i = 0; i < exes.size(); ++i) {
      const std::int64_t batch = i == 0 ? 2 : 5;
      const ir::Tensor x = random_f32(ir::Shape::of({batch, 8}), seed + static_cast<unsigned>(i));
      exes[i]->set_input("x", x);
      exes[i]->execute();
      const ir::Tensor ref = ir::reference::evaluate(
          g, {{"x", x}}, {{"w", weights->read("w")}, {"b", weights->read("b")}})[0];
      EXPECT_LT(ir::max_abs_diff(exes[i]->output(0), ref), 1e-5) << "batch " << batch;
    }
  };
  run_all(10);
  // set_param on one variant writes the shared copy: the other sees it too.
  const ir::Tensor w2 = random_f32(ir::Shape::of({6, 8}), 77);
  exes[0]->set_param("w", w2);
  EXPECT_EQ(ir::max_abs_diff(weights->read("w"), w2), 0.0);
  run_all(20);
  // A write to the region (the runtime's path) reaches both as well.
  weights->write("b", random_f32(ir::Shape::of({6}), 78));
  run_all(30);
  // A weight larger than one allocation is a clear error (the arena splits; a weight cannot).
  {
    OpenClOptions small;
    small.max_buffer_bytes = 128; // W is 192 bytes
    const OpenClBackend limited(small);
    compile::CompileOptions co;
    co.bindings = {{"batch", 2}};
    const ir::Module lir = compile::CompilePipeline(limited, co).run(g).lir;
    try {
      limited.compile_with_weights(lir, weights);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the device allows at most 128"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(weights->derived("w").size(), 1u); // nothing registered by the failed compile
  }
  // Releasing every executable leaves the region's value readable.
  exes.clear();
  EXPECT_EQ(ir::max_abs_diff(weights->read("w"), w2), 0.0);
}

} // namespace
} // namespace rlx::opencl
