// gemm_packed.cpp: the packed GEMM provider (`--gemm packed`): which instruction set's tile code
// runs, the scratch it plans, the packed weight copy, and the kernel that splits a product into
// (batch, M, N) blocks over the TBB pool (the hot loops are in gemm_packed_tile.inc).
#include "../gemm_packed.hpp"

#include "../matmul.hpp"
#include "../onednn.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace rlx::cpu {
namespace packed {

const char* isa_name(Isa isa) {
  switch (isa) {
  case Isa::baseline:
    return "baseline";
  case Isa::avx2:
    return "avx2";
  case Isa::avx512:
    return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa) {
  case Isa::baseline:
    return true;
  case Isa::avx2:
    return __builtin_cpu_supports("x86-64-v3");
  case Isa::avx512:
    return __builtin_cpu_supports("x86-64-v4");
  }
  return false;
#else
  return isa == Isa::baseline;
#endif
}

Isa isa_cap(const char* value) {
  if (value == nullptr || *value == '\0')
    return Isa::avx512;
  for (Isa i : {Isa::baseline, Isa::avx2, Isa::avx512})
    if (std::strcmp(value, isa_name(i)) == 0)
      return i;
  throw Error(std::string("rlx-cpu: RLX_GEMM_ISA='") + value +
              "' is not one of baseline, avx2, avx512");
}

Isa widest_supported(Isa cap) {
  for (Isa i : {Isa::avx512, Isa::avx2})
    if (i <= cap && isa_supported(i))
      return i;
  return Isa::baseline;
}

Isa best_isa() {
  // Read once; a bad value throws here (and again on the next call) rather than meaning no cap.
  static const Isa best = widest_supported(isa_cap(std::getenv("RLX_GEMM_ISA")));
  return best;
}

const IsaKernels& kernels(Isa isa) {
  static const IsaKernels k[] = {
      {base::tile_rows, base::tile_cols, base::pack_b, base::unpack_b, base::gemm_block},
      {avx2::tile_rows, avx2::tile_cols, avx2::pack_b, avx2::unpack_b, avx2::gemm_block},
      {avx512::tile_rows, avx512::tile_cols, avx512::pack_b, avx512::unpack_b, avx512::gemm_block},
  };
  if (!isa_supported(isa))
    throw Error(std::string("rlx-cpu: this CPU cannot run the packed GEMM's ") + isa_name(isa) +
                " code");
  return k[static_cast<int>(isa)];
}

} // namespace packed

namespace {

using packed::Isa;

/// The product's shape and the strides of A and B.
struct PackedGeometry {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t mats = 1;            ///< batch matrices (1 when the batch folds into M)
  std::vector<std::int64_t> a_off;  ///< per batch matrix: element offset of A
  std::vector<std::int64_t> b_off;  ///< per batch matrix: element offset of B
  std::vector<std::int64_t> b_slot; ///< per batch matrix: which distinct B (packed per run)
  std::int64_t b_mats = 1;          ///< distinct B matrices
  std::int64_t rsa = 0, csa = 0, rsb = 0, csb = 0;
};

PackedGeometry packed_geometry(const MatMulSpec& s) {
  const std::size_t ra = s.a_sizes.size(), rb = s.b_sizes.size(), ro = s.out_sizes.size();
  if (ra < 2 || rb < 2 || ro < 2)
    throw Error("rlx-cpu: matmul operands need rank >= 2");
  PackedGeometry g;
  g.m = s.out_sizes[ro - 2];
  g.n = s.out_sizes[ro - 1];
  g.k = s.transpose_a ? s.a_sizes[ra - 2] : s.a_sizes[ra - 1];
  std::vector<std::int64_t> out(s.out_sizes.begin(), s.out_sizes.end() - 2);
  auto pad = [&](const std::vector<std::int64_t>& sz) {
    std::vector<std::int64_t> b(out.size() - (sz.size() - 2), 1);
    b.insert(b.end(), sz.begin(), sz.end() - 2);
    return b;
  };
  const std::vector<std::int64_t> ba = pad(s.a_sizes), bb = pad(s.b_sizes);
  const bool b_single = std::all_of(bb.begin(), bb.end(), [](std::int64_t d) { return d == 1; });
  g.rsa = s.transpose_a ? 1 : g.k;
  g.csa = s.transpose_a ? g.m : 1;
  g.rsb = s.transpose_b ? 1 : g.n;
  g.csb = s.transpose_b ? g.k : 1;
  if (b_single && !s.transpose_a) { // one [batches * M, K] product
    for (auto d : out)
      g.m *= d;
    g.a_off = {0};
    g.b_off = {0};
    g.b_slot = {0};
    return g;
  }
  g.a_off = batch_offsets(ba, out, g.m * g.k);
  g.b_off = batch_offsets(bb, out, g.k * g.n);
  g.mats = static_cast<std::int64_t>(g.a_off.size());
  // Distinct B matrices: each is packed once per run.
  std::vector<std::int64_t> seen;
  for (std::int64_t off : g.b_off) {
    auto it = std::find(seen.begin(), seen.end(), off);
    g.b_slot.push_back(it - seen.begin());
    if (it == seen.end())
      seen.push_back(off);
  }
  g.b_mats = static_cast<std::int64_t>(seen.size());
  return g;
}

/// B read from a packed weight copy (made once, refreshed when the weight changes) rather than
/// packed per run: a 2-D Param, Constant or weight Concat with a packer.
bool prepacked(const MatMulSpec& s) {
  return s.pack_b && s.packer != nullptr && s.b_sizes.size() == 2;
}

/// The blocking of one product for \p isa on \p threads threads.
struct Blocking {
  std::int64_t kc = 0, mc = 0, nc = 0, mb = 0, nb = 0;
};

Blocking blocking(const PackedGeometry& g, Isa isa, int threads) {
  const auto& kern = packed::kernels(isa);
  const std::int64_t mr = kern.tile_rows(), nr = kern.tile_cols();
  Blocking b;
  // K blocks: the B micro-panel (kc x NR) fills about 16 KiB of L1, and is at least 128 rows
  // deep (the C tile is reloaded once per K block); equal blocks.
  const std::int64_t kc_max = std::max<std::int64_t>(128, 16384 / (nr * 4));
  const std::int64_t kblocks = std::max<std::int64_t>(1, (g.k + kc_max - 1) / kc_max);
  b.kc = std::max<std::int64_t>(1, (g.k + kblocks - 1) / kblocks);
  // Tasks: mb row blocks (whole slivers, at most ~144 rows: the packed A block, mc x kc, stays in
  // L2) times nb column blocks (whole panels, at most 1024 columns) per batch matrix. On several
  // threads, of the splits into at least two tasks per thread (where there are that many tiles,
  // so a thread that starts late finds work left), the one with the shortest makespan (rounds of
  // the largest task: ceil(tasks / threads)), then the fewest tasks. Columns are split first,
  // rows beyond L2's need only when the columns alone cannot make that many tasks (every row
  // block reads all of B: LLaMA's 1376-column products split in rows ran 5-18% slower in two
  // rounds). The tasks' count alone left BERT-base's FFN-down (N = 768: 12 panels of the
  // 64-column AVX-512 tile) with 3 tasks on 2 threads.
  const std::int64_t slivers = std::max<std::int64_t>(1, (g.m + mr - 1) / mr);
  const std::int64_t panels = std::max<std::int64_t>(1, (g.n + nr - 1) / nr);
  const std::int64_t mb_min = std::max<std::int64_t>(1, (g.m + 143) / 144);
  const std::int64_t nb_min = std::max<std::int64_t>(1, (g.n + 1023) / 1024);
  auto rows_of = [&](std::int64_t mb) { return (slivers + mb - 1) / mb; }; // slivers per block
  auto cols_of = [&](std::int64_t nb) { return (panels + nb - 1) / nb; };  // panels per block
  std::int64_t best_mb = mb_min, best_nb = nb_min;
  if (threads > 1) {
    const std::int64_t t = threads;
    const std::int64_t want = std::min(2 * t, g.mats * slivers * panels);
    std::int64_t best_span = -1, best_tasks = 0;
    for (std::int64_t mb = mb_min; mb <= std::min(slivers, mb_min * 2 * t) && best_span < 0; ++mb) {
      const std::int64_t rows = std::min(g.m, rows_of(mb) * mr);
      const std::int64_t mb_real = (slivers + rows_of(mb) - 1) / rows_of(mb);
      for (std::int64_t nb = nb_min; nb <= std::min(panels, nb_min * 4 * t); ++nb) {
        const std::int64_t cols = std::min(g.n, cols_of(nb) * nr);
        const std::int64_t nb_real = (panels + cols_of(nb) - 1) / cols_of(nb);
        const std::int64_t tasks = g.mats * mb_real * nb_real;
        if (tasks < want)
          continue;
        const std::int64_t span = (tasks + t - 1) / t * rows * cols;
        if (best_span < 0 || span < best_span || (span == best_span && tasks < best_tasks)) {
          best_span = span;
          best_tasks = tasks;
          best_mb = mb_real;
          best_nb = nb_real;
        }
      }
    }
  }
  b.mc = rows_of(best_mb) * mr;
  b.mb = (g.m + b.mc - 1) / b.mc;
  b.nc = cols_of(best_nb) * nr;
  b.nb = (g.n + b.nc - 1) / b.nc;
  return b;
}

constexpr std::int64_t kAlign = 64;
std::int64_t align_up(std::int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

/// Scratch: per thread slot a packed A block (and with a second product, the block's C2); then B
/// packed per run (when not a weight copy).
struct PackedScratch {
  std::int64_t a_slot = 0, c2_off = 0, b_each = 0, b_total = 0;
  std::int64_t total(int threads) const { return a_slot * threads + b_total; }
};

PackedScratch packed_scratch(const MatMulSpec& s, const PackedGeometry& g, Isa isa,
                             bool pair = false) {
  const Blocking b = blocking(g, isa, std::max(1, s.threads));
  PackedScratch p;
  p.c2_off = align_up(b.mc * b.kc * 4);
  p.a_slot = p.c2_off + (pair ? align_up(b.mc * b.nc * 4) : 0);
  if (!prepacked(s)) {
    p.b_each = align_up(packed::panel_floats(g.k, g.n, packed::kernels(isa).tile_cols()) * 4);
    p.b_total = p.b_each * g.b_mats;
  }
  return p;
}

/// Multiply-adds from which a product is split over the threads.
constexpr std::int64_t kSplitWork = 4 * kTaskWork;

/// The packed panels of weight operand b of \p s (prepacked(s)), kept by the executable (refreshed
/// when the weight changes).
const float* packed_weight(const MatMulSpec& s, const PackedGeometry& g, Isa isa) {
  const auto& kern = packed::kernels(isa);
  const int nr = kern.tile_cols();
  const std::int64_t k = g.k, n = g.n;
  const std::int64_t rs = g.rsb, cs = g.csb;
  const std::string layout = std::string("gemm-panels-") + packed::isa_name(isa) + "-nr" +
                             std::to_string(nr) + (s.transpose_b ? "-bt" : "-b");
  return static_cast<const float*>(s.packer->packed_own(
      s.b_source, s.b, layout, packed::panel_floats(k, n, nr) * 4,
      [kern, rs, cs, k, n](const std::byte* plain, std::byte* copy) {
        kern.pack_b(reinterpret_cast<const float*>(plain), rs, cs, k, n,
                    reinterpret_cast<float*>(copy));
      },
      [kern, rs, cs, k, n](const std::byte* copy, std::byte* plain) {
        kern.unpack_b(reinterpret_cast<const float*>(copy), rs, cs, k, n,
                      reinterpret_cast<float*>(plain));
      }));
}

/// C = A · B (+ bias, activation); or with \p gate (SwiGLU's pair, both weights prepacked):
/// C = (A · B (+ bias)) · silu(A · B_gate (+ gate bias)), the gate tile computed beside each tile
/// of C into the block's own scratch, never written out whole.
class PackedMatmul final : public Kernel {
public:
  PackedMatmul(const MatMulSpec& s, std::byte* scratch, Isa isa, const MatMulSpec* gate = nullptr)
      : s_(s), g_(packed_geometry(s)), kern_(packed::kernels(isa)),
        b_(blocking(g_, isa, std::max(1, s.threads))),
        scratch_(packed_scratch(s, g_, isa, gate != nullptr)),
        a_pack_(reinterpret_cast<float*>(scratch)) {
    if (s.dtype != ir::DType::f32)
      throw Error("rlx-cpu: the packed GEMM runs f32 only");
    if (s.has_bias && !s.bias)
      throw Error("rlx-cpu: a matmul bias without an address");
    const int nr = kern_.tile_cols();
    set_note(std::string(packed::isa_name(isa)) + " " + std::to_string(kern_.tile_rows()) + "x" +
             std::to_string(nr));
    if (gate) {
      if (!packed_pair_accepts(*gate, s) || !prepacked(*gate) || !prepacked(s))
        throw Error("rlx-cpu: the packed SwiGLU pair needs two prepacked f32 weights of one shape "
                    "and a silu gate");
      if (gate->has_bias && !gate->bias)
        throw Error("rlx-cpu: a matmul bias without an address");
      if (!scratch)
        throw Error("rlx-cpu: the packed GEMM needs its planned scratch");
      b2_pack_ = packed_weight(*gate, g_, isa);
      bias2_ = reinterpret_cast<const float*>(gate->bias);
      set_note(note() + ", swiglu pair");
    }
    if (prepacked(s)) {
      b_pack_ = packed_weight(s, g_, isa);
    } else {
      if (!scratch && scratch_.total(std::max(1, s.threads)) > 0)
        throw Error("rlx-cpu: the packed GEMM needs its planned scratch");
      b_run_ = reinterpret_cast<float*>(scratch + scratch_.a_slot * std::max(1, s.threads));
    }
  }

  void run(ExecContext& ctx) override {
    const auto* a = reinterpret_cast<const float*>(s_.a);
    const auto* b = reinterpret_cast<const float*>(s_.b);
    auto* c = reinterpret_cast<float*>(s_.out);
    const std::int64_t work = g_.mats * g_.m * g_.n * g_.k;
    const bool split = ctx.threads > 1 && work >= kSplitWork;
    const int nr = kern_.tile_cols();
    if (!b_pack_) { // B packed per run: every distinct B matrix, panels in parallel
      const std::int64_t panels = (g_.n + nr - 1) / nr;
      const std::int64_t each = scratch_.b_each / 4;
      parallel_for(ctx, g_.b_mats * panels, split ? 1 : g_.b_mats * panels,
                   [&](std::int64_t t0, std::int64_t t1) {
                     for (std::int64_t t = t0; t < t1; ++t) {
                       const std::int64_t mat = t / panels, j0 = (t % panels) * nr;
                       std::int64_t off = 0;
                       for (std::size_t i = 0; i < g_.b_slot.size(); ++i)
                         if (g_.b_slot[i] == mat) {
                           off = g_.b_off[i];
                           break;
                         }
                       kern_.pack_b(b + off + j0 * g_.csb, g_.rsb, g_.csb, g_.k,
                                    std::min<std::int64_t>(nr, g_.n - j0),
                                    b_run_ + mat * each + j0 * g_.k);
                     }
                   });
    }
    const std::int64_t tasks = g_.mats * b_.mb * b_.nb;
    const std::int64_t a_slot = scratch_.a_slot / 4;
    parallel_for_slots(
        ctx, tasks, split ? 1 : tasks, [&](std::int64_t t0, std::int64_t t1, int slot) {
          for (std::int64_t t = t0; t < t1; ++t) {
            const std::int64_t mat = t / (b_.mb * b_.nb), rest = t % (b_.mb * b_.nb);
            const std::int64_t mi = rest / b_.nb, ni = rest % b_.nb;
            packed::BlockArgs args;
            const auto mat_i = static_cast<std::size_t>(mat);
            args.a = a + g_.a_off[mat_i];
            args.rsa = g_.rsa;
            args.csa = g_.csa;
            args.b_pack = b_pack_ ? b_pack_ : b_run_ + g_.b_slot[mat_i] * (scratch_.b_each / 4);
            args.c = c + mat * g_.m * g_.n;
            args.ldc = g_.n;
            args.k = g_.k;
            args.kc = b_.kc;
            args.i0 = mi * b_.mc;
            args.i1 = std::min(g_.m, args.i0 + b_.mc);
            args.j0 = ni * b_.nc;
            args.j1 = std::min(g_.n, args.j0 + b_.nc);
            args.a_pack = a_pack_ + slot * a_slot;
            args.bias = reinterpret_cast<const float*>(s_.bias);
            args.act = s_.act;
            if (b2_pack_) {
              args.b2_pack = b2_pack_;
              args.bias2 = bias2_;
              args.c2 = a_pack_ + slot * a_slot + scratch_.c2_off / 4;
              args.ldc2 = b_.nc;
            }
            kern_.gemm_block(args);
          }
        });
  }

private:
  MatMulSpec s_;
  PackedGeometry g_;
  packed::IsaKernels kern_;
  Blocking b_;
  PackedScratch scratch_;
  float* a_pack_;
  const float* b_pack_ = nullptr;  ///< the weight's packed copy, or null
  float* b_run_ = nullptr;         ///< B packed per run (in scratch)
  const float* b2_pack_ = nullptr; ///< the gate weight's packed copy (SwiGLU's pair), or null
  const float* bias2_ = nullptr;
};

} // namespace

bool packed_gemm_accepts(const MatMulSpec& spec) {
  if (spec.dtype != ir::DType::f32)
    return false;
  // Per-run packed B over 256 MiB (huge batched products) is left to the other providers.
  const PackedGeometry g = packed_geometry(spec);
  return prepacked(spec) ||
         static_cast<double>(g.b_mats) * static_cast<double>(g.k) * static_cast<double>(g.n) * 4 <=
             256.0 * 1024 * 1024;
}

bool packed_pair_accepts(const MatMulSpec& gate, const MatMulSpec& up) {
  // Both weights packed once (pack_b; the packer is only there when the kernel is built).
  return gate.dtype == ir::DType::f32 && up.dtype == ir::DType::f32 && gate.pack_b && up.pack_b &&
         gate.b_sizes.size() == 2 && gate.act == ir::Activation::silu &&
         up.act == ir::Activation::none && gate.a_sizes == up.a_sizes &&
         gate.b_sizes == up.b_sizes && gate.out_sizes == up.out_sizes &&
         gate.transpose_a == up.transpose_a && gate.transpose_b == up.transpose_b;
}

std::int64_t packed_pair_scratch_bytes(const MatMulSpec& up, packed::Isa isa) {
  const PackedGeometry g = packed_geometry(up);
  return packed_scratch(up, g, isa, true).total(std::max(1, up.threads));
}

std::unique_ptr<Kernel> make_packed_pair(const MatMulSpec& gate, const MatMulSpec& up,
                                         std::byte* scratch, packed::Isa isa) {
  return std::make_unique<PackedMatmul>(up, scratch, isa, &gate);
}

std::int64_t packed_gemm_scratch_bytes(const MatMulSpec& spec, packed::Isa isa) {
  const PackedGeometry g = packed_geometry(spec);
  return packed_scratch(spec, g, isa).total(std::max(1, spec.threads));
}

std::unique_ptr<Kernel> make_packed_gemm(const MatMulSpec& spec, std::byte* scratch,
                                         packed::Isa isa) {
  return std::make_unique<PackedMatmul>(spec, scratch, isa);
}

} // namespace rlx::cpu
