// conv.cpp: Conv2d and Pool2d (NCHW): oneDNN primitives for f32, direct loops otherwise.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
#include "rlx/ir/error.hpp"

#include <limits>

namespace rlx::cpu {
namespace {

/// Static geometry of a Conv2d / Pool2d node.
struct Geom {
  std::int64_t n, c, h, w, o, kh, kw, oh, ow, groups = 1;
  std::int64_t sh, sw, ph, pw, dh = 1, dw = 1;
};

Geom conv_geom(const NodeView& v) {
  const auto& a = v.node().attr<ir::Conv2dAttrs>();
  auto x = v.in(0).sizes(), wt = v.in(1).sizes(), y = v.out().sizes();
  return {x[0],         x[1],         x[2],          x[3],         wt[0],       wt[2],
          wt[3],        y[2],         y[3],          a.groups,     a.stride[0], a.stride[1],
          a.padding[0], a.padding[1], a.dilation[0], a.dilation[1]};
}

Geom pool_geom(const NodeView& v) {
  const auto& a = v.node().attr<ir::Pool2dAttrs>();
  auto x = v.in(0).sizes(), y = v.out().sizes();
  return {x[0], x[1], x[2], x[3],        x[1],        a.kernel[0],  a.kernel[1],
          y[2], y[3], 1,    a.stride[0], a.stride[1], a.padding[0], a.padding[1]};
}

// ---- oneDNN
// --------------------------------------------------------------------------------------

struct OnednnConv {
  dnnl::memory::desc src, wei, bias, dst;
  dnnl::convolution_forward::primitive_desc pd;
};

OnednnConv onednn_conv(const NodeView& v) {
  Geom g = conv_geom(v);
  OnednnConv m;
  m.src = onednn::plain_md({g.n, g.c, g.h, g.w});
  m.dst = onednn::plain_md({g.n, g.o, g.oh, g.ow});
  m.wei = g.groups == 1 ? onednn::plain_md({g.o, g.c, g.kh, g.kw})
                        : onednn::plain_md({g.groups, g.o / g.groups, g.c / g.groups, g.kh, g.kw});
  dnnl::memory::dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad{g.ph, g.pw};
  auto attr = onednn::user_scratchpad();
  if (v.arity() == 3) {
    m.bias = onednn::plain_md({g.o});
    m.pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, m.src, m.wei, m.bias,
                                        m.dst, strides, dil, pad, pad),
        attr, onednn::engine());
  } else {
    m.pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, m.src, m.wei, m.dst,
                                        strides, dil, pad, pad),
        attr, onednn::engine());
  }
  return m;
}

bool accepts_f32_nonempty(const NodeView& v) {
  return v.out().dtype == ir::DType::f32 && v.out().numel() > 0 && v.in(0).numel() > 0;
}
std::int64_t conv_scratch(const NodeView& v) {
  return onednn::scratchpad_bytes(onednn_conv(v).pd);
}
std::unique_ptr<Kernel> make_onednn_conv(const LowerContext& c) {
  OnednnConv m = onednn_conv(c);
  onednn::BoundPrimitive p{dnnl::convolution_forward(m.pd)};
  p.bind(DNNL_ARG_SRC, m.src, c.src(0));
  p.bind(DNNL_ARG_WEIGHTS, m.wei, c.src(1));
  if (c.arity() == 3)
    p.bind(DNNL_ARG_BIAS, m.bias, c.src(2));
  p.bind(DNNL_ARG_DST, m.dst, c.dst());
  if (auto s = onednn::scratchpad_bytes(m.pd); s > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, m.pd.scratchpad_desc(), c.scratch(s));
  Geom g = conv_geom(c);
  return std::make_unique<onednn::PrimitiveKernel>(
      std::move(p), c.out().numel() * (g.c / g.groups) * g.kh * g.kw); // multiply-adds
}

struct OnednnPool {
  dnnl::memory::desc src, dst;
  dnnl::pooling_forward::primitive_desc pd;
};

OnednnPool onednn_pool(const NodeView& v) {
  Geom g = pool_geom(v);
  OnednnPool m;
  m.src = onednn::plain_md({g.n, g.c, g.h, g.w});
  m.dst = onednn::plain_md({g.n, g.c, g.oh, g.ow});
  auto alg = v.node().attr<ir::Pool2dAttrs>().kind == ir::PoolKind::max
                 ? dnnl::algorithm::pooling_max
                 : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::memory::dims strides{g.sh, g.sw}, kernel{g.kh, g.kw}, pad{g.ph, g.pw};
  m.pd = dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, alg, m.src, m.dst, strides,
                                  kernel, pad, pad),
      onednn::user_scratchpad(), onednn::engine());
  return m;
}

std::int64_t pool_scratch(const NodeView& v) {
  return onednn::scratchpad_bytes(onednn_pool(v).pd);
}
std::unique_ptr<Kernel> make_onednn_pool(const LowerContext& c) {
  OnednnPool m = onednn_pool(c);
  onednn::BoundPrimitive p{dnnl::pooling_forward(m.pd)};
  p.bind(DNNL_ARG_SRC, m.src, c.src(0));
  p.bind(DNNL_ARG_DST, m.dst, c.dst());
  if (auto s = onednn::scratchpad_bytes(m.pd); s > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, m.pd.scratchpad_desc(), c.scratch(s));
  Geom g = pool_geom(c);
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), c.out().numel() * g.kh * g.kw);
}

// ---- loops
// ---------------------------------------------------------------------------------------

template <class T> class ConvLoop final : public Kernel {
public:
  explicit ConvLoop(const LowerContext& c)
      : g_(conv_geom(c)), x_(reinterpret_cast<const T*>(c.src(0))),
        w_(reinterpret_cast<const T*>(c.src(1))),
        b_(c.arity() == 3 ? reinterpret_cast<const T*>(c.src(2)) : nullptr),
        y_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const Geom& g = g_;
    std::int64_t cg = g.c / g.groups, og = g.o / g.groups;
    parallel_for(ctx, g.n * g.o, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t no = b; no < e; ++no) {
        std::int64_t n = no / g.o, o = no % g.o, grp = o / og;
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            double acc = b_ ? static_cast<double>(to_compute<T>(b_[o])) : 0.0;
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t ky = 0; ky < g.kh; ++ky) {
                std::int64_t iy = oy * g.sh - g.ph + ky * g.dh;
                if (iy < 0 || iy >= g.h)
                  continue;
                for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                  std::int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                  if (ix < 0 || ix >= g.w)
                    continue;
                  T xv = x_[((n * g.c + grp * cg + ci) * g.h + iy) * g.w + ix];
                  T wv = w_[((o * cg + ci) * g.kh + ky) * g.kw + kx];
                  acc += static_cast<double>(to_compute<T>(xv)) *
                         static_cast<double>(to_compute<T>(wv));
                }
              }
            y_[((n * g.o + o) * g.oh + oy) * g.ow + ox] =
                from_compute<T>(static_cast<compute_t<T>>(acc));
          }
      }
    });
  }

private:
  Geom g_;
  const T* x_;
  const T* w_;
  const T* b_;
  T* y_;
};

template <class T> class PoolLoop final : public Kernel {
public:
  explicit PoolLoop(const LowerContext& c)
      : g_(pool_geom(c)), max_(c.node().attr<ir::Pool2dAttrs>().kind == ir::PoolKind::max),
        x_(reinterpret_cast<const T*>(c.src(0))), y_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const Geom& g = g_;
    parallel_for(ctx, g.n * g.c, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t nc = b; nc < e; ++nc) {
        const T* x = x_ + nc * g.h * g.w;
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            double acc = max_ ? -std::numeric_limits<double>::infinity() : 0.0;
            std::int64_t count = 0;
            for (std::int64_t ky = 0; ky < g.kh; ++ky) {
              std::int64_t iy = oy * g.sh - g.ph + ky;
              if (iy < 0 || iy >= g.h)
                continue;
              for (std::int64_t kx = 0; kx < g.kw; ++kx) {
                std::int64_t ix = ox * g.sw - g.pw + kx;
                if (ix < 0 || ix >= g.w)
                  continue;
                auto v = static_cast<double>(to_compute<T>(x[iy * g.w + ix]));
                acc = max_ ? (v > acc || v != v ? v : acc) : acc + v;
                ++count;
              }
            }
            if (!max_)
              acc /= static_cast<double>(count);
            y_[(nc * g.oh + oy) * g.ow + ox] = from_compute<T>(static_cast<compute_t<T>>(acc));
          }
      }
    });
  }

private:
  Geom g_;
  bool max_;
  const T* x_;
  T* y_;
};

constexpr KernelImpl kConv[] = {
    {"onednn", accepts_f32_nonempty, conv_scratch, make_onednn_conv},
    {"loop", accept_all, nullptr, make_float_loop<ConvLoop>},
};
constexpr KernelImpl kPool[] = {
    {"onednn", accepts_f32_nonempty, pool_scratch, make_onednn_pool},
    {"loop", accept_all, nullptr, make_float_loop<PoolLoop>},
};

} // namespace

std::span<const KernelImpl> conv2d_impls() {
  return kConv;
}
std::span<const KernelImpl> pool2d_impls() {
  return kPool;
}

} // namespace rlx::cpu
