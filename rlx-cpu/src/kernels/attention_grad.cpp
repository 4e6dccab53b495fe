// attention_grad.cpp: AttentionGrad (ops.def "backward ops 2"), the VJP of attention for q, k and
// v, in the style of flash attention's backward: per block of query rows, never an Sq×Sk matrix.
// The tile setup (strides, GQA mapping, scale / softcap, the score row with its mask predicate, the
// visible key range, the mask operand) is the forward's, from attention_core.hpp.
//
// Tasks are (batch, KV head) pairs on the TBB pool, so dK / dV of a KV head (summed over the query
// heads of its GQA group) belong to one task: no atomics, no reduction afterwards. Per query head
// of the group and block of query rows, over the keys the block can see:
//   s_ij = scale q_i·k_j -> softcap c tanh(s/c) -> + bias -> -inf where masked;
//   p_ij = e^(s_ij - m_i) / l_i (the forward's softmax, recomputed: the op reads out, not a saved
//          logsumexp; 0 where masked or the row has no kept key);
//   D_i = dout_i · out_i (= Σ_j p_ij dp_ij), dp_ij = dout_i · v_j,
//   ds_ij = p_ij (dp_ij - D_i) (1 - t_ij^2 under a softcap) scale;
//   dq_i = Σ_j ds_ij k_j, dk_j += Σ_i ds_ij q_i, dv_j += Σ_i p_ij dout_i.
// f32: the five products are calls of the packed GEMM's block entry (gemm_packed.hpp) on
// cache-resident tiles; a block holds its rows' scores over every visible key, so the row max and
// sum come from one pass (no online rescaling). f64: the same math in scalar 32×64 tiles, two
// passes (statistics, then products).
#include "attention_core.hpp"

#include "../dtypes.hpp"
#include "../gemm_packed.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace rlx::cpu {
namespace {

constexpr std::int64_t kBq = kAttnBlockQ; ///< query rows per block
constexpr std::int64_t kTk = kAttnTileK;  ///< keys per tile

/// Everything a task needs, resolved at compile time: the forward's parameters (q, k, v, their
/// strides; o's strides are those of out, dout and the dq / dk / dv parts follow q / k / v), plus
/// the backward's operands and results.
template <class T> struct GradParams {
  AttnParams<T> a;
  const T *o, *dout;
  T *dq, *dk, *dv;
  T scale, softcap; ///< a.scale / a.softcap in T
};

/// Scratch elements of one task: dK, dV accumulators, three score-sized tiles, the transposed key
/// and value tiles, dq accumulators and the row statistics.
std::int64_t task_elems(std::int64_t sk, std::int64_t d, std::int64_t dv) {
  return sk * (d + dv) + 3 * kBq * kTk + (d + dv) * kTk + kBq * d + 3 * kBq;
}

constexpr std::int64_t kRows = 4;  ///< rows per register block of tile_dots
constexpr std::int64_t kCols = 64; ///< columns per register block of accumulate_rows

/// out[i][j] = a_i · b_j for \p rows rows of \p a (row stride \p as) and the kTk columns of the
/// transposed tile \p bt ([len][kTk]): an axpy over len vectorised across the tile's columns, four
/// rows per pass.
template <class T>
[[gnu::always_inline]] inline void tile_dots(const T* a, std::int64_t as, std::int64_t rows,
                                             const T* bt, std::int64_t len, T* out) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += kRows) {
    T c[kRows][kTk] = {};
    const T* ar[kRows];
    for (std::int64_t r = 0; r < kRows; ++r)
      ar[r] = a + std::min(i0 + r, rows - 1) * as; // a short block repeats its last row
    for (std::int64_t e = 0; e < len; ++e) {
      const T* be = bt + e * kTk;
      for (std::int64_t r = 0; r < kRows; ++r) {
        const T av = ar[r][e];
#pragma omp simd
        for (std::int64_t j = 0; j < kTk; ++j)
          c[r][j] += av * be[j];
      }
    }
    for (std::int64_t r = 0; r < kRows && i0 + r < rows; ++r)
      std::copy(c[r], c[r] + kTk, out + (i0 + r) * kTk);
  }
}

/// dst[0, len) += sum_i coef[i cs] src_i with src_i = src + i ss, for i < n (zero coefficients
/// skipped: masked keys). Blocks of 64 columns stay in a local accumulator across the rows.
template <class T>
[[gnu::always_inline]] inline void accumulate_rows(const T* coef, std::int64_t cs, std::int64_t n,
                                                   const T* src, std::int64_t ss, T* dst,
                                                   std::int64_t len) {
  std::int64_t c0 = 0;
  for (; c0 + kCols <= len; c0 += kCols) {
    T acc[kCols];
    std::copy(dst + c0, dst + c0 + kCols, acc);
    for (std::int64_t i = 0; i < n; ++i) {
      const T w = coef[i * cs];
      if (w == T(0))
        continue;
      const T* si = src + i * ss + c0;
#pragma omp simd
      for (std::int64_t e = 0; e < kCols; ++e)
        acc[e] += w * si[e];
    }
    std::copy(acc, acc + kCols, dst + c0);
  }
  if (c0 == len)
    return;
  for (std::int64_t i = 0; i < n; ++i) {
    const T w = coef[i * cs];
    if (w == T(0))
      continue;
    const T* si = src + i * ss;
#pragma omp simd
    for (std::int64_t e = c0; e < len; ++e)
      dst[e] += w * si[e];
  }
}

/// \p bt[e][j] = row j0 + j of \p x (row stride \p xs), element e, for j < jn; 0 past jn.
template <class T>
[[gnu::always_inline]] inline void pack_transposed(const T* x, std::int64_t xs, std::int64_t j0,
                                                   std::int64_t jn, std::int64_t len, T* bt) {
  for (std::int64_t j = 0; j < kTk; ++j) {
    if (j >= jn) {
      for (std::int64_t e = 0; e < len; ++e)
        bt[e * kTk + j] = T(0);
      continue;
    }
    const T* xj = x + (j0 + j) * xs;
    for (std::int64_t e = 0; e < len; ++e)
      bt[e * kTk + j] = xj[e];
  }
}

/// Scores of rows [q0, q0 + qn) against keys [j0, j0 + jn) of head h into \p s (row stride kTk,
/// keys from the transposed tile \p kt): scaled, soft-capped (tanh values into \p th), biased and
/// masked (-inf, also past jn).
template <class T>
[[gnu::always_inline]] inline void
tile_scores(const GradParams<T>& p, std::int64_t b, std::int64_t h, const T* qb, const T* kt,
            std::int64_t q0, std::int64_t qn, std::int64_t j0, std::int64_t jn, T* s, T* th) {
  tile_dots(qb, p.a.q_s, qn, kt, p.a.d, s);
  for (std::int64_t i = 0; i < qn; ++i)
    attention_score_row<T, T>(p.a, b, h, q0 + i, j0, jn, kTk, s + i * kTk, th + i * kTk, p.scale,
                              p.softcap);
}

/// One (batch, KV head) task of the scalar path (f64): per block, pass 1 the softmax statistics
/// over 64-key tiles (online max / sum), pass 2 the products tile by tile.
template <class T>
[[gnu::always_inline]] inline void grad_task(const GradParams<T>& p, std::int64_t task,
                                             T* scratch) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const AttnParams<T>& a = p.a;
  const std::int64_t kh = task % a.kv_heads, b = task / a.kv_heads;
  const std::int64_t group = a.heads / a.kv_heads, d = a.d, dvd = a.dv;
  T* dk = scratch;        // [Sk][D]
  T* dv = dk + a.sk * d;  // [Sk][Dv]
  T* s = dv + a.sk * dvd; // [Bq][Tk] scores, then probabilities
  T* dp = s + kBq * kTk;  // [Bq][Tk] dout·v, then ds
  T* th = dp + kBq * kTk; // [Bq][Tk] tanh of the soft-capped scores
  T* kt = th + kBq * kTk; // [D][Tk] the key tile, transposed
  T* vt = kt + d * kTk;   // [Dv][Tk] the value tile, transposed
  T* dq = vt + dvd * kTk; // [Bq][D]
  T* m = dq + kBq * d;    // [Bq] row max
  T* l = m + kBq;         // [Bq] row sum, then its inverse
  T* rowdot = l + kBq;    // [Bq] dout·out
  std::fill(dk, dk + a.sk * (d + dvd), T(0));
  const T* kb = a.k + b * a.k_b + kh * a.k_h;
  const T* vb = a.v + b * a.v_b + kh * a.v_h;
  for (std::int64_t g = 0; g < group; ++g) {
    const std::int64_t h = kh * group + g;
    for (std::int64_t q0 = 0; q0 < a.sq; q0 += kBq) {
      const std::int64_t qn = std::min(kBq, a.sq - q0);
      const T* qb = a.q + b * a.q_b + h * a.q_h + q0 * a.q_s;
      const T* ob = p.o + b * a.o_b + h * a.o_h + q0 * a.o_s;
      const T* gb = p.dout + b * a.o_b + h * a.o_h + q0 * a.o_s;
      T* dqb = p.dq + b * a.q_b + h * a.q_h + q0 * a.q_s;
      const auto [jmin, jmax] = attention_key_range(a, q0, qn);
      // Pass 1: the softmax statistics of every row of the block.
      for (std::int64_t i = 0; i < qn; ++i) {
        m[i] = kNegInf;
        l[i] = 0;
      }
      for (std::int64_t j0 = jmin; j0 < jmax; j0 += kTk) {
        const std::int64_t jn = std::min(kTk, jmax - j0);
        pack_transposed(kb, a.k_s, j0, jn, d, kt);
        tile_scores(p, b, h, qb, kt, q0, qn, j0, jn, s, th);
        for (std::int64_t i = 0; i < qn; ++i) {
          const T* si = s + i * kTk;
          T mx = kNegInf;
#pragma omp simd reduction(max : mx)
          for (std::int64_t j = 0; j < kTk; ++j)
            mx = si[j] > mx ? si[j] : mx;
          if (mx == kNegInf)
            continue;
          const T mn = std::max(m[i], mx);
          T sum = 0;
          if constexpr (std::is_same_v<T, float>) {
#pragma omp simd reduction(+ : sum)
            for (std::int64_t j = 0; j < kTk; ++j)
              sum += simd::exp(si[j] - mn);
          } else {
            for (std::int64_t j = 0; j < kTk; ++j)
              sum += std::exp(si[j] - mn);
          }
          l[i] = (m[i] == kNegInf ? T(0) : l[i] * std::exp(m[i] - mn)) + sum;
          m[i] = mn;
        }
      }
      for (std::int64_t i = 0; i < qn; ++i) {
        l[i] = l[i] > 0 ? T(1) / l[i] : T(0); // 1 / l (0: no kept key, every p is 0)
        const T* oi = ob + i * a.o_s;
        const T* gi = gb + i * a.o_s;
        T acc = 0;
#pragma omp simd reduction(+ : acc)
        for (std::int64_t e = 0; e < dvd; ++e)
          acc += gi[e] * oi[e];
        rowdot[i] = acc;
      }
      std::fill(dq, dq + qn * d, T(0));
      // Pass 2: probabilities, ds and the three products, tile by tile.
      for (std::int64_t j0 = jmin; j0 < jmax; j0 += kTk) {
        const std::int64_t jn = std::min(kTk, jmax - j0);
        pack_transposed(kb, a.k_s, j0, jn, d, kt);
        pack_transposed(vb, a.v_s, j0, jn, dvd, vt);
        tile_scores(p, b, h, qb, kt, q0, qn, j0, jn, s, th);
        tile_dots(gb, a.o_s, qn, vt, dvd, dp);
        for (std::int64_t i = 0; i < qn; ++i) {
          T* si = s + i * kTk;
          T* di = dp + i * kTk;
          const T mi = m[i] == kNegInf ? T(0) : m[i], li = l[i], ri = rowdot[i];
          if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
            for (std::int64_t j = 0; j < kTk; ++j) // exp(-inf) = 0: masked keys, dead rows
              si[j] = simd::exp(si[j] - mi) * li;
          } else {
            for (std::int64_t j = 0; j < kTk; ++j)
              si[j] = std::exp(si[j] - mi) * li;
          }
#pragma omp simd
          for (std::int64_t j = 0; j < kTk; ++j)
            di[j] = si[j] * (di[j] - ri) * p.scale;
          if (p.softcap > 0) {
            const T* ti = th + i * kTk;
            for (std::int64_t j = 0; j < jn; ++j)
              di[j] *= T(1) - ti[j] * ti[j];
          }
        }
        for (std::int64_t i = 0; i < qn; ++i)
          accumulate_rows(dp + i * kTk, 1, jn, kb + j0 * a.k_s, a.k_s, dq + i * d, d);
        for (std::int64_t j = 0; j < jn; ++j) {
          accumulate_rows(dp + j, kTk, qn, qb, a.q_s, dk + (j0 + j) * d, d);
          accumulate_rows(s + j, kTk, qn, gb, a.o_s, dv + (j0 + j) * dvd, dvd);
        }
      }
      for (std::int64_t i = 0; i < qn; ++i)
        std::copy(dq + i * d, dq + (i + 1) * d, dqb + i * a.q_s);
    }
  }
  T* dkb = p.dk + b * a.k_b + kh * a.k_h;
  T* dvb = p.dv + b * a.v_b + kh * a.v_h;
  for (std::int64_t j = 0; j < a.sk; ++j) {
    std::copy(dk + j * d, dk + (j + 1) * d, dkb + j * a.k_s);
    std::copy(dv + j * dvd, dv + (j + 1) * dvd, dvb + j * a.v_s);
  }
}

// ---- f32: the five products as packed-GEMM calls on cache-resident tiles ---------------------

constexpr std::int64_t kF32Bq = 64;   ///< query rows per block (f32)
constexpr std::int64_t kF32Mc = 144;  ///< rows of A per packed block of dKᵀ / dVᵀ products
constexpr std::int64_t kF32Kc = 4096; ///< floats of a B micro-panel (kc x NR) kept in L1: 16 KiB

/// Where one f32 task's tiles lie in its scratch slice (offsets in floats, each 64-byte aligned):
/// the KV head's keys and values packed as GEMM B panels (Kᵀ and Vᵀ for the scores and dP, K for
/// dQ), the query block's S / P, dP / dS and (under a softcap) tanh rows over all keys, the block's
/// q and dout rows packed as B panels (for dK, dV) and the packed-A room.
struct F32Tiles {
  int mr = 0, nr = 0;
  std::int64_t ld = 0; ///< row stride of the S, dP and tanh tiles (Sk rounded up to NR)
  std::int64_t kc = 0; ///< K block of the products whose K is the key count
  std::int64_t kt = 0, vt = 0, kp = 0, s = 0, dp = 0, th = -1 /* none without a softcap */, qp = 0,
               gp = 0, ap = 0, total = 0;
};

F32Tiles f32_tiles(const AttnDims& a, bool softcap, packed::Isa isa) {
  const auto& kern = packed::kernels(isa);
  F32Tiles t;
  t.mr = kern.tile_rows();
  t.nr = kern.tile_cols();
  t.ld = (a.sk + t.nr - 1) / t.nr * t.nr;
  t.kc = std::max<std::int64_t>(t.mr, kF32Kc / t.nr);
  std::int64_t at = 0;
  auto take = [&](std::int64_t floats) {
    const std::int64_t o = at;
    at += (floats + 15) / 16 * 16;
    return o;
  };
  t.kt = take(packed::panel_floats(a.d, a.sk, t.nr));
  t.vt = take(packed::panel_floats(a.dv, a.sk, t.nr));
  t.kp = take(packed::panel_floats(a.sk, a.d, t.nr));
  t.s = take(kF32Bq * t.ld);
  t.dp = take(kF32Bq * t.ld);
  t.th = softcap ? take(kF32Bq * t.ld) : -1;
  t.qp = take(packed::panel_floats(kF32Bq, a.d, t.nr));
  t.gp = take(packed::panel_floats(kF32Bq, a.dv, t.nr));
  const std::int64_t mc = (kF32Mc + t.mr - 1) / t.mr * t.mr;
  const std::int64_t bq = (kF32Bq + t.mr - 1) / t.mr * t.mr;
  t.ap = take(std::max(mc * kF32Bq, bq * std::max({t.kc, a.d, a.dv})));
  t.total = at;
  return t;
}

/// C[i0:i1, j0:j1] (+)= A · B on one thread, through the packed GEMM's block entry: A(i, p) at
/// a[i rsa + p csa], B rows [k0, k0 + k) of a packing of b_rows rows, K in blocks of kc, M in
/// blocks of mc (the packed A room holds mc x kc).
void gemm(const packed::IsaKernels& kern, const float* a, std::int64_t rsa, std::int64_t csa,
          const float* b_pack, std::int64_t b_rows, std::int64_t k0, std::int64_t k, float* c,
          std::int64_t ldc, std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1,
          std::int64_t mc, std::int64_t kc, bool accumulate, float* a_pack, int nr) {
  packed::BlockArgs g;
  g.a = a;
  g.rsa = rsa;
  g.csa = csa;
  g.b_pack = b_pack + k0 * nr;
  g.b_rows = b_rows;
  g.c = c;
  g.ldc = ldc;
  g.k = k;
  g.kc = kc;
  g.j0 = j0;
  g.j1 = j1;
  g.a_pack = a_pack;
  g.accumulate = accumulate;
  for (std::int64_t i = i0; i < i1; i += mc) {
    g.i0 = i;
    g.i1 = std::min(i1, i + mc);
    kern.gemm_block(g);
  }
}

/// pack_b(x, 1, xs, len, n, dst) for a row-major X (n rows of len, row stride xs) read as
/// B(p, j) = X(j, p), i.e. Xᵀ in NR-column panels, zero-padded: by 8 × 8 blocks, each read as 8
/// row pieces and written as 8 panel-row pieces (the GEMM's gather reads one float per row). \p nr
/// is a multiple of 8 (8, 16, 32 on the three ISAs).
[[gnu::always_inline]] inline void pack_rows_transposed(const float* x, std::int64_t xs,
                                                        std::int64_t len, std::int64_t n, int nr,
                                                        float* dst) {
  constexpr int kB = 8;
  for (std::int64_t j0 = 0; j0 < n; j0 += nr) {
    float* panel = dst + j0 * len;
    for (std::int64_t jb = 0; jb < nr; jb += kB) {
      const std::int64_t rows = std::clamp<std::int64_t>(n - j0 - jb, 0, kB);
      for (std::int64_t p0 = 0; p0 < len; p0 += kB) {
        const std::int64_t cols = std::min<std::int64_t>(kB, len - p0);
        float blk[kB][kB];
        if (rows == kB && cols == kB) {
          for (int r = 0; r < kB; ++r)
            for (int c = 0; c < kB; ++c)
              blk[r][c] = x[(j0 + jb + r) * xs + p0 + c];
          for (int c = 0; c < kB; ++c)
            for (int r = 0; r < kB; ++r)
              panel[(p0 + c) * nr + jb + r] = blk[r][c];
          continue;
        }
        for (std::int64_t c = 0; c < cols; ++c)
          for (std::int64_t r = 0; r < kB; ++r)
            panel[(p0 + c) * nr + jb + r] = r < rows ? x[(j0 + jb + r) * xs + p0 + c] : 0.0f;
      }
    }
  }
}

/// Parts each (batch, KV head) pair's query blocks are split into (f32): 1 while there are at
/// least as many pairs as threads, else enough for every thread (at most one block each); each
/// part then accumulates dK / dV into a partial of its own, summed into the results afterwards.
std::int64_t f32_parts(const AttnDims& s, int threads) {
  const std::int64_t pairs = s.batch * s.kv_heads;
  if (pairs == 0 || pairs >= threads)
    return 1;
  const std::int64_t units = (s.heads / s.kv_heads) * ((s.sq + kF32Bq - 1) / kF32Bq);
  return std::clamp<std::int64_t>((threads + pairs - 1) / pairs, 1,
                                  std::max<std::int64_t>(units, 1));
}

/// Bytes of the dK / dV partials for \p parts parts (none for one part).
std::int64_t f32_partial_bytes(const AttnDims& s, std::int64_t parts) {
  return parts > 1 ? (s.batch * s.kv_heads * parts * s.sk * (s.d + s.dv) * 4 + 63) / 64 * 64 : 0;
}

/// One f32 task: part \p part of \p parts of a (batch, KV head) pair's (query head, block of Bq
/// query rows) units. Per unit, over the keys [ja, jb) the block can see (ja rounded down to the
/// tile width; the extra keys are masked):
///   S = Q Kᵀ and dP = dO Vᵀ (GEMMs into Bq x Sk tiles), the row math in place (P, dS),
///   dQ = dS K (straight into dq), dK += dSᵀ Q and dV += Pᵀ dO (into the results when the pair is
///   one part, else into the part's slice of \p partials).
RLX_CPU_MULTIVERSION void grad_task_f32(const GradParams<float>& p, std::int64_t task,
                                        std::int64_t parts, float* partials, float* scratch,
                                        const packed::IsaKernels& kern, const F32Tiles& t) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const AttnParams<float>& a = p.a;
  const std::int64_t pair = task / parts, part = task % parts;
  const std::int64_t kh = pair % a.kv_heads, b = pair / a.kv_heads;
  const std::int64_t group = a.heads / a.kv_heads, d = a.d, dvd = a.dv, sk = a.sk;
  const std::int64_t blocks = (a.sq + kF32Bq - 1) / kF32Bq, units = group * blocks;
  const int nr = t.nr;
  float* kt = scratch + t.kt;
  float* vt = scratch + t.vt;
  float* kp = scratch + t.kp;
  float* s = scratch + t.s;
  float* dp = scratch + t.dp;
  float* th = t.th >= 0 ? scratch + t.th : nullptr;
  float* qp = scratch + t.qp;
  float* gp = scratch + t.gp;
  float* ap = scratch + t.ap;
  const std::int64_t mc = (kF32Mc + t.mr - 1) / t.mr * t.mr;
  // dK / dV of a KV head split in one part are this task's alone: the products accumulate into
  // them in place. Otherwise into the part's partial ([Sk][D] then [Sk][Dv]).
  float* dk = p.dk + b * a.k_b + kh * a.k_h;
  float* dv = p.dv + b * a.v_b + kh * a.v_h;
  std::int64_t ldk = a.k_s, ldv = a.v_s;
  if (parts > 1) {
    dk = partials + task * sk * (d + dvd);
    dv = dk + sk * d;
    ldk = d;
    ldv = dvd;
  }
  for (std::int64_t j = 0; j < sk; ++j) {
    std::fill(dk + j * ldk, dk + j * ldk + d, 0.0f);
    std::fill(dv + j * ldv, dv + j * ldv + dvd, 0.0f);
  }
  const float* kb = a.k + b * a.k_b + kh * a.k_h;
  const float* vb = a.v + b * a.v_b + kh * a.v_h;
  // The KV head's tiles, packed once for the group's query heads and blocks: Kᵀ and Vᵀ (B of the
  // scores and of dP: column j is key j) and K (B of dQ: row j is key j).
  pack_rows_transposed(kb, a.k_s, d, sk, nr, kt);
  pack_rows_transposed(vb, a.v_s, dvd, sk, nr, vt);
  kern.pack_b(kb, a.k_s, 1, sk, d, kp);
  const float scale = p.scale, cap = p.softcap;
  for (std::int64_t u = part * units / parts; u < (part + 1) * units / parts; ++u) {
    const std::int64_t h = kh * group + u / blocks, q0 = u % blocks * kF32Bq;
    const std::int64_t qn = std::min(kF32Bq, a.sq - q0);
    const float* qb = a.q + b * a.q_b + h * a.q_h + q0 * a.q_s;
    const float* ob = p.o + b * a.o_b + h * a.o_h + q0 * a.o_s;
    const float* gb = p.dout + b * a.o_b + h * a.o_h + q0 * a.o_s;
    float* dqb = p.dq + b * a.q_b + h * a.q_h + q0 * a.q_s;
    const auto [jmin, jmax] = attention_key_range(a, q0, qn);
    if (jmin >= jmax) { // no key visible to the block: dq is 0, nothing reaches dk / dv
      for (std::int64_t i = 0; i < qn; ++i)
        std::fill(dqb + i * a.q_s, dqb + i * a.q_s + d, 0.0f);
      continue;
    }
    const std::int64_t ja = jmin / nr * nr, nk = jmax - ja;
    // S = Q Kᵀ and dP = dO Vᵀ over keys [ja, jmax) (the tiles' columns are absolute keys).
    gemm(kern, qb, a.q_s, 1, kt, d, 0, d, s, t.ld, 0, qn, ja, jmax, mc, t.kc, false, ap, nr);
    gemm(kern, gb, a.o_s, 1, vt, dvd, 0, dvd, dp, t.ld, 0, qn, ja, jmax, mc, t.kc, false, ap, nr);
    // Row math: scores -> P = softmax (0 for a row with no kept key), dS = P (dP - D) scale
    // (1 - tanh² under a softcap), D = dout · out.
    for (std::int64_t i = 0; i < qn; ++i) {
      float* si = s + i * t.ld + ja;
      float* di = dp + i * t.ld + ja;
      float* ti = th ? th + i * t.ld + ja : nullptr;
      attention_score_row<float, float>(a, b, h, q0 + i, ja, nk, nk, si, ti, scale, cap);
      float mx = kNegInf;
#pragma omp simd reduction(max : mx)
      for (std::int64_t j = 0; j < nk; ++j)
        mx = si[j] > mx ? si[j] : mx;
      if (mx == kNegInf) {
        std::fill(si, si + nk, 0.0f);
        std::fill(di, di + nk, 0.0f);
        continue;
      }
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (std::int64_t j = 0; j < nk; ++j) {
        si[j] = simd::exp(si[j] - mx);
        sum += si[j];
      }
      const float inv = 1.0f / sum;
      const float* oi = ob + i * a.o_s;
      const float* gi = gb + i * a.o_s;
      float rd = 0.0f;
#pragma omp simd reduction(+ : rd)
      for (std::int64_t e = 0; e < dvd; ++e)
        rd += gi[e] * oi[e];
#pragma omp simd
      for (std::int64_t j = 0; j < nk; ++j) {
        const float pj = si[j] * inv;
        si[j] = pj;
        di[j] = pj * (di[j] - rd) * scale;
      }
      if (cap > 0) {
#pragma omp simd
        for (std::int64_t j = 0; j < nk; ++j)
          di[j] *= 1.0f - ti[j] * ti[j];
      }
    }
    // dQ = dS K (every visible key in one product, straight into dq).
    gemm(kern, dp + ja, t.ld, 1, kp, sk, ja, nk, dqb, a.q_s, 0, qn, 0, d, mc, t.kc, false, ap, nr);
    // dK[ja:] += dSᵀ Q and dV[ja:] += Pᵀ dO: the block's q and dout rows packed as B panels.
    kern.pack_b(qb, a.q_s, 1, qn, d, qp);
    kern.pack_b(gb, a.o_s, 1, qn, dvd, gp);
    gemm(kern, dp + ja, 1, t.ld, qp, qn, 0, qn, dk + ja * ldk, ldk, 0, nk, 0, d, mc, t.kc, true, ap,
         nr);
    gemm(kern, s + ja, 1, t.ld, gp, qn, 0, qn, dv + ja * ldv, ldv, 0, nk, 0, dvd, mc, t.kc, true,
         ap, nr);
  }
}

std::int64_t slice_bytes(const NodeView& n) {
  const AttnDims s = attention_dims(n);
  if (n.in(0).dtype == ir::DType::f32)
    return f32_tiles(s, n.node().attr<ir::AttentionAttrs>().softcap.value_or(0.0) > 0,
                     packed::best_isa())
               .total *
           4;
  return (task_elems(s.sk, s.d, s.dv) * 8 + 63) / 64 * 64;
}
/// Scratch: one task slice per thread, the padding keep flags, the f32 dK / dV partials.
std::int64_t attention_grad_scratch(const NodeView& n) {
  const AttnDims s = attention_dims(n);
  const std::int64_t partials =
      n.in(0).dtype == ir::DType::f32 ? f32_partial_bytes(s, f32_parts(s, n.threads)) : 0;
  return slice_bytes(n) * std::max(n.threads, 1) +
         attention_keep_bytes(n.node().attr<ir::AttentionAttrs>().mask, s.batch, s.sk) + partials;
}

template <class T> class AttentionGradKernel final : public Kernel {
public:
  explicit AttentionGradKernel(const LowerContext& c)
      : slice_(slice_bytes(c)), threads_(std::max(c.threads, 1)) {
    p_.a = attention_params<T>(c, c.in(3).sizes());
    p_.o = reinterpret_cast<const T*>(c.src(3));
    p_.dout = reinterpret_cast<const T*>(c.src(4));
    p_.dq = reinterpret_cast<T*>(c.dst());
    p_.dk = reinterpret_cast<T*>(c.dst() + c.out().part_offset(1));
    p_.dv = reinterpret_cast<T*>(c.dst() + c.out().part_offset(2));
    p_.scale = static_cast<T>(p_.a.scale);
    p_.softcap = static_cast<T>(p_.a.softcap);
    const AttnDims dims = attention_dims(c);
    if constexpr (std::is_same_v<T, float>) {
      kern_ = &packed::kernels(packed::best_isa());
      tiles_ = f32_tiles(dims, p_.a.softcap > 0, packed::best_isa());
      parts_ = f32_parts(dims, c.threads);
    }
    scratch_ = c.scratch(attention_grad_scratch(c));
    std::byte* keep = scratch_ + slice_ * threads_;
    mask_.bind(c, 5, p_.a, keep);
    partials_ =
        reinterpret_cast<float*>(keep + attention_keep_bytes(p_.a.mask, dims.batch, dims.sk));
  }

  void run(ExecContext& ctx) override {
    mask_.refresh();
    const std::int64_t pairs = p_.a.batch * p_.a.kv_heads;
    parallel_for_slots(ctx, pairs * parts_, 1, [&](std::int64_t b, std::int64_t e, int slot) {
      T* scratch = reinterpret_cast<T*>(scratch_ + slice_ * (slot < threads_ ? slot : 0));
      for (std::int64_t t = b; t < e; ++t) {
        if constexpr (std::is_same_v<T, float>)
          grad_task_f32(p_, t, parts_, partials_, scratch, *kern_, tiles_);
        else
          grad_task<T>(p_, t, scratch);
      }
    });
    if (parts_ > 1)
      sum_partials(ctx);
  }

private:
  /// dK / dV rows = the sum of the parts' partial rows, in part order.
  void sum_partials(ExecContext& ctx) {
    const AttnParams<T>& a = p_.a;
    const std::int64_t d = a.d, dvd = a.dv, sk = a.sk, per = sk * (d + dvd);
    parallel_for(ctx, a.batch * a.kv_heads * sk, grain_for((d + dvd) * parts_),
                 [&](std::int64_t r0, std::int64_t r1) {
                   for (std::int64_t r = r0; r < r1; ++r) {
                     const std::int64_t pair = r / sk, j = r % sk;
                     const std::int64_t kh = pair % a.kv_heads, b = pair / a.kv_heads;
                     T* dk = p_.dk + b * a.k_b + kh * a.k_h + j * a.k_s;
                     T* dv = p_.dv + b * a.v_b + kh * a.v_h + j * a.v_s;
                     const float* part = partials_ + pair * parts_ * per;
                     std::copy(part + j * d, part + (j + 1) * d, dk);
                     std::copy(part + sk * d + j * dvd, part + sk * d + (j + 1) * dvd, dv);
                     for (std::int64_t q = 1; q < parts_; ++q) {
                       const float* pk = part + q * per + j * d;
                       const float* pv = part + q * per + sk * d + j * dvd;
                       for (std::int64_t e = 0; e < d; ++e)
                         dk[e] += pk[e];
                       for (std::int64_t e = 0; e < dvd; ++e)
                         dv[e] += pv[e];
                     }
                   }
                 });
  }

  GradParams<T> p_{};
  std::int64_t parts_ = 1;    ///< f32: parts per (batch, KV head) pair (f32_parts)
  float* partials_ = nullptr; ///< f32: the parts' dK / dV partials (parts_ > 1)
  std::int64_t slice_;
  int threads_;
  std::byte* scratch_ = nullptr;
  AttnMaskInput mask_;
  const packed::IsaKernels* kern_ = nullptr; ///< f32: the packed GEMM's tile code
  F32Tiles tiles_{};                         ///< f32: the task's tiles in its slice
};

bool accepts_f32_f64(const NodeView& n) {
  return n.in(0).dtype == ir::DType::f32 || n.in(0).dtype == ir::DType::f64;
}

std::unique_ptr<Kernel> make_attention_grad(const LowerContext& c) {
  if (c.in(0).dtype == ir::DType::f32)
    return std::make_unique<AttentionGradKernel<float>>(c);
  return std::make_unique<AttentionGradKernel<double>>(c);
}

constexpr KernelImpl kAttentionGrad[] = {
    {"tbb", accepts_f32_f64, attention_grad_scratch, make_attention_grad}};

} // namespace

std::span<const KernelImpl> attention_grad_impls() {
  return kAttentionGrad;
}

} // namespace rlx::cpu
