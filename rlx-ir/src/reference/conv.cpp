// conv.cpp: reference kernels of Conv2d and Pool2d and of their backward ops (conv2d_grad_input,
// conv2d_grad_weight, pool2d_grad): NCHW, direct loops in double, independent of the im2col
// decompositions (rlx-ir/src/decompose/conv_backward.cpp) they are tested against.
#include "kernels.hpp"

#include <cmath>
#include <limits>

namespace rlx::ir::reference::kernels {

RLX_REFERENCE_KERNEL(Conv2d) {
  // out[n, o, y, x] = bias[o] + sum over c < C/groups, ky, kx of
  //   in[n, g * C/groups + c, y * sh - ph + ky * dh, x * sw - pw + kx * dw] * w[o, c, ky, kx]
  // with g = o / (O / groups); positions outside the input read 0 (zero padding).
  const auto& a = node.attr<Conv2dAttrs>();
  Sizes si = in[0].shape().sizes(), sw = in[1].shape().sizes(), so = out.sizes();
  std::int64_t N = si[0], C = si[1], H = si[2], W = si[3];
  std::int64_t O = sw[0], CG = sw[1], KH = sw[2], KW = sw[3];
  std::int64_t OH = so[2], OW = so[3];
  std::int64_t per_group = O / a.groups;
  auto x = load_f64(in[0]);
  auto w = load_f64(in[1]);
  std::vector<double> bias = in.size() == 3 ? load_f64(in[2]) : std::vector<double>(O, 0.0);
  std::vector<double> r(static_cast<std::size_t>(out.numel()));
  auto X = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t wi) {
    return x[static_cast<std::size_t>(((n * C + c) * H + h) * W + wi)];
  };
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      std::int64_t g = o / per_group;
      for (std::int64_t oy = 0; oy < OH; ++oy)
        for (std::int64_t ox = 0; ox < OW; ++ox) {
          double acc = bias[static_cast<std::size_t>(o)];
          for (std::int64_t c = 0; c < CG; ++c)
            for (std::int64_t ky = 0; ky < KH; ++ky)
              for (std::int64_t kx = 0; kx < KW; ++kx) {
                std::int64_t iy = oy * a.stride[0] - a.padding[0] + ky * a.dilation[0];
                std::int64_t ix = ox * a.stride[1] - a.padding[1] + kx * a.dilation[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                  continue;
                acc += X(n, g * CG + c, iy, ix) *
                       w[static_cast<std::size_t>(((o * CG + c) * KH + ky) * KW + kx)];
              }
          r[static_cast<std::size_t>(((n * O + o) * OH + oy) * OW + ox)] = acc;
        }
    }
  return store_f64(out, r);
}

RLX_REFERENCE_KERNEL(Pool2d) {
  // out[n, c, y, x] = max / mean of in[n, c, y * sh - ph + ky, x * sw - pw + kx] over the
  // kernel window cells that lie inside the input (padding never contributes, not even to the
  // average's count).
  const auto& a = node.attr<Pool2dAttrs>();
  Sizes si = in[0].shape().sizes(), so = out.sizes();
  std::int64_t planes = si[0] * si[1], H = si[2], W = si[3], OH = so[2], OW = so[3];
  auto x = load_f64(in[0]);
  std::vector<double> r(static_cast<std::size_t>(out.numel()));
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t oy = 0; oy < OH; ++oy)
      for (std::int64_t ox = 0; ox < OW; ++ox) {
        double acc = a.kind == PoolKind::max ? -std::numeric_limits<double>::infinity() : 0.0;
        std::int64_t count = 0;
        for (std::int64_t ky = 0; ky < a.kernel[0]; ++ky)
          for (std::int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            std::int64_t iy = oy * a.stride[0] - a.padding[0] + ky;
            std::int64_t ix = ox * a.stride[1] - a.padding[1] + kx;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
              continue;
            double v = x[static_cast<std::size_t>((p * H + iy) * W + ix)];
            if (a.kind == PoolKind::avg)
              acc += v;
            else if (std::isnan(v) || v > acc) // NaN propagates
              acc = std::isnan(acc) ? acc : v;
            ++count;
          }
        if (count == 0)
          fail("pool2d: window (" + std::to_string(oy) + ", " + std::to_string(ox) +
               ") holds no input cell");
        r[static_cast<std::size_t>((p * OH + oy) * OW + ox)] =
            a.kind == PoolKind::avg ? acc / static_cast<double>(count) : acc;
      }
  return store_f64(out, r);
}

namespace {

/// The forward conv's geometry: x [N, C, H, W], w [O, C/groups, KH, KW], y [N, O, OH, OW].
struct ConvGeom {
  std::int64_t N, C, H, W, O, CG, KH, KW, OH, OW, groups;
  std::int64_t sh, sw, ph, pw, dh, dw;
  std::size_t xi(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return static_cast<std::size_t>(((n * C + c) * H + h) * W + w);
  }
  std::size_t wi(std::int64_t o, std::int64_t c, std::int64_t ky, std::int64_t kx) const {
    return static_cast<std::size_t>(((o * CG + c) * KH + ky) * KW + kx);
  }
  std::size_t yi(std::int64_t n, std::int64_t o, std::int64_t oy, std::int64_t ox) const {
    return static_cast<std::size_t>(((n * O + o) * OH + oy) * OW + ox);
  }
  /// Calls f(x index, w index, y index) for every in-bounds tap of the convolution.
  template <class F> void each_tap(F f) const {
    const std::int64_t per_group = O / groups;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < O; ++o)
        for (std::int64_t oy = 0; oy < OH; ++oy)
          for (std::int64_t ox = 0; ox < OW; ++ox)
            for (std::int64_t c = 0; c < CG; ++c)
              for (std::int64_t ky = 0; ky < KH; ++ky)
                for (std::int64_t kx = 0; kx < KW; ++kx) {
                  const std::int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                  if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                    continue;
                  f(xi(n, o / per_group * CG + c, iy, ix), wi(o, c, ky, kx), yi(n, o, oy, ox));
                }
  }
};

ConvGeom conv_geom(const Conv2dGradAttrs& a, const Sizes& x, const Sizes& w, const Sizes& y) {
  return {x[0],        x[1],         x[2],         x[3],          w[0],         w[1],
          w[2],        w[3],         y[2],         y[3],          a.groups,     a.stride[0],
          a.stride[1], a.padding[0], a.padding[1], a.dilation[0], a.dilation[1]};
}

} // namespace

RLX_REFERENCE_KERNEL(Conv2dGradInput) {
  // dx[n, c, iy, ix] = sum of dy[n, o, oy, ox] w[o, c - g C/groups, ky, kx] over the taps of the
  // forward that read (iy, ix); taps in the padding are dropped.
  const auto& a = node.attr<Conv2dGradAttrs>();
  const ConvGeom g = conv_geom(a, out.sizes(), in[1].shape().sizes(), in[0].shape().sizes());
  const auto dy = load_f64(in[0]);
  const auto w = load_f64(in[1]);
  std::vector<double> dx(static_cast<std::size_t>(out.numel()), 0.0);
  g.each_tap([&](std::size_t xi, std::size_t wi, std::size_t yi) { dx[xi] += dy[yi] * w[wi]; });
  return store_f64(out, dx);
}

RLX_REFERENCE_KERNEL(Conv2dGradWeight) {
  // dw[o, c, ky, kx] = sum over n, oy, ox of dy[n, o, oy, ox] x[n, g C/groups + c, iy, ix] over
  // the in-bounds taps (padding reads 0).
  const auto& a = node.attr<Conv2dGradAttrs>();
  const ConvGeom g = conv_geom(a, in[0].shape().sizes(), out.sizes(), in[1].shape().sizes());
  const auto x = load_f64(in[0]);
  const auto dy = load_f64(in[1]);
  std::vector<double> dw(static_cast<std::size_t>(out.numel()), 0.0);
  g.each_tap([&](std::size_t xi, std::size_t wi, std::size_t yi) { dw[wi] += dy[yi] * x[xi]; });
  return store_f64(out, dw);
}

RLX_REFERENCE_KERNEL(Pool2dGrad) {
  // avg: each window's dy / (its in-bounds cell count) is added to those cells. max: each
  // window's dy goes to its first in-bounds cell (row-major) equal to y, or NaN when y is NaN
  // (torch's max_pool2d); a window with no such cell passes nothing on.
  const auto& a = node.attr<Pool2dGradAttrs>();
  const bool is_max = a.kind == PoolKind::max;
  const Sizes so = in.back().shape().sizes();
  const std::int64_t planes = so[0] * so[1], H = a.input_size[0], W = a.input_size[1];
  const std::int64_t OH = so[2], OW = so[3];
  const auto dy = load_f64(in.back());
  const std::vector<double> x = is_max ? load_f64(in[0]) : std::vector<double>{};
  const std::vector<double> y = is_max ? load_f64(in[1]) : std::vector<double>{};
  std::vector<double> dx(static_cast<std::size_t>(out.numel()), 0.0);
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t oy = 0; oy < OH; ++oy)
      for (std::int64_t ox = 0; ox < OW; ++ox) {
        const auto yi = static_cast<std::size_t>((p * OH + oy) * OW + ox);
        std::vector<std::size_t> cells;
        for (std::int64_t ky = 0; ky < a.kernel[0]; ++ky)
          for (std::int64_t kx = 0; kx < a.kernel[1]; ++kx) {
            const std::int64_t iy = oy * a.stride[0] - a.padding[0] + ky;
            const std::int64_t ix = ox * a.stride[1] - a.padding[1] + kx;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
              cells.push_back(static_cast<std::size_t>((p * H + iy) * W + ix));
          }
        if (!is_max) {
          for (std::size_t c : cells)
            dx[c] += dy[yi] / static_cast<double>(cells.size());
          continue;
        }
        for (std::size_t c : cells)
          if (x[c] == y[yi] || (std::isnan(x[c]) && std::isnan(y[yi]))) {
            dx[c] += dy[yi];
            break;
          }
      }
  return store_f64(out, dx);
}

} // namespace rlx::ir::reference::kernels
