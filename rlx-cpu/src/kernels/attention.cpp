// attention.cpp: Attention (every mask kind, GQA, both layouts, scale, softcap) as a
// memory-efficient online-softmax kernel, and Rope.
//
// Attention algorithm (flash-attention style, per (batch, head, block of Bq query rows)):
//   m_i = -inf, l_i = 0, acc_i = 0
//   for each tile of Tk keys the block can see (causal / sliding-window bounds skip whole tiles):
//     s_ij = scale · q_i·k_j  → softcap c·tanh(s/c) → + bias_ij → -inf where the mask hides j
//     m'_i = max(m_i, max_j s_ij);  r_i = e^(m_i - m'_i)
//     p_ij = e^(s_ij - m'_i);  l_i = r_i l_i + Σ_j p_ij;  acc_i = r_i acc_i + Σ_j p_ij v_j
//   out_i = acc_i / l_i (0 when no key was visible)
// A thread holds one Bq×Tk score tile, Bq×Dv accumulators and 2·Bq row statistics (its slice of
// the planned scratch), never the Sq×Sk score matrix. Tasks are (batch, head, query block)
// triples, run on the TBB pool. The f32 path is compiled for AVX-512 / AVX2 / baseline.
#include "attention_core.hpp"

#include "../dtypes.hpp"
#include "../gemm_packed.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

namespace rlx::cpu {
namespace {

constexpr std::int64_t kBlockQ = kAttnBlockQ;
constexpr std::int64_t kTileK = kAttnTileK;

/// Per-thread scratch of one task, in compute-type elements: the score tile, the transposed key
/// tile, the output accumulators and the row statistics (running max and sum, the tile's row
/// maxima and the accumulators' rescale factors).
std::int64_t task_scratch_elems(std::int64_t d, std::int64_t dv) {
  return kBlockQ * kTileK + d * kTileK + kBlockQ * dv + 4 * kBlockQ;
}

/// The f32 micro-kernels' vectors, \p VW floats wide: 8 (an AVX2 register) in the multiversioned
/// task, 16 (an AVX-512 register) in attention_task_f32_avx512. A block of kRows<VW> query rows x
/// 2 VW columns of accumulators stays in registers: 8 of the 16 AVX2 registers (the former 4 x 64
/// block needed 32 and lived on the stack), 16 of the 32 AVX-512 ones. (A vector wider than the
/// hardware's is lowered through memory, so each width is compiled only where it is native.)
/// Never passed by value across a call (that would change the ABI between the clones).
template <int VW> struct AttnVec;
template <> struct AttnVec<8> {
  using V = float __attribute__((vector_size(32)));
  /// The same vector at any float alignment (value rows read by strides).
  using U = float __attribute__((vector_size(32), aligned(4)));
};
template <> struct AttnVec<16> {
  using V = float __attribute__((vector_size(64)));
  using U = float __attribute__((vector_size(64), aligned(4)));
};
/// Query rows per register block of the f32 micro-kernels.
template <int VW> constexpr std::int64_t kRows = VW == 16 ? 8 : 4;
static_assert(kTileK % 32 == 0 && kBlockQ % kRows<16> == 0);

/// s[i][j] = q_i · k_j for the qn rows of a block and the jn keys of a tile: unscaled for other
/// types than f32, plain dots. f32: the key tile is packed transposed, kt[d][j], so each query
/// row's scores are an axpy over d vectorised across keys, kRows<VW> rows per pass over the tile;
/// the scores are multiplied by \p scale in registers, and with \p rmax each row's maximum over
/// the whole tile width is written to rmax[i] (so the softmax needs no pass of its own for them).
/// f32 with \p ktb (the (batch, KV head)'s key tiles transposed once per run; \p j0 a multiple of
/// the tile width): the tile is read from there, not transposed into \p kt.
template <class T, class A, int VW>
[[gnu::always_inline]] inline void tile_scores(const AttnParams<T>& p, const T* qb, const T* kb,
                                               std::int64_t j0, std::int64_t qn, std::int64_t jn,
                                               A* s, A* kt, const A* ktb, A scale, A* rmax) {
  if constexpr (std::is_same_v<T, float>) {
    const float* ktile = ktb ? ktb + j0 / kTileK * p.d * kTileK : kt;
    for (std::int64_t j = 0; j < kTileK && !ktb; ++j) {
      if (j >= jn) { // padding keys: scores of 0, masked to -inf later
        for (std::int64_t d = 0; d < p.d; ++d)
          kt[d * kTileK + j] = 0.0f;
        continue;
      }
      const float* kj = kb + (j0 + j) * p.k_s;
      for (std::int64_t d = 0; d < p.d; ++d)
        kt[d * kTileK + j] = kj[d];
    }
    using V = typename AttnVec<VW>::V;
    constexpr std::int64_t rows = kRows<VW>;
    for (std::int64_t i0 = 0; i0 < qn; i0 += rows) {
      const float* q[rows];
      for (std::int64_t r = 0; r < rows; ++r)
        q[r] = qb + std::min(i0 + r, qn - 1) * p.q_s; // a short block repeats its last row
      constexpr float kNegInf = -__builtin_inff();
      V mx[rows];
#pragma GCC unroll 8
      for (std::int64_t r = 0; r < rows; ++r)
        mx[r] = V{} + kNegInf;
      // rows x 2 VW blocks of scores in registers; the key tile and the score rows are 64-byte
      // aligned (the task's scratch slice).
      for (std::int64_t jc = 0; jc < kTileK; jc += 2 * VW) {
        V c0[rows] = {}, c1[rows] = {};
        for (std::int64_t d = 0; d < p.d; ++d) {
          const V k0 = *reinterpret_cast<const V*>(ktile + d * kTileK + jc);
          const V k1 = *reinterpret_cast<const V*>(ktile + d * kTileK + jc + VW);
#pragma GCC unroll 8
          for (std::int64_t r = 0; r < rows; ++r) {
            const float qv = q[r][d];
            c0[r] += qv * k0;
            c1[r] += qv * k1;
          }
        }
#pragma GCC unroll 8
        for (std::int64_t r = 0; r < rows; ++r) {
          c0[r] *= scale;
          c1[r] *= scale;
          if (rmax) { // NaN scores are passed over, as in the softmax's own max
            mx[r] = c0[r] > mx[r] ? c0[r] : mx[r];
            mx[r] = c1[r] > mx[r] ? c1[r] : mx[r];
          }
        }
        for (std::int64_t r = 0; r < rows && i0 + r < qn; ++r) {
          *reinterpret_cast<V*>(s + (i0 + r) * kTileK + jc) = c0[r];
          *reinterpret_cast<V*>(s + (i0 + r) * kTileK + jc + VW) = c1[r];
        }
      }
      for (std::int64_t r = 0; rmax && r < rows && i0 + r < qn; ++r) {
        float m = mx[r][0];
        for (int l = 1; l < VW; ++l)
          m = mx[r][l] > m ? mx[r][l] : m;
        rmax[i0 + r] = m;
      }
    }
  } else {
    (void)ktb;
    (void)scale;
    (void)rmax;
    for (std::int64_t i = 0; i < qn; ++i) {
      const T* qi = qb + i * p.q_s;
      for (std::int64_t j = 0; j < jn; ++j) {
        const T* kj = kb + (j0 + j) * p.k_s;
        A dot = 0;
        for (std::int64_t d = 0; d < p.d; ++d)
          dot += static_cast<A>(to_compute<T>(qi[d])) * static_cast<A>(to_compute<T>(kj[d]));
        s[i * kTileK + j] = dot;
      }
    }
  }
}

/// acc_i = corr_i acc_i + Σ_j p_ij v_j over a tile (corr_i: the online softmax's rescale of the
/// sums so far). f32: a kRows<VW> x 2 VW block of accumulators stays in registers while the
/// tile's value rows stream past.
template <class T, class A, int VW>
[[gnu::always_inline]] inline void tile_values(const AttnParams<T>& p, const T* vb, std::int64_t j0,
                                               std::int64_t qn, std::int64_t jn, const A* s,
                                               const A* corr, A* acc) {
  if constexpr (std::is_same_v<T, float>) {
    using V = typename AttnVec<VW>::V;
    using U = typename AttnVec<VW>::U;
    constexpr std::int64_t kCols = 2 * VW, kR = kRows<VW>;
    for (std::int64_t i0 = 0; i0 < qn; i0 += kR) {
      std::int64_t rows = std::min(kR, qn - i0);
      for (std::int64_t c0 = 0; c0 < p.dv; c0 += kCols) {
        if (p.dv - c0 >= kCols) {
          V a0[kR], a1[kR];
#pragma GCC unroll 8
          for (std::int64_t r = 0; r < kR; ++r) {
            const float* ar = acc + (i0 + r) * p.dv + c0;
            a0[r] = r < rows ? *reinterpret_cast<const U*>(ar) * corr[i0 + r] : V{};
            a1[r] = r < rows ? *reinterpret_cast<const U*>(ar + VW) * corr[i0 + r] : V{};
          }
          for (std::int64_t j = 0; j < jn; ++j) {
            const V v0 = *reinterpret_cast<const U*>(vb + (j0 + j) * p.v_s + c0);
            const V v1 = *reinterpret_cast<const U*>(vb + (j0 + j) * p.v_s + c0 + VW);
#pragma GCC unroll 8
            for (std::int64_t r = 0; r < kR; ++r) {
              const float pr = r < rows ? s[(i0 + r) * kTileK + j] : 0.0f;
              a0[r] += pr * v0;
              a1[r] += pr * v1;
            }
          }
          for (std::int64_t r = 0; r < rows; ++r) {
            float* ar = acc + (i0 + r) * p.dv + c0;
            *reinterpret_cast<U*>(ar) = a0[r];
            *reinterpret_cast<U*>(ar + VW) = a1[r];
          }
        } else {
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t d = c0; d < p.dv; ++d)
              acc[(i0 + r) * p.dv + d] *= corr[i0 + r];
          for (std::int64_t j = 0; j < jn; ++j) {
            const float* vj = vb + (j0 + j) * p.v_s;
            for (std::int64_t r = 0; r < rows; ++r) {
              float pr = s[(i0 + r) * kTileK + j];
              float* ar = acc + (i0 + r) * p.dv;
#pragma omp simd
              for (std::int64_t d = c0; d < p.dv; ++d)
                ar[d] += pr * vj[d];
            }
          }
        }
      }
    }
  } else {
    for (std::int64_t i = 0; i < qn; ++i)
      for (std::int64_t d = 0; corr[i] != A{1} && d < p.dv; ++d)
        acc[i * p.dv + d] *= corr[i];
    for (std::int64_t i = 0; i < qn; ++i)
      for (std::int64_t j = 0; j < jn; ++j) {
        A pj = s[i * kTileK + j];
        if (pj == A{0})
          continue;
        const T* vj = vb + (j0 + j) * p.v_s;
        A* ai = acc + i * p.dv;
        for (std::int64_t d = 0; d < p.dv; ++d)
          ai[d] += pj * static_cast<A>(to_compute<T>(vj[d]));
      }
  }
}

/// One (batch, head, query block) task. \p A is the compute type (float for f32, double for f64);
/// \p VW the f32 micro-kernels' vector width (AttnVec).
template <class T, class A, int VW = 8>
[[gnu::always_inline]] inline void attention_task(const AttnParams<T>& p, std::int64_t task,
                                                  A* scratch) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  std::int64_t blk = task % p.blocks_per_head, bh = task / p.blocks_per_head;
  std::int64_t h = bh % p.heads, b = bh / p.heads;
  std::int64_t kh = attention_kv_head(p, h);
  std::int64_t q0 = blk * kBlockQ, qn = std::min(kBlockQ, p.sq - q0);
  A* s = scratch;               // [Bq][Tk] scores
  A* kt = s + kBlockQ * kTileK; // [D][Tk] transposed key tile (f32)
  A* acc = kt + p.d * kTileK;   // [Bq][Dv]
  A* m = acc + kBlockQ * p.dv;  // [Bq] running max
  A* l = m + kBlockQ;           // [Bq] running sum
  A* rmax = l + kBlockQ;        // [Bq] the tile's row maxima (f32, whole tiles)
  A* corr = rmax + kBlockQ;     // [Bq] the accumulators' rescale factors
  for (std::int64_t i = 0; i < qn; ++i) {
    m[i] = kNegInf;
    l[i] = 0;
  }
  for (std::int64_t i = 0; i < qn * p.dv; ++i)
    acc[i] = 0;

  const T* qb = p.q + b * p.q_b + h * p.q_h + q0 * p.q_s;
  const T* kb = p.k + b * p.k_b + kh * p.k_h;
  const T* vb = p.v + b * p.v_b + kh * p.v_h;
  const A* ktb = nullptr;
  if constexpr (std::is_same_v<T, A>)
    ktb = p.kt ? p.kt + (b * p.kv_heads + kh) * attention_tiles(p.sk) * p.d * kTileK : nullptr;
  auto [jmin, jmax] = attention_key_range(p, q0, qn);
  // Transposed tiles start at multiples of the tile width: a sliding window's first tile starts
  // earlier, its extra keys hidden by the mask like any key before the window.
  if (ktb)
    jmin = jmin / kTileK * kTileK;
  const auto scale = static_cast<A>(p.scale);
  const auto cap = static_cast<A>(p.softcap);

  constexpr bool kF32 = std::is_same_v<T, float>; // scores come scaled from tile_scores

  for (std::int64_t j0 = jmin; j0 < jmax; j0 += kTileK) {
    std::int64_t jn = std::min(kTileK, jmax - j0);
    // A whole tile that every row of the block sees unchanged: the scores' row maxima come from
    // tile_scores' registers.
    const bool plain = kF32 && cap == A{0} && !p.bias && !p.keep && jn == kTileK &&
                       attention_tile_unmasked(p, q0, qn, j0, kTileK);
    tile_scores<T, A, VW>(p, qb, kb, j0, qn, jn, s, kt, ktb, scale, plain ? rmax : nullptr);
    // Scale (but for f32), softcap, bias and masks. Entries past jn are -inf, so the vector loops
    // below run the full, aligned tile width (no scalar peel or remainder) and those keys weigh 0.
    for (std::int64_t i = 0; !plain && i < qn; ++i)
      attention_score_row<T, A>(p, b, h, q0 + i, j0, jn, kTileK,
                                std::assume_aligned<64>(s + i * kTileK), nullptr,
                                kF32 ? A{1} : scale, cap);
    // Online softmax: p_ij = e^(s_ij - m'_i), the running sums rescaled by e^(m_i - m'_i) (in
    // tile_values, as the accumulators are loaded).
    for (std::int64_t i = 0; i < qn; ++i) {
      A* si = std::assume_aligned<64>(s + i * kTileK);
      A row_max = kNegInf;
      if (plain) {
        row_max = rmax[i];
      } else {
#pragma omp simd reduction(max : row_max)
        for (std::int64_t j = 0; j < kTileK; ++j)
          row_max = si[j] > row_max ? si[j] : row_max;
      }
      A m_new = row_max > m[i] ? row_max : m[i];
      corr[i] = 1;
      if (m_new == kNegInf) { // nothing visible yet in this row
        for (std::int64_t j = 0; j < kTileK; ++j)
          si[j] = 0;
        continue;
      }
      const A ci = m[i] == kNegInf ? A{0} : static_cast<A>(std::exp(m[i] - m_new));
      A sum = 0;
      if constexpr (std::is_same_v<A, float>) {
#pragma omp simd reduction(+ : sum)
        for (std::int64_t j = 0; j < kTileK; ++j) {
          si[j] = simd::exp_nonpositive(si[j] - m_new); // m_new is the row's max
          sum += si[j];
        }
      } else {
        for (std::int64_t j = 0; j < kTileK; ++j) {
          si[j] = std::exp(si[j] - m_new);
          sum += si[j];
        }
      }
      l[i] = l[i] * ci + sum;
      m[i] = m_new;
      corr[i] = ci;
    }
    tile_values<T, A, VW>(p, vb, j0, qn, jn, s, corr, acc);
  }
  // Normalise and store.
  T* ob = p.o + b * p.o_b + h * p.o_h + q0 * p.o_s;
  for (std::int64_t i = 0; i < qn; ++i) {
    T* oi = ob + i * p.o_s;
    A inv = l[i] > 0 ? A{1} / l[i] : A{0};
    const A* ai = acc + i * p.dv;
    for (std::int64_t d = 0; d < p.dv; ++d)
      oi[d] = from_compute<T>(static_cast<compute_t<T>>(ai[d] * inv));
  }
}

/// The f32 task, compiled once per instruction set, with AVX2-wide micro-kernels.
RLX_CPU_MULTIVERSION void attention_task_f32(const AttnParams<float>& p, std::int64_t task,
                                             float* scratch) {
  attention_task<float, float, 8>(p, task, scratch);
}

/// The \p jn keys at \p k (rows \p k_s floats apart, \p d features) transposed into \p dst
/// ([D][Tk], zero past jn): 8 x 8 blocks through registers (unpack, then shuffle pairs, then
/// swap halves), elements one by one at the edges.
RLX_CPU_MULTIVERSION void transpose_key_tile(const float* k, std::int64_t k_s, std::int64_t d,
                                             std::int64_t jn, float* dst) {
  using V = AttnVec<8>::V;
  using U = AttnVec<8>::U;
  const std::int64_t j8 = jn / 8 * 8, d8 = d / 8 * 8;
  for (std::int64_t j = 0; j < j8; j += 8)
    for (std::int64_t f = 0; f < d8; f += 8) {
      V r[8], t[8], u[8];
      for (int i = 0; i < 8; ++i)
        r[i] = *reinterpret_cast<const U*>(k + (j + i) * k_s + f);
      for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
      }
      for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; ++h) {
          u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
          u[i + 2 * h + 1] =
              __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
      for (int i = 0; i < 4; ++i) {
        *reinterpret_cast<U*>(dst + (f + i) * kTileK + j) =
            __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        *reinterpret_cast<U*>(dst + (f + i + 4) * kTileK + j) =
            __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
      }
    }
  for (std::int64_t j = 0; j < jn; ++j)
    for (std::int64_t f = j < j8 ? d8 : 0; f < d; ++f)
      dst[f * kTileK + j] = k[j * k_s + f];
  for (std::int64_t f = 0; jn < kTileK && f < d; ++f)
    std::fill(dst + f * kTileK + jn, dst + (f + 1) * kTileK, 0.0f);
}

/// One f32 task's function.
using AttnTaskF32 = void (*)(const AttnParams<float>&, std::int64_t, float*);

#if defined(__x86_64__) && defined(__GNUC__)
/// The f32 task with AVX-512-wide micro-kernels (8 x 32 register blocks), for x86-64-v4 CPUs
/// only. Everything it calls is inlined into it or compiled for the baseline, so no AVX-512 code
/// reaches the other CPUs.
__attribute__((target("arch=x86-64-v4"))) void
attention_task_f32_avx512(const AttnParams<float>& p, std::int64_t task, float* scratch) {
  attention_task<float, float, 16>(p, task, scratch);
}
#endif

/// The f32 task for this CPU: AVX-512-wide where the packed GEMM runs AVX-512 code (the CPU has
/// x86-64-v4 and RLX_GEMM_ISA does not cap it), else the multiversioned one.
AttnTaskF32 f32_task() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (packed::best_isa() == packed::Isa::avx512)
    return attention_task_f32_avx512;
#endif
  return attention_task_f32;
}

/// Scratch: per thread one task's tiles (64-byte aligned slices), plus the padding keep flags.
std::int64_t thread_slice_bytes(const NodeView& n) {
  const AttnDims s = attention_dims(n);
  return attention_slice_bytes(s.d, s.dv, n.out().dtype == ir::DType::f32 ? 4 : 8);
}
/// Scratch: the thread slices, the padding keep flags, then (f32) the keys transposed per run.
std::int64_t attention_scratch(const NodeView& n) {
  const AttnDims s = attention_dims(n);
  return thread_slice_bytes(n) * n.threads +
         attention_keep_bytes(n.node().attr<ir::AttentionAttrs>().mask, s.batch, s.sk) +
         (n.out().dtype == ir::DType::f32 ? attention_kt_bytes(s.batch, s.kv_heads, s.sk, s.d) : 0);
}

template <class T> class AttentionKernel final : public Kernel {
public:
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;

  explicit AttentionKernel(const LowerContext& c)
      : p_(attention_params<T>(c, c.out().sizes())), slice_(thread_slice_bytes(c)) {
    p_.o = reinterpret_cast<T*>(c.dst());
    tasks_ = p_.batch * p_.heads * p_.blocks_per_head;
    threads_ = c.threads;
    scratch_ = c.scratch(attention_scratch(c));
    mask_.bind(c, 3, p_, scratch_ + slice_ * c.threads);
    const AttnDims s = attention_dims(c);
    kt_ = reinterpret_cast<float*>(
        scratch_ + slice_ * c.threads +
        attention_keep_bytes(c.node().attr<ir::AttentionAttrs>().mask, s.batch, s.sk));
  }

  void run(ExecContext& ctx) override {
    mask_.refresh();
    if constexpr (std::is_same_v<T, float>) {
      run_attention_f32(ctx, p_, scratch_, slice_, threads_, kt_);
    } else {
      parallel_for_slots(ctx, tasks_, 1, [&](std::int64_t b, std::int64_t e, int slot) {
        A* scratch = reinterpret_cast<A*>(scratch_ + slice_ * (slot < threads_ ? slot : 0));
        for (std::int64_t t = b; t < e; ++t)
          attention_task<T, A>(p_, t, scratch);
      });
    }
  }

private:
  AttnParams<T> p_;
  std::int64_t slice_;
  std::int64_t tasks_ = 0;
  int threads_ = 1;
  std::byte* scratch_ = nullptr;
  float* kt_ = nullptr; ///< the keys transposed per run (f32)
  AttnMaskInput mask_;
};

std::unique_ptr<Kernel> make_attention(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<AttentionKernel<T>>(c);
    else
      throw Error("rlx-cpu: " + c.what() + ": attention of a non-float type");
  });
}

constexpr KernelImpl kAttention[] = {{"tbb", accept_all, attention_scratch, make_attention}};

// ---- Rope
// ----------------------------------------------------------------------------------------

/// Rotary embedding with cos / sin tables built at compile time (in double, rounded once); for
/// RopeGrad (rope's VJP) the sines are negated: the inverse rotation.
template <class T> class RopeKernel final : public Kernel {
public:
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;

  explicit RopeKernel(const LowerContext& c)
      : x_(reinterpret_cast<const T*>(c.src(0))), y_(reinterpret_cast<T*>(c.dst())) {
    const auto& a = c.node().attr<ir::RopeAttrs>();
    auto s = c.in(0).sizes();
    bool bshd = a.layout == ir::AttnLayout::bshd;
    b_ = s[0];
    s_ = bshd ? s[1] : s[2];
    h_ = bshd ? s[2] : s[1];
    d_ = s[3];
    bshd_ = bshd;
    const double sign = c.node().op == ir::OpKind::RopeGrad ? -1.0 : 1.0; // rope_grad turns back
    table_ =
        RopeTable<A>(a.style, a.n_rot == 0 ? d_ : a.n_rot, a.position_offset, a.theta, s_, sign);
  }
  void run(ExecContext& ctx) override {
    std::int64_t rows = b_ * s_ * h_;
    parallel_for(ctx, rows, grain_for(d_ * 4), [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        // Row r enumerates the buffer's rows in memory order; recover its sequence position.
        std::int64_t pos = bshd_ ? (r / h_) % s_ : r % s_;
        const T* x = x_ + r * d_;
        T* y = y_ + r * d_;
        std::memcpy(y, x, static_cast<std::size_t>(d_) * sizeof(T));
        table_.rotate(x, y, pos);
      }
    });
  }

private:
  const T* x_;
  T* y_;
  std::int64_t b_ = 0, s_ = 0, h_ = 0, d_ = 0;
  bool bshd_ = true;
  RopeTable<A> table_;
};

std::unique_ptr<Kernel> make_rope(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<RopeKernel<T>>(c);
    else
      throw Error("rlx-cpu: " + c.what() + ": rope of a non-float type");
  });
}

constexpr KernelImpl kRope[] = {{"tbb", accept_all, nullptr, make_rope}};

} // namespace

void attention_layout_strides(const std::vector<std::int64_t>& sizes, ir::AttnLayout layout,
                              std::int64_t& sb, std::int64_t& sh, std::int64_t& ss) {
  const std::int64_t d = sizes[3];
  if (layout == ir::AttnLayout::bshd) {
    ss = sizes[2] * d;
    sh = d;
  } else {
    sh = sizes[2] * d;
    ss = d;
  }
  sb = sizes[1] * sizes[2] * d;
}

AttnDims attention_dims(const NodeView& n) {
  const auto& a = n.node().attr<ir::AttentionAttrs>();
  const auto q = n.in(0).sizes(), k = n.in(1).sizes(), v = n.in(2).sizes();
  const bool bshd = a.layout == ir::AttnLayout::bshd;
  return {q[0], a.num_heads, a.num_kv_heads, bshd ? q[1] : q[2], bshd ? k[1] : k[2], q[3], v[3]};
}

void AttnMaskInput::refresh() const {
  if (keep_)
    visit_dtype(dtype_, [&]<class M>() {
      const M* m = reinterpret_cast<const M*>(mask_);
      for (std::int64_t i = 0; i < count_; ++i)
        keep_[i] = to_compute<M>(m[i]) != 0;
    });
}

std::int64_t attention_slice_bytes(std::int64_t d, std::int64_t dv, std::int64_t elem) {
  return (task_scratch_elems(d, dv) * elem + 63) / 64 * 64;
}

void attention_bias_strides(const std::vector<std::int64_t>& sizes, std::int64_t st[4]) {
  std::vector<std::int64_t> full(4 - sizes.size(), 1);
  full.insert(full.end(), sizes.begin(), sizes.end());
  std::int64_t acc = 1;
  for (int d = 3; d >= 0; --d) {
    st[d] = full[static_cast<std::size_t>(d)] == 1 ? 0 : acc;
    acc *= full[static_cast<std::size_t>(d)];
  }
}

void run_attention_f32(ExecContext& ctx, const AttnParams<float>& p, std::byte* scratch,
                       std::int64_t slice, int threads, float* kt) {
  AttnParams<float> pt = p;
  if (kt) {
    // Each (batch, KV head, key tile) once, in parallel: [D][Tk] blocks, zero past Sk.
    const std::int64_t tiles = attention_tiles(p.sk);
    parallel_for(ctx, p.batch * p.kv_heads * tiles, 1, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t bh = t / tiles, j0 = (t % tiles) * kTileK;
        const std::int64_t b = bh / p.kv_heads, kh = bh % p.kv_heads;
        const std::int64_t jn = std::min(kTileK, p.sk - j0);
        const float* k = p.k + b * p.k_b + kh * p.k_h + j0 * p.k_s;
        transpose_key_tile(k, p.k_s, p.d, jn, kt + t * p.d * kTileK);
      }
    });
    pt.kt = kt;
  }
  const std::int64_t tasks = pt.batch * pt.heads * pt.blocks_per_head;
  static const AttnTaskF32 task_f32 = f32_task();
  parallel_for_slots(ctx, tasks, 1, [&](std::int64_t b, std::int64_t e, int slot) {
    auto* s = reinterpret_cast<float*>(scratch + slice * (slot < threads ? slot : 0));
    for (std::int64_t t = b; t < e; ++t)
      task_f32(pt, t, s);
  });
}

std::span<const KernelImpl> attention_impls() {
  return kAttention;
}
std::span<const KernelImpl> rope_impls() {
  return kRope;
}

} // namespace rlx::cpu
