// gemm_packed_test.cpp: rlx's packed GEMM (`--gemm packed`): every instruction set's tile code this
// CPU runs (baseline and AVX2 at least on x86-64-v3) against a double-precision product on odd
// sizes, transposes, batch broadcasting, each epilogue, B packed per run and from a weight copy;
// then through the backend against the reference interpreter, with weights changed between runs.
#include "fused_run_testing.hpp"
#include "gemm_packed.hpp"
#include "matmul.hpp"
#include "onednn.hpp"

#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace rlx;
using cpu::MatMulSpec;
using cpu::packed::Isa;

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::baseline, Isa::avx2, Isa::avx512})
    if (cpu::packed::isa_supported(i))
      out.push_back(i);
  return out;
}

std::vector<float> random_floats(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v)
    x = u(rng);
  return v;
}

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

/// 64-byte aligned floats (scratch and weight copies).
struct Aligned {
  explicit Aligned(std::int64_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(
            64, static_cast<std::size_t>((std::max<std::int64_t>(bytes, 1) + 63) / 64 * 64)))) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  std::byte* p;
};

/// Keeps packed copies made through packed_own (counts them).
class TestPacker final : public cpu::onednn::WeightPacker {
public:
  void* packed(ir::NodeId, const std::byte*, const dnnl::memory::desc&,
               const dnnl::memory::desc&) override {
    throw Error("the packed GEMM asked for a oneDNN layout");
  }
  void* packed_own(ir::NodeId, const std::byte* src, const std::string& layout, std::int64_t bytes,
                   const cpu::onednn::OwnPackFn& pack,
                   const cpu::onednn::OwnPackFn& unpack) override {
    copies.push_back(std::make_unique<Aligned>(bytes));
    pack(src, copies.back()->p);
    // The inverse restores the plain bytes exactly.
    std::vector<std::byte> back(plain_bytes);
    unpack(copies.back()->p, back.data());
    restored_ok = restored_ok && std::equal(back.begin(), back.end(), src);
    layouts.push_back(layout);
    return copies.back()->p;
  }
  std::size_t plain_bytes = 0;
  bool restored_ok = true;
  std::vector<std::unique_ptr<Aligned>> copies;
  std::vector<std::string> layouts;
};

double act_ref(ir::Activation act, double x) {
  switch (act) {
  case ir::Activation::relu:
    return x > 0 ? x : 0;
  case ir::Activation::gelu:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case ir::Activation::silu:
    return x / (1 + std::exp(-x));
  default:
    return x;
  }
}

struct Case {
  std::vector<std::int64_t> a, b, out;
  bool ta = false, tb = false, bias = false;
  ir::Activation act = ir::Activation::none;
  bool weight = false; ///< B read from a packed copy (2-D B only)
};

/// Runs \p c with \p isa's code on \p threads threads; every element within the f32 error bound
/// of a K-term sum (4 K u Σ|a b|) of the double product.
void check(const Case& c, Isa isa, int threads) {
  SCOPED_TRACE(std::string(cpu::packed::isa_name(isa)) + " threads " + std::to_string(threads));
  const auto a = random_floats(numel(c.a), 1), b = random_floats(numel(c.b), 2);
  const std::int64_t n = c.out.back(), m = c.out[c.out.size() - 2];
  const std::int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
  const auto bias = random_floats(n, 3);
  std::vector<float> out(static_cast<std::size_t>(numel(c.out)), 7.0f);
  MatMulSpec s;
  s.a_sizes = c.a;
  s.b_sizes = c.b;
  s.out_sizes = c.out;
  s.transpose_a = c.ta;
  s.transpose_b = c.tb;
  s.a = reinterpret_cast<const std::byte*>(a.data());
  s.b = reinterpret_cast<const std::byte*>(b.data());
  s.out = reinterpret_cast<std::byte*>(out.data());
  s.has_bias = c.bias;
  s.bias = c.bias ? reinterpret_cast<const std::byte*>(bias.data()) : nullptr;
  s.act = c.act;
  s.threads = threads;
  TestPacker packer;
  packer.plain_bytes = b.size() * 4;
  if (c.weight) {
    s.pack_b = true;
    s.packer = &packer;
  }
  ASSERT_TRUE(cpu::packed_gemm_accepts(s));
  Aligned scratch(cpu::packed_gemm_scratch_bytes(s, isa));
  auto kernel = cpu::make_packed_gemm(s, scratch.p, isa);
  EXPECT_EQ(packer.copies.size(), c.weight ? 1u : 0u);
  EXPECT_TRUE(packer.restored_ok);
  tbb::task_arena pool(threads);
  cpu::ExecContext ctx{&pool, nullptr, threads};
  kernel->run(ctx);
  kernel->run(ctx); // a second run gives the same (C is overwritten, not accumulated)
  // The reference, batch by batch (NumPy broadcasting of the leading dims).
  const std::size_t ro = c.out.size();
  const std::int64_t mats = numel(c.out) / (m * n);
  auto index = [&](const std::vector<std::int64_t>& sz, std::int64_t mat) {
    // Element offset of batch matrix `mat` (of the output's batch dims) in an operand of sizes sz.
    std::int64_t off = 0, stride = sz[sz.size() - 1] * sz[sz.size() - 2], rem = mat;
    for (std::size_t d = ro - 2; d-- > 0;) {
      const std::int64_t od = c.out[d];
      const std::int64_t i = rem % od;
      rem /= od;
      const std::ptrdiff_t sd =
          static_cast<std::ptrdiff_t>(d) - static_cast<std::ptrdiff_t>(ro - sz.size());
      if (sd >= 0) {
        const std::int64_t dim = sz[static_cast<std::size_t>(sd)];
        off += (dim == 1 ? 0 : i) * stride;
        stride *= dim;
      }
    }
    return off;
  };
  int bad = 0;
  for (std::int64_t t = 0; t < mats; ++t) {
    const float* x = a.data() + index(c.a, t);
    const float* y = b.data() + index(c.b, t);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double u = c.ta ? x[p * m + i] : x[i * k + p];
          const double v = c.tb ? y[j * k + p] : y[p * n + j];
          sum += u * v;
          mag += std::fabs(u * v);
        }
        if (c.bias) {
          sum += bias[static_cast<std::size_t>(j)];
          mag += std::fabs(bias[static_cast<std::size_t>(j)]);
        }
        const double want = act_ref(c.act, sum);
        const double got = out[static_cast<std::size_t>((t * m + i) * n + j)];
        const double tol = 4.0 * static_cast<double>(k + 1) * 6e-8 * mag + 1e-6;
        if (!(std::fabs(got - want) <= tol) && ++bad <= 3)
          ADD_FAILURE() << "C[" << t << "," << i << "," << j << "] = " << got << ", want " << want;
      }
  }
}

TEST(GemmPacked, BaselineAndAvx2CodeBothRunWhereTheCpuHasThem) {
  const auto isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::baseline);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_TRUE(cpu::packed::isa_supported(Isa::avx2));
  }
#endif
  // The widest the CPU has, unless RLX_GEMM_ISA caps it (cpu-isa-check.sh runs the tests capped).
  const Isa cap = cpu::packed::isa_cap(std::getenv("RLX_GEMM_ISA"));
  EXPECT_EQ(cpu::packed::best_isa(), std::min(cap, isas.back()));
  // Each ISA's tile: its own width (the packed layout differs, so each packs its own B).
  EXPECT_EQ(cpu::packed::kernels(Isa::baseline).tile_cols(), 8);
  if (cpu::packed::isa_supported(Isa::avx2)) {
    EXPECT_EQ(cpu::packed::kernels(Isa::avx2).tile_cols(), 16);
  }
  if (cpu::packed::isa_supported(Isa::avx512)) {
    EXPECT_EQ(cpu::packed::kernels(Isa::avx512).tile_cols(), 64);
    EXPECT_EQ(cpu::packed::kernels(Isa::avx512).tile_rows(), 6);
  }
}

/// RLX_GEMM_ISA's value: the three names cap the ISA, nothing means no cap, and anything else is
/// an error that names the accepted values (not a silent "no cap"). The subprocess check of the
/// same through the built command is in rlx-runtime's cli_test.
TEST(GemmPacked, IsaCapAcceptsTheThreeNamesAndRejectsOthers) {
  EXPECT_EQ(cpu::packed::isa_cap(nullptr), Isa::avx512);
  EXPECT_EQ(cpu::packed::isa_cap(""), Isa::avx512);
  for (Isa i : {Isa::baseline, Isa::avx2, Isa::avx512})
    EXPECT_EQ(cpu::packed::isa_cap(cpu::packed::isa_name(i)), i);
  for (const char* bad : {"avx3", "AVX2", "avx2 ", "sse"}) {
    try {
      (void)cpu::packed::isa_cap(bad);
      ADD_FAILURE() << "no error for RLX_GEMM_ISA=" << bad;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("baseline, avx2, avx512"), std::string::npos) << what;
    }
  }
  // A cap is honoured: never wider than asked, and the widest the CPU runs below it.
  const auto isas = supported_isas();
  EXPECT_EQ(cpu::packed::widest_supported(Isa::baseline), Isa::baseline);
  EXPECT_EQ(cpu::packed::widest_supported(Isa::avx512), isas.back());
  EXPECT_EQ(cpu::packed::widest_supported(Isa::avx2),
            cpu::packed::isa_supported(Isa::avx2) ? Isa::avx2 : Isa::baseline);
}

TEST(GemmPacked, OddSizesMatchTheDoubleProductOnEveryIsa) {
  const std::int64_t sizes[] = {1, 7, 13, 65, 257};
  for (Isa isa : supported_isas())
    for (auto m : sizes)
      for (auto n : sizes)
        for (auto k : sizes) {
          if ((m == 257) + (n == 257) + (k == 257) > 1)
            continue; // keeps the double reference quick; 257 still meets each dimension
          SCOPED_TRACE("M " + std::to_string(m) + " N " + std::to_string(n) + " K " +
                       std::to_string(k));
          check({{m, k}, {k, n}, {m, n}}, isa, 2);
        }
}

// Every count of rows a block's last sliver can have (1 to MR - 1, and none), each run at its own
// height (2, 4, 8 or MR rows), in two K blocks, with a bias and an activation on the finished
// tiles, and through the transposed-A path that packs every sliver.
TEST(GemmPacked, EveryLastSliverHeightMatchesTheDoubleProduct) {
  for (Isa isa : supported_isas()) {
    const int mr = cpu::packed::kernels(isa).tile_rows();
    for (std::int64_t m = 1; m <= 2 * mr; ++m) {
      SCOPED_TRACE(std::string(cpu::packed::isa_name(isa)) + " M " + std::to_string(m));
      Case c{{m, 300}, {300, 37}, {m, 37}};
      c.bias = true;
      c.act = ir::Activation::gelu;
      check(c, isa, 1);
      Case t{{300, m}, {300, 37}, {m, 37}};
      t.ta = true;
      check(t, isa, 1);
    }
  }
}

// gemm_block on its own (as AttentionGrad calls it on cache-resident tiles): C += A · B over K rows
// [k0, k0 + k) of a taller packed B (b_rows), A read transposed (packed per block) or in place, M
// in two blocks, K in several kc blocks; the columns of C outside [j0, j1) stay untouched.
TEST(GemmPacked, BlockAccumulatesOverARowRangeOfATallerPackedB) {
  const std::int64_t m = 23, n = 37, rows = 29, k0 = 5, k = 19, kc = 8;
  for (Isa isa : supported_isas())
    for (bool transposed : {false, true}) {
      SCOPED_TRACE(std::string(cpu::packed::isa_name(isa)) + (transposed ? " Aᵀ" : " A"));
      const auto& kern = cpu::packed::kernels(isa);
      const int nr = kern.tile_cols();
      const auto a = random_floats(m * k, 11), b = random_floats(rows * n, 12),
                 c0 = random_floats(m * n, 13);
      // A(i, p) at a[i * k + p], or stored transposed at at[p * m + i].
      std::vector<float> at(static_cast<std::size_t>(m * k));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t p = 0; p < k; ++p)
          at[static_cast<std::size_t>(p * m + i)] = a[static_cast<std::size_t>(i * k + p)];
      Aligned bp(cpu::packed::panel_floats(rows, n, nr) * 4), ap(m * kc * 4 + 64 * 4);
      auto* bpack = reinterpret_cast<float*>(bp.p);
      kern.pack_b(b.data(), n, 1, rows, n, bpack);
      std::vector<float> c = c0;
      const std::int64_t j0 = nr, j1 = n; // one panel left out
      for (std::int64_t i0 = 0; i0 < m; i0 += 12) {
        cpu::packed::BlockArgs g;
        g.a = transposed ? at.data() : a.data();
        g.rsa = transposed ? 1 : k;
        g.csa = transposed ? m : 1;
        g.b_pack = bpack + k0 * nr;
        g.b_rows = rows;
        g.c = c.data();
        g.ldc = n;
        g.k = k;
        g.kc = kc;
        g.i0 = i0;
        g.i1 = std::min(m, i0 + 12);
        g.j0 = j0;
        g.j1 = j1;
        g.a_pack = reinterpret_cast<float*>(ap.p);
        g.accumulate = true;
        kern.gemm_block(g);
      }
      int bad = 0;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          double want = c0[static_cast<std::size_t>(i * n + j)];
          if (j >= j0 && j < j1)
            for (std::int64_t p = 0; p < k; ++p)
              want += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) *
                      b[static_cast<std::size_t>((k0 + p) * n + j)];
          const double got = c[static_cast<std::size_t>(i * n + j)];
          if (!(std::fabs(got - want) <= 1e-5 * static_cast<double>(k + 2)) && ++bad <= 3)
            ADD_FAILURE() << "C[" << i << "," << j << "] = " << got << ", want " << want;
        }
    }
}

TEST(GemmPacked, EmptyK) { // C = act(bias): the sum over no terms is 0
  for (Isa isa : supported_isas()) {
    Case c{{5, 0}, {0, 19}, {5, 19}};
    c.bias = true;
    c.act = ir::Activation::silu;
    check(c, isa, 2);
    check({{5, 0}, {0, 19}, {5, 19}}, isa, 1);
  }
}

TEST(GemmPacked, TransposesBiasAndEveryEpilogue) {
  for (Isa isa : supported_isas())
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto act : {ir::Activation::none, ir::Activation::relu, ir::Activation::gelu,
                         ir::Activation::silu}) {
          SCOPED_TRACE(std::string("ta ") + (ta ? "1" : "0") + " tb " + (tb ? "1" : "0") + " act " +
                       std::to_string(static_cast<int>(act)));
          Case c{{ta ? 300 : 37, ta ? 37 : 300}, {tb ? 70 : 300, tb ? 300 : 70}, {37, 70}};
          c.ta = ta;
          c.tb = tb;
          c.act = act;
          c.bias = act != ir::Activation::relu; // relu without bias too
          check(c, isa, 2);
        }
}

TEST(GemmPacked, BWeightCopyIsPackedOnceAndRestoresThePlainBytes) {
  for (Isa isa : supported_isas())
    for (bool tb : {false, true}) {
      Case c{{64, 784}, {tb ? 512 : 784, tb ? 784 : 512}, {64, 512}};
      c.tb = tb;
      c.bias = true;
      c.act = ir::Activation::relu;
      c.weight = true;
      check(c, isa, 2);
      check(c, isa, 1);
    }
}

/// SwiGLU's pair as one packed product (make_packed_pair) against the double-precision
/// (x · w_up + b_up) · silu(x · w_gate + b_gate), within the f32 error bound of two K-term sums
/// carried through the product: row blocks (M > 144), K blocks (K > kc), N blocks and edge tiles,
/// both weight layouts, with and without biases, one and two threads.
TEST(GemmPacked, SwiGluPairMatchesTheDoubleProducts) {
  struct Shape {
    std::int64_t m, k, n;
  };
  for (Isa isa : supported_isas())
    for (Shape sh : {Shape{10, 16, 24}, Shape{150, 300, 1100}, Shape{7, 600, 40}})
      for (bool tb : {true, false})
        for (bool bias : {false, true})
          for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(cpu::packed::isa_name(isa)) + " m" + std::to_string(sh.m) +
                         " k" + std::to_string(sh.k) + " n" + std::to_string(sh.n) +
                         (tb ? " [N, K]" : " [K, N]") + (bias ? " bias" : "") + " threads " +
                         std::to_string(threads));
            const auto x = random_floats(sh.m * sh.k, 1);
            const auto wg = random_floats(sh.k * sh.n, 2), wu = random_floats(sh.k * sh.n, 3);
            const auto bg = random_floats(sh.n, 4), bu = random_floats(sh.n, 5);
            std::vector<float> out(static_cast<std::size_t>(sh.m * sh.n), 7.0f);
            TestPacker packer;
            packer.plain_bytes = wg.size() * 4;
            auto spec = [&](const std::vector<float>& w, const std::vector<float>& b,
                            ir::Activation act) {
              MatMulSpec s;
              s.a_sizes = {sh.m, sh.k};
              s.b_sizes = tb ? std::vector<std::int64_t>{sh.n, sh.k}
                             : std::vector<std::int64_t>{sh.k, sh.n};
              s.out_sizes = {sh.m, sh.n};
              s.transpose_b = tb;
              s.a = reinterpret_cast<const std::byte*>(x.data());
              s.b = reinterpret_cast<const std::byte*>(w.data());
              s.out = reinterpret_cast<std::byte*>(out.data());
              s.has_bias = bias;
              s.bias = bias ? reinterpret_cast<const std::byte*>(b.data()) : nullptr;
              s.act = act;
              s.threads = threads;
              s.pack_b = true;
              s.packer = &packer;
              return s;
            };
            const MatMulSpec g = spec(wg, bg, ir::Activation::silu);
            const MatMulSpec u = spec(wu, bu, ir::Activation::none);
            ASSERT_TRUE(cpu::packed_pair_accepts(g, u));
            Aligned scratch(cpu::packed_pair_scratch_bytes(u, isa));
            auto kernel = cpu::make_packed_pair(g, u, scratch.p, isa);
            EXPECT_EQ(packer.copies.size(), 2u); // both weights packed once
            EXPECT_TRUE(packer.restored_ok);
            tbb::task_arena pool(threads);
            cpu::ExecContext ctx{&pool, nullptr, threads};
            kernel->run(ctx);
            kernel->run(ctx); // a second run gives the same (nothing accumulates across runs)
            const double gamma = 4.0 * static_cast<double>(sh.k + 1) * 6e-8;
            int bad = 0;
            for (std::int64_t i = 0; i < sh.m; ++i)
              for (std::int64_t j = 0; j < sh.n; ++j) {
                double gs = bias ? bg[static_cast<std::size_t>(j)] : 0.0, gm = std::fabs(gs);
                double us = bias ? bu[static_cast<std::size_t>(j)] : 0.0, um = std::fabs(us);
                for (std::int64_t p = 0; p < sh.k; ++p) {
                  const double xv = x[static_cast<std::size_t>(i * sh.k + p)];
                  const auto wi = static_cast<std::size_t>(tb ? j * sh.k + p : p * sh.n + j);
                  gs += xv * wg[wi];
                  gm += std::fabs(xv * wg[wi]);
                  us += xv * wu[wi];
                  um += std::fabs(xv * wu[wi]);
                }
                const double sg = act_ref(ir::Activation::silu, gs);
                const double want = us * sg;
                // up's error times silu(gate), plus up times gate's error through silu' (<= 1.1),
                // plus the rounding of the silu and the product.
                const double tol = gamma * um * std::fabs(sg) +
                                   1.1 * (std::fabs(us) + gamma * um) * gamma * gm +
                                   1e-6 * std::fabs(want) + 1e-7;
                const double got = out[static_cast<std::size_t>(i * sh.n + j)];
                if (!(std::fabs(got - want) <= tol) && ++bad <= 3)
                  ADD_FAILURE() << "out[" << i << "," << j << "] = " << got << ", want " << want;
              }
          }
}

TEST(GemmPacked, SwiGluPairDeclinesWhatItCannotRun) {
  MatMulSpec g;
  g.a_sizes = {4, 8};
  g.b_sizes = {16, 8};
  g.out_sizes = {4, 16};
  g.transpose_b = true;
  g.pack_b = true;
  g.act = ir::Activation::silu;
  MatMulSpec u = g;
  u.act = ir::Activation::none;
  EXPECT_TRUE(cpu::packed_pair_accepts(g, u));
  MatMulSpec bad = u;
  bad.pack_b = false; // a weight packed per run
  EXPECT_FALSE(cpu::packed_pair_accepts(g, bad));
  bad = g;
  bad.act = ir::Activation::relu; // not SwiGLU's gate
  EXPECT_FALSE(cpu::packed_pair_accepts(bad, u));
  bad = u;
  bad.b_sizes = {16, 4}; // another shape
  EXPECT_FALSE(cpu::packed_pair_accepts(g, bad));
  bad = u;
  bad.dtype = ir::DType::f64;
  EXPECT_FALSE(cpu::packed_pair_accepts(g, bad));
}

TEST(GemmPacked, BatchedAndBroadcastProducts) {
  for (Isa isa : supported_isas()) {
    check({{3, 2, 9, 20}, {2, 20, 33}, {3, 2, 9, 33}}, isa, 2); // B broadcast over the first dim
    check({{2, 40, 17}, {17, 23}, {2, 40, 23}}, isa, 2);        // folds into one [80, 17] product
    Case t{{4, 17, 40}, {4, 17, 19}, {4, 40, 19}};              // Aᵀ·B per batch (X^T·dY)
    t.ta = true;
    check(t, isa, 2);
    Case w{{2, 17, 40}, {17, 19}, {2, 40, 19}}; // Aᵀ with a weight B
    w.ta = true;
    w.weight = true;
    check(w, isa, 2);
  }
}

TEST(GemmPacked, NonF32IsDeclined) {
  MatMulSpec s;
  s.a_sizes = {4, 4};
  s.b_sizes = {4, 4};
  s.out_sizes = {4, 4};
  s.dtype = ir::DType::f64;
  EXPECT_FALSE(cpu::packed_gemm_accepts(s));
  EXPECT_THROW(cpu::make_matmul_kernel(s, cpu::GemmImpl::packed, nullptr), Error);
}

// ---- through the backend
// -------------------------------------------------------------------------

using cpu::testing::random_tensor;

/// relu(x · w1 + b1) · w2ᵀ and a constant product: the listing names the packed GEMM, the result
/// matches the reference, also after the weights change (the packed copies are refreshed).
TEST(GemmPacked, ForcedProviderMatchesTheReferenceAcrossWeightUpdates) {
  ir::Graph g("mlp");
  ir::Builder bld(g);
  const auto x = bld.input("x", ir::Shape({33, 65}));
  const auto w1 = bld.param("w1", ir::Shape({65, 130}));
  const auto b1 = bld.param("b1", ir::Shape({130}));
  const auto w2 = bld.param("w2", ir::Shape({13, 130}));
  const auto h = bld.relu(bld.add(bld.matmul(x, w1), b1));
  const auto y = bld.matmul(h, w2, false, true);
  bld.output(bld.matmul(y, bld.constant(random_tensor(ir::Shape({13, 7}), 9))));
  const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::packed, 2});
  auto exe = backend.compile(compile::CompilePipeline(backend).run(g).lir);
  const std::string listing = cpu::kernel_listing(*exe);
  EXPECT_GE(std::count(listing.begin(), listing.end(), '\n'), 3) << listing;
  std::size_t packed = 0;
  for (auto p = listing.find("[packed]"); p != std::string::npos;
       p = listing.find("[packed]", p + 1))
    ++packed;
  EXPECT_EQ(packed, 3u) << listing;
  // Each names the ISA its tile code was compiled for.
  const std::string isa =
      std::string("[packed] (") + cpu::packed::isa_name(cpu::packed::best_isa());
  EXPECT_NE(listing.find(isa), std::string::npos) << listing;
  for (std::uint64_t round = 0; round < 2; ++round) {
    ir::reference::TensorMap in, params;
    in["x"] = random_tensor(ir::Shape({33, 65}), 10 + round);
    params["w1"] = random_tensor(ir::Shape({65, 130}), 20 + round);
    params["b1"] = random_tensor(ir::Shape({130}), 30 + round);
    params["w2"] = random_tensor(ir::Shape({13, 130}), 40 + round);
    for (const auto& [name, v] : in)
      exe->set_input(name, v);
    for (const auto& [name, v] : params)
      exe->set_param(name, v);
    exe->execute();
    const auto want = ir::reference::evaluate(g, in, params);
    double peak = 1e-30;
    for (std::int64_t j = 0; j < want[0].numel(); ++j)
      peak = std::max(peak, std::fabs(want[0].get_f64(j)));
    EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]) / peak, 1e-5) << "round " << round;
  }
}

TEST(GemmPacked, ProviderSpelling) {
  EXPECT_EQ(cpu::gemm_provider_name(cpu::GemmProvider::packed), "packed");
  EXPECT_EQ(cpu::parse_gemm_provider("packed"), cpu::GemmProvider::packed);
}

} // namespace
