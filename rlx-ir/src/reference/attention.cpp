// attention.cpp: reference kernels of Attention (every mask kind, GQA, both layouts, scale and
// softcap) and Rope (half and interleaved pairing, partial rotation, position offset).
#include "kernels.hpp"

#include <cmath>
#include <limits>

namespace rlx::ir::reference::kernels {
namespace {

/// A 4-D attention operand in either layout, addressed as (batch, seq, head, feature).
struct View4 {
  std::int64_t b, s, h, d;
  AttnLayout layout;
  View4(const Sizes& sz, AttnLayout l)
      : b(sz[0]), s(l == AttnLayout::bshd ? sz[1] : sz[2]),
        h(l == AttnLayout::bshd ? sz[2] : sz[1]), d(sz[3]), layout(l) {}
  /// Offset of feature 0 of (batch, seq, head); features are contiguous in both layouts.
  std::size_t row(std::int64_t bi, std::int64_t si, std::int64_t hi) const {
    std::int64_t r = layout == AttnLayout::bshd ? (bi * s + si) * h + hi : (bi * h + hi) * s + si;
    return static_cast<std::size_t>(r * d);
  }
};

} // namespace

RLX_REFERENCE_KERNEL(Attention) {
  // For batch b, query head h (served by kv head h / (H / KVH)), query i and key j:
  //   s_ij = scale * sum_d q[i, d] k[j, d]          scale defaults to 1 / sqrt(D)
  //   s_ij = c * tanh(s_ij / c)                      with a softcap c
  //   s_ij = s_ij + bias[b, h, i, j]                 mask kind bias (broadcast to [B, H, Sq, Sk])
  //   key j is kept iff the mask allows it           causal / sliding_window / padding
  //   out[i] = sum_j p_ij v[j], p = softmax of s over the kept keys
  // A row with no kept key (or whose kept scores are all -inf) is 0.
  const auto& a = node.attr<AttentionAttrs>();
  View4 q(in[0].shape().sizes(), a.layout), k(in[1].shape().sizes(), a.layout),
      v(in[2].shape().sizes(), a.layout), o(out.sizes(), a.layout);
  if (!a.scale && q.d == 0)
    fail("attention: the default scale 1/sqrt(D) needs head_dim D > 0");
  double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.d)));
  std::int64_t group = a.num_heads / a.num_kv_heads;
  std::int64_t shift = k.s - q.s; // query i is aligned with key i + Sk - Sq
  auto qv = load_f64(in[0]), kv = load_f64(in[1]), vv = load_f64(in[2]);
  std::vector<double> mask;
  std::vector<std::int64_t> bias_at;
  if (a.mask == MaskKind::padding || a.mask == MaskKind::bias)
    mask = load_f64(in[3]);
  if (a.mask == MaskKind::bias)
    bias_at = broadcast_offsets(in[3].shape().sizes(), {q.b, q.h, q.s, k.s});
  auto visible = [&](std::int64_t b, std::int64_t i, std::int64_t j) {
    switch (a.mask) {
    case MaskKind::causal:
      return j <= i + shift;
    case MaskKind::sliding_window:
      return j <= i + shift && j > i + shift - a.window;
    case MaskKind::padding:
      return mask[static_cast<std::size_t>(b * k.s + j)] != 0.0;
    case MaskKind::none:
    case MaskKind::bias:
      return true;
    }
    return true;
  };

  std::vector<double> r(static_cast<std::size_t>(out.numel()), 0.0);
  std::vector<double> s(static_cast<std::size_t>(k.s));
  std::vector<char> keep(static_cast<std::size_t>(k.s));
  for (std::int64_t b = 0; b < q.b; ++b)
    for (std::int64_t h = 0; h < q.h; ++h) {
      std::int64_t kh = h / group;
      for (std::int64_t i = 0; i < q.s; ++i) {
        const double* qr = qv.data() + q.row(b, i, h);
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < k.s; ++j) {
          auto js = static_cast<std::size_t>(j);
          keep[js] = visible(b, i, j);
          if (!keep[js])
            continue;
          const double* kr = kv.data() + k.row(b, j, kh);
          double dot = 0;
          for (std::int64_t d = 0; d < q.d; ++d)
            dot += qr[d] * kr[d];
          double x = scale * dot;
          if (a.softcap)
            x = *a.softcap * std::tanh(x / *a.softcap);
          if (a.mask == MaskKind::bias)
            x += mask[static_cast<std::size_t>(
                bias_at[static_cast<std::size_t>(((b * q.h + h) * q.s + i) * k.s + j)])];
          s[js] = x;
          if (std::isnan(x) || x > m) // NaN propagates to the whole row
            m = x;
        }
        if (m == -std::numeric_limits<double>::infinity())
          continue; // fully masked: the row stays 0
        double sum = 0;
        for (std::int64_t j = 0; j < k.s; ++j) {
          auto js = static_cast<std::size_t>(j);
          s[js] = keep[js] ? std::exp(s[js] - m) : 0.0;
          sum += s[js];
        }
        double* orow = r.data() + o.row(b, i, h);
        for (std::int64_t j = 0; j < k.s; ++j) {
          if (!keep[static_cast<std::size_t>(j)])
            continue;
          double p = s[static_cast<std::size_t>(j)] / sum;
          const double* vr = vv.data() + v.row(b, j, kh);
          for (std::int64_t d = 0; d < v.d; ++d)
            orow[d] += p * vr[d];
        }
      }
    }
  return store_f64(out, r);
}

RLX_REFERENCE_KERNEL(Rope) {
  // Position p = seq index + position_offset; pair k in [0, n_rot / 2) rotates by angle
  // p * theta^(-2k / n_rot): (a, b) -> (a cos - b sin, a sin + b cos), where (a, b) is features
  // (k, k + n_rot / 2) for style half and (2k, 2k + 1) for style interleaved. Features at or past
  // n_rot are unchanged.
  const auto& a = node.attr<RopeAttrs>();
  View4 x(in[0].shape().sizes(), a.layout);
  std::int64_t n = a.n_rot == 0 ? x.d : a.n_rot;
  std::int64_t half = n / 2;
  auto xv = load_f64(in[0]);
  std::vector<double> y = xv;
  for (std::int64_t b = 0; b < x.b; ++b)
    for (std::int64_t s = 0; s < x.s; ++s)
      for (std::int64_t h = 0; h < x.h; ++h) {
        std::size_t row = x.row(b, s, h);
        auto p = static_cast<double>(s + a.position_offset);
        for (std::int64_t kk = 0; kk < half; ++kk) {
          double angle =
              p * std::pow(a.theta, -2.0 * static_cast<double>(kk) / static_cast<double>(n));
          double c = std::cos(angle), sn = std::sin(angle);
          std::int64_t ia = a.style == RopeStyle::half ? kk : 2 * kk;
          std::int64_t ib = a.style == RopeStyle::half ? kk + half : 2 * kk + 1;
          double va = xv[row + static_cast<std::size_t>(ia)];
          double vb = xv[row + static_cast<std::size_t>(ib)];
          y[row + static_cast<std::size_t>(ia)] = va * c - vb * sn;
          y[row + static_cast<std::size_t>(ib)] = va * sn + vb * c;
        }
      }
  return store_f64(out, y);
}

} // namespace rlx::ir::reference::kernels
