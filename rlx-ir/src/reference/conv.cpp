// conv.cpp: reference kernels of Conv2d and Pool2d (NCHW, direct loops in double).
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

} // namespace rlx::ir::reference::kernels
