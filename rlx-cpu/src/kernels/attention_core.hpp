// attention_core.hpp (private): what the Attention / Rope kernels (attention.cpp) share with the
// fused attention block (attention_block.cpp): the strided task parameters of the online-softmax
// attention, its f32 task loop, and the RoPE angle tables.
#pragma once

#include "../dtypes.hpp"
#include "../kernel.hpp"
#include "rlx/ir/attrs.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
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

/// Runs every (batch, head, query block) task of \p p on the executable's pool; thread slot i
/// uses the \p slice bytes at \p scratch + i * slice (\p threads slots).
void run_attention_f32(ExecContext& ctx, const AttnParams<float>& p, std::byte* scratch,
                       std::int64_t slice, int threads);

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
