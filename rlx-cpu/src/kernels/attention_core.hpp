// attention_core.hpp (private): the tile setup that the Attention / Rope kernels (attention.cpp),
// the fused attention block (attention_block.cpp) and AttentionGrad (attention_grad.cpp) share:
// the strided task parameters (per batch / head / row strides of each operand, GQA mapping, scale
// and softcap), the mask operand's binding, the scores of one row of a tile (scale, softcap, bias,
// mask predicate per kind), the key range a query block can see, the forward's f32 task loop, and
// the RoPE angle tables.
#pragma once

#include "../dtypes.hpp"
#include "../kernel.hpp"
#include "../lower.hpp"
#include "rlx/ir/attrs.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace rlx::cpu {

inline constexpr std::int64_t kAttnBlockQ = 32; ///< query rows per attention task
inline constexpr std::int64_t kAttnTileK = 64;  ///< keys per score tile

/// Everything an attention task needs, resolved at compile time. Q / K / V / O are read and
/// written through element strides, so they may be views into one packed buffer.
template <class T> struct AttnParams {
  const T* q;
  const T* k;
  const T* v;
  T* o;
  std::int64_t batch, heads, kv_heads, sq, sk, d, dv;
  // Element strides: per batch, per head and per sequence row, of q, k, v and o.
  std::int64_t q_b, q_h, q_s, k_b, k_h, k_s, v_b, v_h, v_s, o_b, o_h, o_s;
  double scale;
  double softcap; ///< 0 = none
  ir::MaskKind mask;
  std::int64_t window;
  const std::uint8_t* keep; ///< padding: [B, Sk] keep flags (planned scratch, filled per run)
  const T* bias; ///< bias: element (b, h, i, j) at b*bias_b + h*bias_h + i*bias_i + j*bias_j
  std::int64_t bias_b, bias_h, bias_i, bias_j;
  std::int64_t shift; ///< Sk - Sq: query i is aligned with key i + shift
  std::int64_t blocks_per_head;
  /// f32 forward: the keys transposed once per run by run_attention_f32, tile by tile as a task
  /// would: tile t (keys [t Tk, t Tk + Tk)) of (b, KV head) is a [D][Tk] block (zero past Sk) at
  /// kt + ((b * kv_heads + kh) * attention_tiles(sk) + t) * d * Tk. Null: each task transposes
  /// the key tiles it reads.
  const T* kt = nullptr;
};

/// Key tiles of \p sk keys.
inline std::int64_t attention_tiles(std::int64_t sk) {
  return (sk + kAttnTileK - 1) / kAttnTileK;
}

/// The query head \p h's KV head under GQA (heads / kv_heads query heads share one).
template <class T> std::int64_t attention_kv_head(const AttnParams<T>& p, std::int64_t h) {
  return h / (p.heads / p.kv_heads);
}

/// The keys [first, second) that query rows [q0, q0 + qn) may see: causal and sliding-window
/// masks bound the range, so whole tiles past it are skipped.
template <class T>
std::pair<std::int64_t, std::int64_t> attention_key_range(const AttnParams<T>& p, std::int64_t q0,
                                                          std::int64_t qn) {
  std::int64_t jmin = 0, jmax = p.sk;
  if (p.mask == ir::MaskKind::causal || p.mask == ir::MaskKind::sliding_window)
    jmax = std::min(p.sk, q0 + qn - 1 + p.shift + 1);
  if (p.mask == ir::MaskKind::sliding_window)
    jmin = std::max<std::int64_t>(0, q0 + p.shift - p.window + 1);
  return {jmin, jmax};
}

/// Whether the causal / sliding-window mask hides none of the keys [j0, j0 + width) from any of
/// the query rows [q0, q0 + qn) (always, for the other kinds).
template <class T>
bool attention_tile_unmasked(const AttnParams<T>& p, std::int64_t q0, std::int64_t qn,
                             std::int64_t j0, std::int64_t width) {
  if (p.mask != ir::MaskKind::causal && p.mask != ir::MaskKind::sliding_window)
    return true;
  const bool below = j0 + width - 1 <= q0 + p.shift; // the first row sees the tile's last key
  if (p.mask == ir::MaskKind::causal)
    return below;
  return below && j0 >= q0 + qn - 1 + p.shift - p.window + 1; // the last row sees its first
}

/// The scores of query row \p qi (absolute) of head \p h, batch \p b against keys [j0, j0 + jn):
/// \p si holds the raw dots q·k (\p width >= jn entries) and becomes scale·dot, soft-capped
/// c·tanh(s/c) (the tanh values into \p ti when it is not null), plus the bias, -inf where the
/// mask hides the key and in [jn, width). \p scale / \p cap are p.scale / p.softcap in the compute
/// type.
template <class T, class A>
[[gnu::always_inline]] inline void
attention_score_row(const AttnParams<T>& p, std::int64_t b, std::int64_t h, std::int64_t qi,
                    std::int64_t j0, std::int64_t jn, std::int64_t width, A* si, A* ti, A scale,
                    A cap) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
#pragma omp simd
  for (std::int64_t j = 0; j < width; ++j)
    si[j] = j < jn ? si[j] * scale : kNegInf;
  if (cap > 0) {
    if (ti)
      for (std::int64_t j = 0; j < jn; ++j) {
        ti[j] = std::tanh(si[j] / cap);
        si[j] = cap * ti[j];
      }
    else
      for (std::int64_t j = 0; j < jn; ++j)
        si[j] = cap * std::tanh(si[j] / cap);
  }
  if (p.bias) {
    const T* bi = p.bias + b * p.bias_b + h * p.bias_h + qi * p.bias_i;
    for (std::int64_t j = 0; j < jn; ++j)
      si[j] += static_cast<A>(to_compute<T>(bi[(j0 + j) * p.bias_j]));
  }
  if (p.mask == ir::MaskKind::causal || p.mask == ir::MaskKind::sliding_window)
    for (std::int64_t j = std::max<std::int64_t>(0, qi + p.shift + 1 - j0); j < jn; ++j)
      si[j] = kNegInf;
  if (p.mask == ir::MaskKind::sliding_window)
    for (std::int64_t j = 0; j < jn && j0 + j <= qi + p.shift - p.window; ++j)
      si[j] = kNegInf;
  if (p.keep) {
    const std::uint8_t* keep = p.keep + b * p.sk + j0;
    for (std::int64_t j = 0; j < jn; ++j)
      if (!keep[j])
        si[j] = kNegInf;
  }
}

/// Element strides of a 4-D operand [B, S, H, D] (bshd) or [B, H, S, D] (bhsd): per batch (\p sb),
/// per head (\p sh) and per sequence row (\p ss).
void attention_layout_strides(const std::vector<std::int64_t>& sizes, ir::AttnLayout layout,
                              std::int64_t& sb, std::int64_t& sh, std::int64_t& ss);

/// The dims of an Attention / AttentionGrad node (AttentionAttrs; operands q, k, v first).
struct AttnDims {
  std::int64_t batch, heads, kv_heads, sq, sk, d, dv;
};
AttnDims attention_dims(const NodeView& n);

/// The parameters of an Attention / AttentionGrad node \p c of element type \p T: dims, q / k / v
/// addresses and strides (operands 0-2), \p out_sizes' strides as o's (o itself left null), scale
/// (default 1/sqrt(D); D = 0 without a scale is an Error), softcap, mask kind and window. The mask
/// operand is bound separately (AttnMaskInput).
template <class T>
AttnParams<T> attention_params(const LowerContext& c, const std::vector<std::int64_t>& out_sizes) {
  const auto& a = c.node().attr<ir::AttentionAttrs>();
  const AttnDims s = attention_dims(c);
  if (!a.scale && s.d == 0)
    throw Error("rlx-cpu: " + c.what() + ": the default scale 1/sqrt(D) needs D > 0");
  AttnParams<T> p{};
  p.q = reinterpret_cast<const T*>(c.src(0));
  p.k = reinterpret_cast<const T*>(c.src(1));
  p.v = reinterpret_cast<const T*>(c.src(2));
  p.batch = s.batch;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.sq = s.sq;
  p.sk = s.sk;
  p.d = s.d;
  p.dv = s.dv;
  attention_layout_strides(c.in(0).sizes(), a.layout, p.q_b, p.q_h, p.q_s);
  attention_layout_strides(c.in(1).sizes(), a.layout, p.k_b, p.k_h, p.k_s);
  attention_layout_strides(c.in(2).sizes(), a.layout, p.v_b, p.v_h, p.v_s);
  attention_layout_strides(out_sizes, a.layout, p.o_b, p.o_h, p.o_s);
  p.scale = a.scale.value_or(s.d > 0 ? 1.0 / std::sqrt(static_cast<double>(s.d)) : 1.0);
  p.softcap = a.softcap.value_or(0.0);
  p.mask = a.mask;
  p.window = a.window;
  p.shift = s.sk - s.sq;
  p.blocks_per_head = (s.sq + kAttnBlockQ - 1) / kAttnBlockQ;
  return p;
}

/// Bytes of the padding keep flags ([B, Sk], 64-byte aligned) an attention node with mask kind
/// \p mask needs in its scratch (0 for other kinds).
inline std::int64_t attention_keep_bytes(ir::MaskKind mask, std::int64_t batch, std::int64_t sk) {
  return mask == ir::MaskKind::padding ? (batch * sk + 63) / 64 * 64 : 0;
}

/// The mask operand of an attention kernel: a padding mask (of any dtype) becomes [B, Sk] keep
/// flags in planned scratch, refreshed on every run (nonzero = keep); a bias mask is read in place
/// through its broadcast strides. Other kinds need no operand.
class AttnMaskInput {
public:
  /// Binds operand \p slot of \p c to \p p: keep flags at \p keep_room (attention_keep_bytes
  /// bytes) for a padding mask, the bias and its strides for a bias mask.
  template <class T>
  void bind(const LowerContext& c, std::size_t slot, AttnParams<T>& p, std::byte* keep_room);
  /// Fills the keep flags from the mask (padding only; nothing otherwise).
  void refresh() const;

private:
  std::uint8_t* keep_ = nullptr;
  const std::byte* mask_ = nullptr;
  ir::DType dtype_ = ir::DType::boolean;
  std::int64_t count_ = 0;
};

/// Query blocks per head for \p sq query rows.
inline std::int64_t attention_blocks(std::int64_t sq) {
  return (sq + kAttnBlockQ - 1) / kAttnBlockQ;
}

/// Bytes of one thread's task scratch (64-byte aligned) for head dims \p d / \p dv and compute
/// elements of \p elem bytes.
std::int64_t attention_slice_bytes(std::int64_t d, std::int64_t dv, std::int64_t elem);

/// Strides of a bias of dims \p sizes broadcast onto [B, H, Sq, Sk] (0 along broadcast dims).
void attention_bias_strides(const std::vector<std::int64_t>& sizes, std::int64_t st[4]);

template <class T>
void AttnMaskInput::bind(const LowerContext& c, std::size_t slot, AttnParams<T>& p,
                         std::byte* keep_room) {
  if (p.mask == ir::MaskKind::padding) {
    keep_ = reinterpret_cast<std::uint8_t*>(keep_room);
    p.keep = keep_;
    mask_ = c.src(slot);
    dtype_ = c.in(slot).dtype;
    count_ = p.batch * p.sk;
  } else if (p.mask == ir::MaskKind::bias) {
    std::int64_t st[4];
    attention_bias_strides(c.in(slot).sizes(), st);
    p.bias = reinterpret_cast<const T*>(c.src(slot));
    p.bias_b = st[0];
    p.bias_h = st[1];
    p.bias_i = st[2];
    p.bias_j = st[3];
  }
}

/// Bytes (64-byte aligned) of the f32 keys transposed once per run for \p batch x \p kv_heads
/// heads of \p d features and \p sk keys.
inline std::int64_t attention_kt_bytes(std::int64_t batch, std::int64_t kv_heads, std::int64_t sk,
                                       std::int64_t d) {
  return (batch * kv_heads * attention_tiles(sk) * d * kAttnTileK * 4 + 63) / 64 * 64;
}

/// Runs every (batch, head, query block) task of \p p on the executable's pool; thread slot i
/// uses the \p slice bytes at \p scratch + i * slice (\p threads slots). First transposes the
/// keys of every (batch, KV head) once into \p kt (attention_kt_bytes), which the tasks read: each
/// query block of a head would otherwise transpose the same key tiles again.
void run_attention_f32(ExecContext& ctx, const AttnParams<float>& p, std::byte* scratch,
                       std::int64_t slice, int threads, float* kt);

/// The cos / sin tables of RoPE for positions [offset, offset + seq) and pairs of \p n_rot
/// features (angles in double, rounded once to \p A), and the rotation of one head row.
template <class A> class RopeTable {
public:
  RopeTable() = default;
  /// \p sign -1 turns the rotation back (rope_grad: the sines negated).
  RopeTable(ir::RopeStyle style, std::int64_t n_rot, std::int64_t offset, double theta,
            std::int64_t seq, double sign = 1.0)
      : half_(n_rot / 2), interleaved_(style == ir::RopeStyle::interleaved) {
    cos_.resize(static_cast<std::size_t>(seq * half_));
    sin_.resize(cos_.size());
    for (std::int64_t p = 0; p < seq; ++p)
      for (std::int64_t k = 0; k < half_; ++k) {
        double angle = static_cast<double>(p + offset) *
                       std::pow(theta, -2.0 * static_cast<double>(k) / static_cast<double>(n_rot));
        cos_[static_cast<std::size_t>(p * half_ + k)] = static_cast<A>(std::cos(angle));
        sin_[static_cast<std::size_t>(p * half_ + k)] = static_cast<A>(sign * std::sin(angle));
      }
  }
  /// Turns the rotated pairs of head row \p x at sequence index \p pos into \p y (which may be
  /// \p x; the features past n_rot are left as they are in \p y).
  template <class T> void rotate(const T* x, T* y, std::int64_t pos) const {
    const A* cs = cos_.data() + pos * half_;
    const A* sn = sin_.data() + pos * half_;
    const std::int64_t step = interleaved_ ? 2 : 1, other = interleaved_ ? 1 : half_;
    for (std::int64_t k = 0; k < half_; ++k) {
      const std::int64_t ia = k * step, ib = ia + other;
      const A va = static_cast<A>(to_compute<T>(x[ia])), vb = static_cast<A>(to_compute<T>(x[ib]));
      y[ia] = from_compute<T>(static_cast<compute_t<T>>(va * cs[k] - vb * sn[k]));
      y[ib] = from_compute<T>(static_cast<compute_t<T>>(va * sn[k] + vb * cs[k]));
    }
  }

private:
  std::int64_t half_ = 0;
  bool interleaved_ = false;
  std::vector<A> cos_, sin_;
};

} // namespace rlx::cpu
