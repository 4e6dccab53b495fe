// gemm_choice_test.cpp: `--gemm auto` (GemmProvider::automatic): every product shape is timed once
// and the choice is remembered, in the process and in the record file later processes read; a
// forced provider is honoured; whatever is chosen matches the reference interpreter; the listing
// says which provider each GEMM got and why.
#include "fused_run_testing.hpp"
#include "gemm_choice.hpp"

#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

namespace {

using namespace rlx;
using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

using cpu::testing::random_tensor;

/// x [m, k] · w [n, k]ᵀ + bias, GELU (fused into MatMulBiasAct), then a batched product of the
/// result with itself transposed ([2, m/2, n] · [2, m/2, n]ᵀ), then a plain product with a
/// Constant: three product shapes of \p m, \p n, \p k.
Graph three_products(std::int64_t m, std::int64_t n, std::int64_t k) {
  Graph g("gemms");
  Builder b(g);
  NodeId x = b.input("x", Shape({m, k}));
  NodeId w = b.param("w", Shape({n, k}));
  NodeId bias = b.param("bias", Shape({n}));
  NodeId h = b.gelu(b.add(b.matmul(x, w, false, true), bias));
  NodeId h3 = b.reshape(h, {2, m / 2, n});
  NodeId s = b.matmul(h3, h3, false, true); // [2, m/2, m/2]
  NodeId c = b.constant(random_tensor(Shape({m / 2, 24}), 3));
  b.output(b.matmul(s, c));
  return g;
}

struct Outcome {
  std::string listing;
  double err = 0;
};

/// Compiles \p g for \p backend with fusion on, runs it on random values and compares with the
/// reference interpreter (max abs difference over the outputs, relative to their peak).
Outcome run(const Graph& g, const cpu::CpuBackend& backend) {
  ir::reference::TensorMap in, params;
  std::uint64_t seed = 11;
  for (NodeId id : g.inputs())
    in[g.node(id).attr<ir::LeafAttrs>().name] = random_tensor(g.node(id).shape, seed++);
  for (NodeId id : g.params())
    params[g.node(id).attr<ir::LeafAttrs>().name] = random_tensor(g.node(id).shape, seed++);
  const auto want = ir::reference::evaluate(g, in, params);
  auto exe = backend.compile(compile::CompilePipeline(backend).run(g).lir);
  for (const auto& [name, v] : in)
    exe->set_input(name, v);
  for (const auto& [name, v] : params)
    exe->set_param(name, v);
  exe->execute();
  Outcome r;
  r.listing = cpu::kernel_listing(*exe);
  for (std::size_t i = 0; i < want.size(); ++i) {
    double peak = 1e-30;
    for (std::int64_t j = 0; j < want[i].numel(); ++j)
      peak = std::max(peak, std::fabs(want[i].get_f64(j)));
    r.err = std::max(r.err, ir::max_abs_diff(exe->output(i), want[i]) / peak);
  }
  return r;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
    ++n;
  return n;
}

/// Turns the record file off: these tests count this process's measurements.
void record_off() {
  ::setenv("RLX_GEMM_CHOICES", "off", 1);
}

TEST(GemmChoice, ForcedProvidersAreHonouredAndMeasureNothing) {
  record_off();
  const Graph g = three_products(40, 72, 56);
  const auto before = cpu::gemm_choice_stats();
  for (auto p :
       {cpu::GemmProvider::onednn, cpu::GemmProvider::openblas, cpu::GemmProvider::packed}) {
    const cpu::CpuBackend backend(cpu::CpuOptions{p, 2, false, 0});
    Outcome r = run(g, backend);
    EXPECT_LE(r.err, 1e-5) << r.listing;
    const std::string mine = "[" + std::string(cpu::gemm_provider_name(p)) + "]";
    for (const char* other : {"[onednn]", "[openblas]", "[packed]"})
      if (other != mine) {
        EXPECT_EQ(count(r.listing, other), 0) << r.listing;
      }
    EXPECT_GE(count(r.listing, mine), 3) << r.listing;
    EXPECT_EQ(count(r.listing, "auto:"), 0) << r.listing;
  }
  EXPECT_EQ(cpu::gemm_choice_stats().measured, before.measured);
  EXPECT_EQ(cpu::gemm_choice_stats().lookups, before.lookups);
}

TEST(GemmChoice, AutoMeasuresEachShapeOnceAndMatchesTheReference) {
  record_off();
  const Graph g = three_products(48, 80, 64); // shapes no other test uses
  const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::automatic, 2, false, 0});
  const auto before = cpu::gemm_choice_stats();
  Outcome first = run(g, backend);
  EXPECT_LE(first.err, 1e-5) << first.listing;
  const auto after_first = cpu::gemm_choice_stats();
  EXPECT_EQ(after_first.measured - before.measured, 3) << first.listing;
  EXPECT_GT(after_first.spent_ms, before.spent_ms);
  // The process's threads were settled before its first measurement on two threads.
  EXPECT_TRUE(after_first.settled);
  EXPECT_GT(after_first.parallel_efficiency, 0); // measured when settling ended
  if (!before.settled) {
    EXPECT_GE(after_first.spent_ms - before.spent_ms, cpu::kGemmSettleMs);
  }
  // Every product says which provider won and by how much.
  EXPECT_EQ(count(first.listing, "(auto: "), 3) << first.listing;
  EXPECT_EQ(count(first.listing, "[onednn] (auto: onednn") +
                count(first.listing, "[openblas] (auto: openblas") +
                count(first.listing, "[packed] (auto: packed"),
            3)
      << first.listing;
  // A second compile (another executable of the same shapes) measures nothing and chooses alike.
  Outcome second = run(g, backend);
  EXPECT_EQ(cpu::gemm_choice_stats().measured, after_first.measured);
  EXPECT_GT(cpu::gemm_choice_stats().lookups, after_first.lookups);
  EXPECT_EQ(second.listing, first.listing);
  // Another thread count is another key: measured again.
  const cpu::CpuBackend one(cpu::CpuOptions{cpu::GemmProvider::automatic, 1, false, 0});
  Outcome single = run(g, one);
  EXPECT_LE(single.err, 1e-5) << single.listing;
  EXPECT_EQ(cpu::gemm_choice_stats().measured - after_first.measured, 3);
}

TEST(GemmChoice, SmallProductsAreNotMeasured) {
  record_off();
  const Graph g = three_products(8, 16, 8);
  const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::automatic, 2});
  const auto before = cpu::gemm_choice_stats();
  Outcome r = run(g, backend);
  EXPECT_LE(r.err, 1e-5) << r.listing;
  EXPECT_EQ(cpu::gemm_choice_stats().measured, before.measured);
  EXPECT_EQ(count(r.listing, "[onednn] (auto: onednn, not measured (little work))"), 3)
      << r.listing;
}

TEST(GemmChoice, MeasuresBothCandidatesOnTheRealShape) {
  record_off();
  cpu::MatMulSpec s;
  s.a_sizes = {64, 96};
  s.b_sizes = {136, 96};
  s.out_sizes = {64, 136};
  s.transpose_b = true;
  s.has_bias = true;
  s.act = ir::Activation::relu;
  s.pack_b = true;
  cpu::GemmChoice c = cpu::measured_gemm(s, 2, 0);
  EXPECT_TRUE(c.measured);
  EXPECT_GT(c.onednn_ms, 0);
  EXPECT_GT(c.openblas_ms, 0);
  EXPECT_GT(c.packed_ms, 0);
  // The figures decide by the rule (gemm_choice_from), and the note lists all three, the winner
  // first.
  EXPECT_EQ(c.impl, cpu::gemm_choice_from(c.onednn_ms, c.openblas_ms, c.packed_ms));
  EXPECT_EQ(c.note().rfind(std::string("auto: ") + cpu::gemm_impl_name(c.impl), 0), 0u) << c.note();
  for (const char* name : {"onednn", "openblas", "packed"})
    EXPECT_NE(c.note().find(name), std::string::npos) << c.note();
  // Asked again under a threshold above its work, the shape is not the measured choice: as in a
  // fresh process with that threshold, oneDNN unmeasured.
  const cpu::GemmChoice small = cpu::measured_gemm(s, 2, 64 * 136 * 96 + 1);
  EXPECT_FALSE(small.measured);
  EXPECT_EQ(small.impl, cpu::GemmImpl::onednn);
  EXPECT_TRUE(cpu::measured_gemm(s, 2, 64 * 136 * 96).measured); // at the threshold: measured
  s.dtype = ir::DType::f64;
  EXPECT_THROW(cpu::measured_gemm(s, 2, 0), Error);
}

// The rule: the packed GEMM unless OpenBLAS beats it by kGemmPackedMargin, then that one unless
// oneDNN (another pool) beats it by kGemmOtherPoolMargin; a declined candidate (0) never wins.
TEST(GemmChoice, OthersMustBeatThePackedGemmByTheirMargins) {
  using cpu::GemmImpl;
  const double mp = 1 + cpu::kGemmPackedMargin, mo = 1 + cpu::kGemmOtherPoolMargin;
  EXPECT_EQ(cpu::gemm_choice_from(1.2, 1.2, 1.1), GemmImpl::packed);
  EXPECT_EQ(cpu::gemm_choice_from(1.2, 1.0, 1.0 * mp - 1e-3), GemmImpl::packed);
  EXPECT_EQ(cpu::gemm_choice_from(1.2, 1.0, 1.0 * mp + 1e-3), GemmImpl::openblas);
  EXPECT_EQ(cpu::gemm_choice_from(1.0, 0, 1.0 * mo - 1e-3), GemmImpl::packed);
  EXPECT_EQ(cpu::gemm_choice_from(1.0, 0, 1.0 * mo + 1e-3), GemmImpl::onednn);
  EXPECT_EQ(cpu::gemm_choice_from(1.0, 1.0 * mo + 1e-3, 0), GemmImpl::onednn);
  EXPECT_EQ(cpu::gemm_choice_from(1.0, 1.05, 0), GemmImpl::openblas); // packed declined
  EXPECT_EQ(cpu::gemm_choice_from(0, 1.0, 0.95), GemmImpl::packed);   // oneDNN declined
  EXPECT_EQ(cpu::gemm_choice_from(0, 1.0, 0), GemmImpl::openblas);
  EXPECT_EQ(cpu::gemm_choice_from(1.0, 0, 0), GemmImpl::onednn); // only oneDNN ran
  // The note names the margin when a faster candidate lost by it.
  cpu::GemmChoice c;
  c.measured = true;
  c.onednn_ms = 1.0;
  c.openblas_ms = 1.2;
  c.packed_ms = 1.05;
  c.impl = cpu::gemm_choice_from(c.onednn_ms, c.openblas_ms, c.packed_ms);
  EXPECT_EQ(c.note(), "auto: packed 1.050 ms; onednn 1.000 ms < openblas 1.200 ms, onednn not 10% "
                      "faster");
  c.onednn_ms = 1.3;
  c.openblas_ms = 1.0;
  c.impl = cpu::gemm_choice_from(c.onednn_ms, c.openblas_ms, c.packed_ms);
  EXPECT_EQ(c.note(), "auto: packed 1.050 ms; openblas 1.000 ms < onednn 1.300 ms, openblas not "
                      "10% faster");
  c.onednn_ms = 0.5;
  c.impl = cpu::gemm_choice_from(c.onednn_ms, c.openblas_ms, c.packed_ms);
  EXPECT_EQ(c.note(), "auto: onednn 0.500 ms < openblas 1.000 ms < packed 1.050 ms");
}

TEST(GemmChoice, TheRecordFileMakesLaterProcessesChooseAlike) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("rlx_gemm_record_" + std::to_string(::getpid()));
  const fs::path file = dir / "sub" / "gemm-choices.tsv"; // the folder is created
  fs::remove_all(dir);
  ::setenv("RLX_GEMM_CHOICES", file.c_str(), 1);
  EXPECT_EQ(cpu::gemm_record_path(), file.string());
  const Graph g = three_products(56, 88, 72); // shapes no other test uses
  const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::automatic, 2, false, 0});
  const auto before = cpu::gemm_choice_stats();
  Outcome first = run(g, backend);
  EXPECT_EQ(cpu::gemm_choice_stats().measured - before.measured, 3);
  // Three lines, one per shape; a malformed line (a torn write, an edit) is skipped.
  {
    std::ifstream in(file);
    std::string line;
    int lines = 0;
    while (std::getline(in, line))
      ++lines;
    EXPECT_EQ(lines, 3);
    std::ofstream(file, std::ios::app) << "garbage\tmkl\tx\n\t\t\n";
  }
  // A process that never timed these shapes (its memory forgotten) reads the same choices.
  cpu::forget_gemm_choices();
  const auto mid = cpu::gemm_choice_stats();
  Outcome second = run(g, backend);
  EXPECT_LE(second.err, 1e-5) << second.listing;
  EXPECT_EQ(cpu::gemm_choice_stats().measured, mid.measured);
  EXPECT_EQ(cpu::gemm_choice_stats().recorded - mid.recorded, 3);
  EXPECT_EQ(count(second.listing, ", recorded"), 3) << second.listing;
  // The same providers as the first run, by listing label.
  for (const char* p : {"[onednn]", "[openblas]", "[packed]"})
    EXPECT_EQ(count(second.listing, p), count(first.listing, p)) << first.listing << second.listing;
  fs::remove_all(dir);
  record_off();
  EXPECT_EQ(cpu::gemm_record_path(), "");
}

TEST(GemmChoice, ProviderNamesAndBadOptions) {
  for (auto p : {cpu::GemmProvider::automatic, cpu::GemmProvider::onednn,
                 cpu::GemmProvider::openblas, cpu::GemmProvider::packed})
    EXPECT_EQ(cpu::parse_gemm_provider(cpu::gemm_provider_name(p)), p);
  EXPECT_EQ(cpu::gemm_provider_name(cpu::GemmProvider::automatic), "auto");
  EXPECT_EQ(cpu::CpuOptions{}.gemm, cpu::GemmProvider::automatic);
  EXPECT_THROW(cpu::parse_gemm_provider("mkl"), Error);
  cpu::CpuOptions bad;
  bad.gemm_measure_min_work = -1;
  EXPECT_THROW(cpu::CpuBackend{bad}, Error);
}

} // namespace
