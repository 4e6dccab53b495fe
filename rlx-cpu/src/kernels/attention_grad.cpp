// attention_grad.cpp: AttentionGrad (ops.def "backward ops 2"), the VJP of attention for q, k and
// v, as a memory-efficient kernel in the style of flash attention's backward.
//
// Tasks are (batch, KV head) pairs on the TBB pool, so dK / dV of a KV head (summed over the query
// heads of its GQA group) belong to one task: no atomics, no reduction afterwards. Per query head
// of the group and per block of Bq query rows:
//   pass 1, per key tile: s_ij = scale q_i·k_j -> softcap c tanh(s/c) -> + bias -> -inf where
//           masked; online row max m_i and sum l_i (the forward's softmax statistics, recomputed:
//           the op reads out, not a saved logsumexp);
//   D_i = dout_i · out_i (= Σ_j p_ij dp_ij);
//   pass 2, per key tile: p_ij = e^(s_ij - m_i) / l_i (0 where masked or the row has no kept key),
//           dp_ij = dout_i · v_j, ds_ij = p_ij (dp_ij - D_i) (1 - t_ij^2 under a softcap) scale;
//           dq_i += Σ_j ds_ij k_j, dk_j += Σ_i ds_ij q_i, dv_j += Σ_i p_ij dout_i.
// A thread holds three Bq×Tk tiles, Bq×D dq accumulators, row statistics and its task's Sk×(D+Dv)
// dK / dV accumulators (its slice of the planned scratch); never an Sq×Sk matrix. Causal and
// sliding-window masks skip whole tiles. f32 tasks are compiled for AVX-512 / AVX2 / baseline;
// f64 runs the same code in double.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace rlx::cpu {
namespace {

constexpr std::int64_t kBq = 32; ///< query rows per block
constexpr std::int64_t kTk = 64; ///< keys per tile

/// Everything a task needs, resolved at compile time. Strides are in elements: per batch, per head
/// and per sequence row of each operand / result (its layout's).
template <class T> struct GradParams {
  const T *q, *k, *v, *o, *dout;
  T *dq, *dk, *dv;
  std::int64_t batch, heads, kv_heads, sq, sk, d, dv_dim;
  std::int64_t q_b, q_h, q_s, k_b, k_h, k_s, v_b, v_h, v_s, o_b, o_h, o_s;
  T scale;
  T softcap; ///< 0 = none
  ir::MaskKind mask;
  std::int64_t window;
  std::int64_t shift;       ///< Sk - Sq: query i is aligned with key i + shift
  const std::uint8_t* keep; ///< padding: [B, Sk] keep flags (planned scratch, filled per run)
  const T* bias;            ///< bias: element (b, h, i, j) at the strides below (0 = broadcast)
  std::int64_t bias_b, bias_h, bias_i, bias_j;
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
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const bool causal = p.mask == ir::MaskKind::causal || p.mask == ir::MaskKind::sliding_window;
  tile_dots(qb, p.q_s, qn, kt, p.d, s);
  for (std::int64_t i = 0; i < qn; ++i) {
    T* si = s + i * kTk;
#pragma omp simd
    for (std::int64_t j = 0; j < kTk; ++j)
      si[j] = j < jn ? si[j] * p.scale : kNegInf;
    if (p.softcap > 0) {
      T* ti = th + i * kTk;
      for (std::int64_t j = 0; j < jn; ++j) {
        ti[j] = std::tanh(si[j] / p.softcap);
        si[j] = p.softcap * ti[j];
      }
    }
    if (p.bias) {
      const T* bi = p.bias + b * p.bias_b + h * p.bias_h + (q0 + i) * p.bias_i;
      for (std::int64_t j = 0; j < jn; ++j)
        si[j] += bi[(j0 + j) * p.bias_j];
    }
    const std::int64_t qi_abs = q0 + i;
    if (causal)
      for (std::int64_t j = std::max<std::int64_t>(0, qi_abs + p.shift + 1 - j0); j < jn; ++j)
        si[j] = kNegInf;
    if (p.mask == ir::MaskKind::sliding_window)
      for (std::int64_t j = 0; j < jn && j0 + j <= qi_abs + p.shift - p.window; ++j)
        si[j] = kNegInf;
    if (p.keep) {
      const std::uint8_t* keep = p.keep + b * p.sk + j0;
      for (std::int64_t j = 0; j < jn; ++j)
        if (!keep[j])
          si[j] = kNegInf;
    }
  }
}

/// One (batch, KV head) task.
template <class T>
[[gnu::always_inline]] inline void grad_task(const GradParams<T>& p, std::int64_t task,
                                             T* scratch) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const std::int64_t kh = task % p.kv_heads, b = task / p.kv_heads;
  const std::int64_t group = p.heads / p.kv_heads, d = p.d, dvd = p.dv_dim;
  T* dk = scratch;        // [Sk][D]
  T* dv = dk + p.sk * d;  // [Sk][Dv]
  T* s = dv + p.sk * dvd; // [Bq][Tk] scores, then probabilities
  T* dp = s + kBq * kTk;  // [Bq][Tk] dout·v, then ds
  T* th = dp + kBq * kTk; // [Bq][Tk] tanh of the soft-capped scores
  T* kt = th + kBq * kTk; // [D][Tk] the key tile, transposed
  T* vt = kt + d * kTk;   // [Dv][Tk] the value tile, transposed
  T* dq = vt + dvd * kTk; // [Bq][D]
  T* m = dq + kBq * d;    // [Bq] row max
  T* l = m + kBq;         // [Bq] row sum, then its inverse
  T* rowdot = l + kBq;    // [Bq] dout·out
  std::fill(dk, dk + p.sk * (d + dvd), T(0));
  const T* kb = p.k + b * p.k_b + kh * p.k_h;
  const T* vb = p.v + b * p.v_b + kh * p.v_h;
  const bool causal = p.mask == ir::MaskKind::causal || p.mask == ir::MaskKind::sliding_window;
  for (std::int64_t g = 0; g < group; ++g) {
    const std::int64_t h = kh * group + g;
    for (std::int64_t q0 = 0; q0 < p.sq; q0 += kBq) {
      const std::int64_t qn = std::min(kBq, p.sq - q0);
      const T* qb = p.q + b * p.q_b + h * p.q_h + q0 * p.q_s;
      const T* ob = p.o + b * p.o_b + h * p.o_h + q0 * p.o_s;
      const T* gb = p.dout + b * p.o_b + h * p.o_h + q0 * p.o_s;
      T* dqb = p.dq + b * p.q_b + h * p.q_h + q0 * p.q_s;
      std::int64_t jmin = 0, jmax = p.sk;
      if (causal)
        jmax = std::min(p.sk, q0 + qn - 1 + p.shift + 1);
      if (p.mask == ir::MaskKind::sliding_window)
        jmin = std::max<std::int64_t>(0, q0 + p.shift - p.window + 1);
      // Pass 1: the softmax statistics of every row of the block.
      for (std::int64_t i = 0; i < qn; ++i) {
        m[i] = kNegInf;
        l[i] = 0;
      }
      for (std::int64_t j0 = jmin; j0 < jmax; j0 += kTk) {
        const std::int64_t jn = std::min(kTk, jmax - j0);
        pack_transposed(kb, p.k_s, j0, jn, d, kt);
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
        const T* oi = ob + i * p.o_s;
        const T* gi = gb + i * p.o_s;
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
        pack_transposed(kb, p.k_s, j0, jn, d, kt);
        pack_transposed(vb, p.v_s, j0, jn, dvd, vt);
        tile_scores(p, b, h, qb, kt, q0, qn, j0, jn, s, th);
        tile_dots(gb, p.o_s, qn, vt, dvd, dp);
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
          accumulate_rows(dp + i * kTk, 1, jn, kb + j0 * p.k_s, p.k_s, dq + i * d, d);
        for (std::int64_t j = 0; j < jn; ++j) {
          accumulate_rows(dp + j, kTk, qn, qb, p.q_s, dk + (j0 + j) * d, d);
          accumulate_rows(s + j, kTk, qn, gb, p.o_s, dv + (j0 + j) * dvd, dvd);
        }
      }
      for (std::int64_t i = 0; i < qn; ++i)
        std::copy(dq + i * d, dq + (i + 1) * d, dqb + i * p.q_s);
    }
  }
  T* dkb = p.dk + b * p.k_b + kh * p.k_h;
  T* dvb = p.dv + b * p.v_b + kh * p.v_h;
  for (std::int64_t j = 0; j < p.sk; ++j) {
    std::copy(dk + j * d, dk + (j + 1) * d, dkb + j * p.k_s);
    std::copy(dv + j * dvd, dv + (j + 1) * dvd, dvb + j * p.v_s);
  }
}

RLX_CPU_MULTIVERSION void grad_task_f32(const GradParams<float>& p, std::int64_t task,
                                        float* scratch) {
  grad_task<float>(p, task, scratch);
}

/// Layout strides of a 4-D operand [B, S, H, D] (bshd) or [B, H, S, D] (bhsd).
void layout_strides(const std::vector<std::int64_t>& sizes, ir::AttnLayout layout, std::int64_t& sb,
                    std::int64_t& sh, std::int64_t& ss) {
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

struct GradShape {
  std::int64_t batch, kv_heads, sk, d, dv;
};
GradShape grad_shape(const NodeView& n) {
  const auto& a = n.node().attr<ir::AttentionAttrs>();
  const auto q = n.in(0).sizes(), k = n.in(1).sizes(), v = n.in(2).sizes();
  return {q[0], a.num_kv_heads, a.layout == ir::AttnLayout::bshd ? k[1] : k[2], q[3], v[3]};
}

std::int64_t elem_bytes(const NodeView& n) {
  return n.in(0).dtype == ir::DType::f32 ? 4 : 8;
}
std::int64_t slice_bytes(const NodeView& n) {
  const GradShape s = grad_shape(n);
  return (task_elems(s.sk, s.d, s.dv) * elem_bytes(n) + 63) / 64 * 64;
}
std::int64_t attention_grad_scratch(const NodeView& n) {
  const GradShape s = grad_shape(n);
  const std::int64_t keep = n.node().attr<ir::AttentionAttrs>().mask == ir::MaskKind::padding
                                ? (s.batch * s.sk + 63) / 64 * 64
                                : 0;
  return slice_bytes(n) * std::max(n.threads, 1) + keep;
}

template <class T> class AttentionGradKernel final : public Kernel {
public:
  explicit AttentionGradKernel(const LowerContext& c)
      : slice_(slice_bytes(c)), threads_(std::max(c.threads, 1)) {
    const auto& a = c.node().attr<ir::AttentionAttrs>();
    const auto q = c.in(0).sizes(), k = c.in(1).sizes(), v = c.in(2).sizes();
    const bool bshd = a.layout == ir::AttnLayout::bshd;
    p_ = {};
    p_.batch = q[0];
    p_.heads = a.num_heads;
    p_.kv_heads = a.num_kv_heads;
    p_.sq = bshd ? q[1] : q[2];
    p_.sk = bshd ? k[1] : k[2];
    p_.d = q[3];
    p_.dv_dim = v[3];
    if (!a.scale && p_.d == 0)
      throw Error("rlx-cpu: " + c.what() + ": the default scale 1/sqrt(D) needs D > 0");
    p_.q = reinterpret_cast<const T*>(c.src(0));
    p_.k = reinterpret_cast<const T*>(c.src(1));
    p_.v = reinterpret_cast<const T*>(c.src(2));
    p_.o = reinterpret_cast<const T*>(c.src(3));
    p_.dout = reinterpret_cast<const T*>(c.src(4));
    p_.dq = reinterpret_cast<T*>(c.dst());
    p_.dk = reinterpret_cast<T*>(c.dst() + c.out().part_offset(1));
    p_.dv = reinterpret_cast<T*>(c.dst() + c.out().part_offset(2));
    layout_strides(q, a.layout, p_.q_b, p_.q_h, p_.q_s);
    layout_strides(k, a.layout, p_.k_b, p_.k_h, p_.k_s);
    layout_strides(v, a.layout, p_.v_b, p_.v_h, p_.v_s);
    layout_strides(c.in(3).sizes(), a.layout, p_.o_b, p_.o_h, p_.o_s);
    p_.scale = static_cast<T>(a.scale.value_or(p_.d > 0 ? 1.0 / std::sqrt(double(p_.d)) : 1.0));
    p_.softcap = static_cast<T>(a.softcap.value_or(0.0));
    p_.mask = a.mask;
    p_.window = a.window;
    p_.shift = p_.sk - p_.sq;
    scratch_ = c.scratch(attention_grad_scratch(c));
    if (a.mask == ir::MaskKind::padding) {
      keep_ = reinterpret_cast<std::uint8_t*>(scratch_ + slice_ * threads_);
      p_.keep = keep_;
      mask_ = c.src(5);
      mask_dtype_ = c.in(5).dtype;
    } else if (a.mask == ir::MaskKind::bias) {
      // Strides of the bias broadcast onto [B, H, Sq, Sk] (0 along broadcast dims).
      const auto bs = c.in(5).sizes();
      std::vector<std::int64_t> full(4 - bs.size(), 1);
      full.insert(full.end(), bs.begin(), bs.end());
      std::int64_t st[4], acc = 1;
      for (int i = 3; i >= 0; --i) {
        st[i] = full[static_cast<std::size_t>(i)] == 1 ? 0 : acc;
        acc *= full[static_cast<std::size_t>(i)];
      }
      p_.bias = reinterpret_cast<const T*>(c.src(5));
      p_.bias_b = st[0];
      p_.bias_h = st[1];
      p_.bias_i = st[2];
      p_.bias_j = st[3];
    }
  }

  void run(ExecContext& ctx) override {
    if (keep_) // padding mask of any dtype -> keep flags (nonzero = keep)
      visit_dtype(mask_dtype_, [&]<class M>() {
        const M* mk = reinterpret_cast<const M*>(mask_);
        for (std::int64_t i = 0; i < p_.batch * p_.sk; ++i)
          keep_[i] = to_compute<M>(mk[i]) != 0;
      });
    const std::int64_t tasks = p_.batch * p_.kv_heads;
    parallel_for_slots(ctx, tasks, 1, [&](std::int64_t b, std::int64_t e, int slot) {
      T* scratch = reinterpret_cast<T*>(scratch_ + slice_ * (slot < threads_ ? slot : 0));
      for (std::int64_t t = b; t < e; ++t) {
        if constexpr (std::is_same_v<T, float>)
          grad_task_f32(p_, t, scratch);
        else
          grad_task<T>(p_, t, scratch);
      }
    });
  }

private:
  GradParams<T> p_;
  std::int64_t slice_;
  int threads_;
  std::byte* scratch_ = nullptr;
  std::uint8_t* keep_ = nullptr;
  const std::byte* mask_ = nullptr;
  ir::DType mask_dtype_ = ir::DType::boolean;
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
