// quantize.cpp: reference kernels of int8 quantization: Quantize, Dequantize, FakeQuantize.
#include "kernels.hpp"

#include <algorithm>
#include <cmath>

namespace rlx::ir::reference::kernels {
namespace {

/// Rounds to the nearest integer, ties to the even one (2.5 -> 2, 3.5 -> 4, -2.5 -> -2).
double round_half_even(double v) {
  double r = std::round(v); // ties away from zero
  if (std::fabs(v - std::trunc(v)) == 0.5)
    r = 2.0 * std::round(v / 2.0);
  return r;
}

/// The (scale, zero point) index of every element: 0 per-tensor, the coordinate on the axis
/// per-channel.
std::vector<std::size_t> channels(const Shape& s, const QuantAttrs& q) {
  Sizes sizes = s.sizes();
  std::vector<std::size_t> ch(static_cast<std::size_t>(product(sizes)), 0);
  if (!q.axis)
    return ch;
  std::size_t ax = axis_of(*q.axis, sizes.size(), "quantize");
  std::int64_t inner = product(sizes, ax + 1, sizes.size());
  for (std::size_t i = 0; i < ch.size(); ++i)
    ch[i] = static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % sizes[ax]);
  return ch;
}

/// clamp(round_half_even(x / scale) + zero_point, -128, 127) per element.
std::vector<std::int64_t> quantize_values(const Tensor& x, const QuantAttrs& q) {
  auto v = load_f64(x);
  auto ch = channels(x.shape(), q);
  std::vector<std::int64_t> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]))
      fail("quantize: NaN input at element " + std::to_string(i));
    double z = round_half_even(v[i] / q.scales[ch[i]]) + static_cast<double>(q.zero_points[ch[i]]);
    r[i] = static_cast<std::int64_t>(std::clamp(z, -128.0, 127.0));
  }
  return r;
}

/// (q - zero_point) * scale per element.
std::vector<double> dequantize_values(std::span<const std::int64_t> q, const Shape& s,
                                      const QuantAttrs& a) {
  auto ch = channels(s, a);
  std::vector<double> r(q.size());
  for (std::size_t i = 0; i < q.size(); ++i)
    r[i] = static_cast<double>(q[i] - a.zero_points[ch[i]]) * a.scales[ch[i]];
  return r;
}

} // namespace

RLX_REFERENCE_KERNEL(Quantize) {
  return store_i64(out, quantize_values(in[0], node.attr<QuantAttrs>()));
}

RLX_REFERENCE_KERNEL(Dequantize) {
  return store_f64(out, dequantize_values(load_i64(in[0]), in[0].shape(), node.attr<QuantAttrs>()));
}

RLX_REFERENCE_KERNEL(FakeQuantize) {
  const auto& q = node.attr<QuantAttrs>();
  return store_f64(out, dequantize_values(quantize_values(in[0], q), in[0].shape(), q));
}

} // namespace rlx::ir::reference::kernels
