// conv_grad.cpp: the conv / pool backward ops (ops.def "conv / pool backward"), NCHW.
// - conv2d_grad_input / conv2d_grad_weight: oneDNN convolution backward-data / backward-weights
//   primitives for f32 (plain layouts, scratchpad in the arena; the forward_training primitive
//   descriptor they need as a hint is built at compile time and never run); direct loops in
//   double for f64.
// - pool2d_grad: avg through oneDNN's pooling backward (exclude-padding) for f32; max, and avg in
//   f64, through one loop: oneDNN's max-pool backward needs the forward_training workspace (the
//   argmax of each window), which the forward inference primitive never writes, so it would mean
//   a second forward pass; the loop finds the first cell equal to y instead (torch's tie rule,
//   as ops.def defines it) in the same one pass over the window.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace rlx::cpu {
namespace {

/// The forward conv's geometry: x [n, c, h, w], w [o, c / groups, kh, kw], y [n, o, oh, ow].
struct ConvGeom {
  std::int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  std::int64_t sh, sw, ph, pw, dh, dw;
};

ConvGeom conv_geom(const NodeView& v) {
  const auto& a = v.node().attr<ir::Conv2dGradAttrs>();
  const bool data = v.node().op == ir::OpKind::Conv2dGradInput;
  // conv2d_grad_input(dy, w) -> x; conv2d_grad_weight(x, dy) -> w.
  const auto x = data ? v.out().sizes() : v.in(0).sizes();
  const auto wt = data ? v.in(1).sizes() : v.out().sizes();
  const auto y = data ? v.in(0).sizes() : v.in(1).sizes();
  return {x[0],         x[1],         x[2],          x[3],         wt[0],       wt[2],
          wt[3],        y[2],         y[3],          a.groups,     a.stride[0], a.stride[1],
          a.padding[0], a.padding[1], a.dilation[0], a.dilation[1]};
}

/// The output columns [first, last) whose tap kx reads an input column inside [0, w): ix = ox sw -
/// pw + kx dw, so the inner loops run without a bounds check.
std::pair<std::int64_t, std::int64_t> valid_columns(const ConvGeom& g, std::int64_t kx) {
  const std::int64_t off = kx * g.dw - g.pw; // ix = ox sw + off
  const std::int64_t first = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
  const std::int64_t last = g.w - off <= 0 ? 0 : std::min(g.ow, (g.w - off - 1) / g.sw + 1);
  return {first, std::max(first, last)};
}

bool accepts_f32_nonempty(const NodeView& v) {
  return v.out().dtype == ir::DType::f32 && v.out().numel() > 0 && v.in(0).numel() > 0 &&
         v.in(1).numel() > 0;
}

// ---- oneDNN convolution backward
// -----------------------------------------------------------------

struct ConvMds {
  dnnl::memory::desc src, wei, dst;
  dnnl::memory::dims strides, dil, pad;
  dnnl::convolution_forward::primitive_desc hint;
};

ConvMds conv_mds(const ConvGeom& g) {
  ConvMds m;
  m.src = onednn::plain_md({g.n, g.c, g.h, g.w});
  m.dst = onednn::plain_md({g.n, g.o, g.oh, g.ow});
  m.wei = g.groups == 1 ? onednn::plain_md({g.o, g.c, g.kh, g.kw})
                        : onednn::plain_md({g.groups, g.o / g.groups, g.c / g.groups, g.kh, g.kw});
  m.strides = {g.sh, g.sw};
  m.dil = {g.dh - 1, g.dw - 1};
  m.pad = {g.ph, g.pw};
  m.hint = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, m.src, m.wei, m.dst,
                                      m.strides, m.dil, m.pad, m.pad),
      onednn::engine());
  return m;
}

dnnl::convolution_backward_data::primitive_desc data_pd(const ConvMds& m) {
  return dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, m.src, m.wei,
                                            m.dst, m.strides, m.dil, m.pad, m.pad),
      onednn::user_scratchpad(), onednn::engine(), m.hint);
}

dnnl::convolution_backward_weights::primitive_desc weights_pd(const ConvMds& m) {
  return dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, m.src, m.wei,
                                               m.dst, m.strides, m.dil, m.pad, m.pad),
      onednn::user_scratchpad(), onednn::engine(), m.hint);
}

std::int64_t conv_work(const ConvGeom& g) { // multiply-adds, as the forward
  return g.n * g.o * g.oh * g.ow * (g.c / g.groups) * g.kh * g.kw;
}

/// oneDNN 2.6's gemm backward-weights (plain layouts) with a short reduction per output position
/// (C / groups * KH * KW <= 32, a first layer on RGB images) ran 50-100x slower on 2 threads than
/// on one here (ic 3, 3x3, 32x32, batch 32: 1.4-2.6 s against 22-27 ms; the other layers were
/// not affected); such nodes take the loop, which needs about the single-threaded time.
bool accepts_onednn_grad_weight(const NodeView& v) {
  const ConvGeom g = conv_geom(v);
  return accepts_f32_nonempty(v) && (g.c / g.groups) * g.kh * g.kw > 32;
}

std::int64_t grad_input_scratch(const NodeView& v) {
  return onednn::scratchpad_bytes(data_pd(conv_mds(conv_geom(v))));
}
std::unique_ptr<Kernel> make_onednn_grad_input(const LowerContext& c) {
  const ConvGeom g = conv_geom(c);
  const ConvMds m = conv_mds(g);
  const auto pd = data_pd(m);
  onednn::BoundPrimitive p{dnnl::convolution_backward_data(pd)};
  p.bind(DNNL_ARG_DIFF_DST, m.dst, c.src(0));
  p.bind(DNNL_ARG_WEIGHTS, m.wei, c.src(1));
  p.bind(DNNL_ARG_DIFF_SRC, m.src, c.dst());
  if (auto s = onednn::scratchpad_bytes(pd); s > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc(), c.scratch(s));
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), conv_work(g));
}

std::int64_t grad_weight_scratch(const NodeView& v) {
  return onednn::scratchpad_bytes(weights_pd(conv_mds(conv_geom(v))));
}
std::unique_ptr<Kernel> make_onednn_grad_weight(const LowerContext& c) {
  const ConvGeom g = conv_geom(c);
  const ConvMds m = conv_mds(g);
  const auto pd = weights_pd(m);
  onednn::BoundPrimitive p{dnnl::convolution_backward_weights(pd)};
  p.bind(DNNL_ARG_SRC, m.src, c.src(0));
  p.bind(DNNL_ARG_DIFF_DST, m.dst, c.src(1));
  p.bind(DNNL_ARG_DIFF_WEIGHTS, m.wei, c.dst());
  if (auto s = onednn::scratchpad_bytes(pd); s > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc(), c.scratch(s));
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), conv_work(g));
}

// ---- conv loops (f64)
// ------------------------------------------------------------------------------

/// dx: one task per (image, group); the group's input planes are accumulated in double, then
/// stored.
template <class T> class ConvGradInputLoop final : public Kernel {
public:
  explicit ConvGradInputLoop(const LowerContext& c)
      : g_(conv_geom(c)), dy_(reinterpret_cast<const T*>(c.src(0))),
        w_(reinterpret_cast<const T*>(c.src(1))), dx_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const ConvGeom& g = g_;
    const std::int64_t cg = g.c / g.groups, og = g.o / g.groups, plane = g.h * g.w;
    parallel_for(ctx, g.n * g.groups, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<double> acc(static_cast<std::size_t>(cg * plane));
      for (std::int64_t ng = b; ng < e; ++ng) {
        const std::int64_t n = ng / g.groups, grp = ng % g.groups;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (std::int64_t ol = 0; ol < og; ++ol) {
          const std::int64_t o = grp * og + ol;
          const T* dy = dy_ + (n * g.o + o) * g.oh * g.ow;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t ky = 0; ky < g.kh; ++ky)
              for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                const auto wv =
                    static_cast<double>(to_compute<T>(w_[((o * cg + ci) * g.kh + ky) * g.kw + kx]));
                double* a = acc.data() + ci * plane;
                const auto [ox0, ox1] = valid_columns(g, kx);
                const std::int64_t off = kx * g.dw - g.pw;
                for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                  const std::int64_t iy = oy * g.sh - g.ph + ky * g.dh;
                  if (iy < 0 || iy >= g.h)
                    continue;
                  const std::int64_t row = iy * g.w + off; // + ox sw: in [0, w) for valid ox
                  const T* dyrow = dy + oy * g.ow;
                  for (std::int64_t ox = ox0; ox < ox1; ++ox)
                    a[row + ox * g.sw] += wv * static_cast<double>(to_compute<T>(dyrow[ox]));
                }
              }
        }
        T* dx = dx_ + (n * g.c + grp * cg) * plane;
        for (std::int64_t i = 0; i < cg * plane; ++i)
          dx[i] = from_compute<T>(static_cast<compute_t<T>>(acc[static_cast<std::size_t>(i)]));
      }
    });
  }

private:
  ConvGeom g_;
  const T* dy_;
  const T* w_;
  T* dx_;
};

/// dw: one task per output channel (its [C / groups, KH, KW] slice, accumulated in double): per
/// row of dy, each tap's products with its input row summed in the compute type (vectorised).
template <class T> class ConvGradWeightLoop final : public Kernel {
public:
  explicit ConvGradWeightLoop(const LowerContext& c)
      : g_(conv_geom(c)), x_(reinterpret_cast<const T*>(c.src(0))),
        dy_(reinterpret_cast<const T*>(c.src(1))), dw_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const ConvGeom& g = g_;
    const std::int64_t cg = g.c / g.groups, og = g.o / g.groups;
    parallel_for(ctx, g.o, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<double> acc(static_cast<std::size_t>(cg * g.kh * g.kw));
      for (std::int64_t o = b; o < e; ++o) {
        const std::int64_t grp = o / og;
        std::fill(acc.begin(), acc.end(), 0.0);
        // Per output row of dy (in L1), every tap's dot product with its input row.
        for (std::int64_t n = 0; n < g.n; ++n)
          for (std::int64_t oy = 0; oy < g.oh; ++oy) {
            const T* dyrow = dy_ + ((n * g.o + o) * g.oh + oy) * g.ow;
            for (std::int64_t ci = 0; ci < cg; ++ci) {
              const T* x = x_ + (n * g.c + grp * cg + ci) * g.h * g.w;
              for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                const std::int64_t iy = oy * g.sh - g.ph + ky * g.dh;
                if (iy < 0 || iy >= g.h)
                  continue;
                for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                  const auto [ox0, ox1] = valid_columns(g, kx);
                  const std::int64_t row = iy * g.w + kx * g.dw - g.pw; // + ox sw: in [0, w)
                  // One row's products summed in the compute type (vectorised), rows in double.
                  compute_t<T> r = 0;
#pragma omp simd reduction(+ : r)
                  for (std::int64_t ox = ox0; ox < ox1; ++ox)
                    r += to_compute<T>(x[row + ox * g.sw]) * to_compute<T>(dyrow[ox]);
                  acc[static_cast<std::size_t>((ci * g.kh + ky) * g.kw + kx)] +=
                      static_cast<double>(r);
                }
              }
            }
          }
        T* dw = dw_ + o * cg * g.kh * g.kw;
        for (std::size_t i = 0; i < acc.size(); ++i)
          dw[i] = from_compute<T>(static_cast<compute_t<T>>(acc[i]));
      }
    });
  }

private:
  ConvGeom g_;
  const T* x_;
  const T* dy_;
  T* dw_;
};

// ---- pool2d_grad
// -----------------------------------------------------------------------------------

struct PoolGeom {
  std::int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  bool is_max;
};

PoolGeom pool_geom(const NodeView& v) {
  const auto& a = v.node().attr<ir::Pool2dGradAttrs>();
  const auto x = v.out().sizes(), y = v.in(v.arity() - 1).sizes();
  return {x[0] * x[1], x[2],         x[3],         y[2],
          y[3],        a.kernel[0],  a.kernel[1],  a.stride[0],
          a.stride[1], a.padding[0], a.padding[1], a.kind == ir::PoolKind::max};
}

bool accepts_f32_avg(const NodeView& v) {
  return v.out().dtype == ir::DType::f32 && v.out().numel() > 0 &&
         v.node().attr<ir::Pool2dGradAttrs>().kind == ir::PoolKind::avg;
}

dnnl::pooling_backward::primitive_desc avg_pool_pd(const NodeView& v) {
  const auto x = v.out().sizes(), y = v.in(0).sizes();
  const PoolGeom g = pool_geom(v);
  const auto src = onednn::plain_md(x), dst = onednn::plain_md(y);
  const dnnl::memory::dims strides{g.sh, g.sw}, kernel{g.kh, g.kw}, pad{g.ph, g.pw};
  const auto alg = dnnl::algorithm::pooling_avg_exclude_padding;
  const dnnl::pooling_forward::primitive_desc hint(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, src, dst, strides, kernel,
                                  pad, pad),
      onednn::engine());
  return dnnl::pooling_backward::primitive_desc(
      dnnl::pooling_backward::desc(alg, src, dst, strides, kernel, pad, pad),
      onednn::user_scratchpad(), onednn::engine(), hint);
}

std::int64_t avg_pool_scratch(const NodeView& v) {
  return onednn::scratchpad_bytes(avg_pool_pd(v));
}
std::unique_ptr<Kernel> make_onednn_avg_pool(const LowerContext& c) {
  const auto pd = avg_pool_pd(c);
  onednn::BoundPrimitive p{dnnl::pooling_backward(pd)};
  p.bind(DNNL_ARG_DIFF_DST, onednn::plain_md(c.in(0).sizes()), c.src(0));
  p.bind(DNNL_ARG_DIFF_SRC, onednn::plain_md(c.out().sizes()), c.dst());
  if (auto s = onednn::scratchpad_bytes(pd); s > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc(), c.scratch(s));
  const PoolGeom g = pool_geom(c);
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), c.in(0).numel() * g.kh * g.kw);
}

/// One task per plane: dx zeroed, then each window's dy added to its first in-bounds cell equal
/// to y (or NaN when y is NaN; max) or, divided by the in-bounds count, to each of them (avg).
/// Overlapping windows accumulate in the compute type (f32 for f32, as torch's CPU kernel).
template <class T> class PoolGradLoop final : public Kernel {
public:
  explicit PoolGradLoop(const LowerContext& c)
      : g_(pool_geom(c)), x_(g_.is_max ? reinterpret_cast<const T*>(c.src(0)) : nullptr),
        y_(g_.is_max ? reinterpret_cast<const T*>(c.src(1)) : nullptr),
        dy_(reinterpret_cast<const T*>(c.src(c.arity() - 1))), dx_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const PoolGeom& g = g_;
    const std::int64_t plane = g.h * g.w, oplane = g.oh * g.ow;
    parallel_for(ctx, g.planes, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t p = b; p < e; ++p) {
        T* dx = dx_ + p * plane;
        const T* dy = dy_ + p * oplane;
        std::fill(dx, dx + plane, from_compute<T>(compute_t<T>(0)));
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
          const std::int64_t y0 = std::max<std::int64_t>(oy * g.sh - g.ph, 0);
          const std::int64_t y1 = std::min<std::int64_t>(oy * g.sh - g.ph + g.kh, g.h);
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            const std::int64_t x0 = std::max<std::int64_t>(ox * g.sw - g.pw, 0);
            const std::int64_t x1 = std::min<std::int64_t>(ox * g.sw - g.pw + g.kw, g.w);
            const compute_t<T> d = to_compute<T>(dy[oy * g.ow + ox]);
            if (g.is_max)
              add_to_first_max(p, oy * g.ow + ox, y0, y1, x0, x1, dx, d);
            else {
              const compute_t<T> share = d / static_cast<compute_t<T>>((y1 - y0) * (x1 - x0));
              for (std::int64_t iy = y0; iy < y1; ++iy)
                for (std::int64_t ix = x0; ix < x1; ++ix)
                  dx[iy * g.w + ix] = from_compute<T>(to_compute<T>(dx[iy * g.w + ix]) + share);
            }
          }
        }
      }
    });
  }

private:
  void add_to_first_max(std::int64_t p, std::int64_t yi, std::int64_t y0, std::int64_t y1,
                        std::int64_t x0, std::int64_t x1, T* dx, compute_t<T> d) const {
    const T* x = x_ + p * g_.h * g_.w;
    const compute_t<T> m = to_compute<T>(y_[p * g_.oh * g_.ow + yi]);
    const bool nan = m != m;
    for (std::int64_t iy = y0; iy < y1; ++iy)
      for (std::int64_t ix = x0; ix < x1; ++ix) {
        const compute_t<T> v = to_compute<T>(x[iy * g_.w + ix]);
        if (v == m || (nan && v != v)) {
          dx[iy * g_.w + ix] = from_compute<T>(to_compute<T>(dx[iy * g_.w + ix]) + d);
          return;
        }
      }
  }

  PoolGeom g_;
  const T* x_;
  const T* y_;
  const T* dy_;
  T* dx_;
};

constexpr KernelImpl kGradInput[] = {
    {"onednn", accepts_f32_nonempty, grad_input_scratch, make_onednn_grad_input},
    {"loop", accept_all, nullptr, make_float_loop<ConvGradInputLoop>},
};
constexpr KernelImpl kGradWeight[] = {
    {"onednn", accepts_onednn_grad_weight, grad_weight_scratch, make_onednn_grad_weight},
    {"loop", accept_all, nullptr, make_float_loop<ConvGradWeightLoop>},
};
constexpr KernelImpl kPoolGrad[] = {
    {"onednn", accepts_f32_avg, avg_pool_scratch, make_onednn_avg_pool},
    {"loop", accept_all, nullptr, make_float_loop<PoolGradLoop>},
};

} // namespace

std::span<const KernelImpl> conv2d_grad_input_impls() {
  return kGradInput;
}
std::span<const KernelImpl> conv2d_grad_weight_impls() {
  return kGradWeight;
}
std::span<const KernelImpl> pool2d_grad_impls() {
  return kPoolGrad;
}

} // namespace rlx::cpu
