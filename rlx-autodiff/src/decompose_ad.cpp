// decompose_ad.cpp: primitive forms of composite ops for the "via decomposition" rules.
#include "decompose_ad.hpp"

#include <cmath>

namespace rlx::autodiff::detail {

using ir::AttnLayout;
using ir::CmpOp;
using ir::Dim;
using ir::MaskKind;
using ir::Tensor;
using Sizes = std::vector<std::int64_t>;

std::int64_t static_dim(const Shape& s, std::size_t i, const char* what) {
  if (!s[i].is_static())
    fail(std::string("autodiff: ") + what + " needs a static dim " + std::to_string(i) + " in " +
         s.str() + "; bind the symbols first");
  return s[i].size();
}

NodeId const_tensor(Builder& b, const std::vector<std::int64_t>& sizes, DType t,
                    const std::vector<double>& v) {
  Tensor x(Shape::of(sizes, t));
  for (std::size_t i = 0; i < v.size(); ++i)
    x.set_f64(static_cast<std::int64_t>(i), v[i]);
  return b.constant(std::move(x));
}

NodeId index_tensor(Builder& b, const std::vector<std::int64_t>& sizes,
                    const std::vector<std::int64_t>& v) {
  Tensor x(Shape::of(sizes, DType::i64));
  auto d = x.data<std::int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i)
    d[i] = v[i];
  return b.constant(std::move(x));
}

NodeId attention_primitives(Builder& b, const ir::AttentionAttrs& a, std::span<const NodeId> in) {
  bool bshd = a.layout == AttnLayout::bshd;
  auto to_bhsd = [&](NodeId x) { return bshd ? b.transpose(x, {0, 2, 1, 3}) : x; };
  NodeId q = to_bhsd(in[0]), k = to_bhsd(in[1]), v = to_bhsd(in[2]);
  Shape qs = b.shape(q), ks = b.shape(k);
  DType t = qs.dtype;
  std::int64_t group = a.num_heads / a.num_kv_heads;
  auto repeat = [&](NodeId x) {
    if (group == 1)
      return x;
    Shape s = b.shape(x);
    NodeId r = b.reshape(x, {s[0], s[1], Dim(1), s[2], s[3]});
    r = b.expand(r, {s[0], s[1], Dim(group), s[2], s[3]});
    return b.reshape(r, {s[0], Dim(a.num_heads), s[2], s[3]});
  };
  k = repeat(k);
  v = repeat(v);
  double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(qs[3].size())));
  NodeId s = b.mul(b.matmul(q, k, false, true), scalar(b, scale, t));
  if (a.softcap) {
    NodeId cap = scalar(b, *a.softcap, t);
    s = b.mul(cap, b.tanh(b.div(s, cap)));
  }
  if (a.mask == MaskKind::bias)
    s = b.add(s, in[3]);
  NodeId keep;
  if (a.mask == MaskKind::causal || a.mask == MaskKind::sliding_window) {
    std::int64_t sq = static_dim(qs, 2, "attention's causal mask"),
                 sk = static_dim(ks, 2, "attention's causal mask");
    std::vector<double> m(static_cast<std::size_t>(sq * sk));
    for (std::int64_t i = 0; i < sq; ++i)
      for (std::int64_t j = 0; j < sk; ++j) {
        std::int64_t top = i + sk - sq;
        bool kept = j <= top && (a.mask == MaskKind::causal || j > top - a.window);
        m[static_cast<std::size_t>(i * sk + j)] = kept ? 1 : 0;
      }
    keep = const_tensor(b, {sq, sk}, DType::boolean, m);
  } else if (a.mask == MaskKind::padding) {
    Shape ms = b.shape(in[3]);
    NodeId nz = b.compare(CmpOp::ne, in[3], scalar(b, 0, ms.dtype));
    keep = b.reshape(nz, {ms[0], Dim(1), Dim(1), ms[1]});
  }
  if (keep.valid())
    s = b.where(keep, s, scalar(b, lowest(t), t));
  NodeId p = b.softmax(s, -1);
  if (keep.valid())
    p = b.mul(p, b.cast(keep, t));
  NodeId o = b.matmul(p, v);
  return bshd ? b.transpose(o, {0, 2, 1, 3}) : o;
}

namespace {

struct Window {
  std::int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  /// Flat index of input cell (ih, iw) reached by window (oh, ow) and tap (kh, kw), or -1 when it
  /// falls in the padding.
  std::int64_t at(std::int64_t o_h, std::int64_t o_w, std::int64_t k_h, std::int64_t k_w) const {
    std::int64_t ih = o_h * sh - ph + k_h * dh, iw = o_w * sw - pw + k_w * dw;
    return ih < 0 || ih >= h || iw < 0 || iw >= w ? -1 : ih * w + iw;
  }
};

} // namespace

NodeId conv_primitives(Builder& b, const ir::Conv2dAttrs& a, std::span<const NodeId> in) {
  Shape xs = b.shape(in[0]), ws = b.shape(in[1]);
  DType t = xs.dtype;
  std::int64_t C = xs[1].size(), O = ws[0].size(), G = a.groups, Cg = C / G, Og = O / G;
  Window win{xs[2].size(), xs[3].size(), ws[2].size(),  ws[3].size(),  a.stride[0], a.stride[1],
             a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], 0,           0};
  win.oh = (win.h + 2 * win.ph - (win.dh * (win.kh - 1) + 1)) / win.sh + 1;
  win.ow = (win.w + 2 * win.pw - (win.dw * (win.kw - 1) + 1)) / win.sw + 1;
  std::int64_t hw = win.h * win.w, kk = Cg * win.kh * win.kw, ohow = win.oh * win.ow;
  std::vector<std::int64_t> idx;
  idx.reserve(static_cast<std::size_t>(G * kk * ohow));
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t cl = 0; cl < Cg; ++cl)
      for (std::int64_t i = 0; i < win.kh; ++i)
        for (std::int64_t j = 0; j < win.kw; ++j)
          for (std::int64_t oh = 0; oh < win.oh; ++oh)
            for (std::int64_t ow = 0; ow < win.ow; ++ow) {
              std::int64_t cell = win.at(oh, ow, i, j);
              idx.push_back(cell < 0 ? C * hw : (g * Cg + cl) * hw + cell);
            }
  NodeId flat = b.reshape(in[0], {xs[0], Dim(C * hw)});
  NodeId padded = b.concat({flat, zeros(b, Shape({xs[0], Dim(1)}, t))}, 1);
  NodeId patches = b.gather(padded, index_tensor(b, {G, kk, ohow}, idx), 1); // [N, G, kk, OHOW]
  NodeId wr = b.reshape(in[1], {Dim(G), Dim(Og), Dim(kk)});
  NodeId y = b.matmul(wr, patches); // [N, G, Og, OHOW]
  y = b.reshape(y, {xs[0], Dim(O), Dim(win.oh), Dim(win.ow)});
  if (in.size() > 2)
    y = b.add(y, b.reshape(in[2], {Dim(O), Dim(1), Dim(1)}));
  return y;
}

namespace {

/// The windows of a Pool2d over x's [H, W] planes: per (tap, output cell), tap-major, the cell's
/// index in the flattened [H W] plane, or H W for a padding cell; per output cell, how many taps
/// are in bounds.
struct PoolWindows {
  Window win;
  std::int64_t hw, kk, ohow;
  std::vector<std::int64_t> idx;
  std::vector<double> inside, count;
};

PoolWindows pool_windows(const Shape& xs, const ir::Pool2dAttrs& a) {
  PoolWindows p{{xs[2].size(), xs[3].size(), a.kernel[0], a.kernel[1], a.stride[0], a.stride[1],
                 a.padding[0], a.padding[1], 1, 1, 0, 0},
                0,
                0,
                0,
                {},
                {},
                {}};
  Window& win = p.win;
  win.oh = (win.h + 2 * win.ph - win.kh) / win.sh + 1;
  win.ow = (win.w + 2 * win.pw - win.kw) / win.sw + 1;
  p.hw = win.h * win.w;
  p.kk = win.kh * win.kw;
  p.ohow = win.oh * win.ow;
  p.count.assign(static_cast<std::size_t>(p.ohow), 0.0);
  for (std::int64_t i = 0; i < win.kh; ++i)
    for (std::int64_t j = 0; j < win.kw; ++j)
      for (std::int64_t oh = 0; oh < win.oh; ++oh)
        for (std::int64_t ow = 0; ow < win.ow; ++ow) {
          const std::int64_t cell = win.at(oh, ow, i, j);
          p.idx.push_back(cell < 0 ? p.hw : cell);
          p.inside.push_back(cell < 0 ? 0.0 : 1.0);
          if (cell >= 0)
            p.count[static_cast<std::size_t>(oh * win.ow + ow)] += 1;
        }
  return p;
}

/// \p v [N, C, H, W] gathered into its windows [N, C, KH KW, OH OW]; padding cells read \p pad.
NodeId window_patches(Builder& b, const PoolWindows& p, NodeId v, double pad) {
  const Shape vs = b.shape(v);
  const NodeId flat = b.reshape(v, {vs[0], vs[1], Dim(p.hw)});
  const NodeId cells = full(b, Shape({vs[0], vs[1], Dim(1)}, vs.dtype), pad);
  return b.gather(b.concat({flat, cells}, 2), index_tensor(b, {p.kk, p.ohow}, p.idx), 2);
}

} // namespace

NodeId pool_primitives(Builder& b, const ir::Pool2dAttrs& a, std::span<const NodeId> in) {
  const Shape xs = b.shape(in[0]);
  const DType t = xs.dtype;
  const bool is_max = a.kind == ir::PoolKind::max;
  const PoolWindows p = pool_windows(xs, a);
  const NodeId patches = window_patches(b, p, in[0], is_max ? lowest(t) : 0.0);
  const NodeId y = is_max ? b.reduce(ir::ReduceOp::max, patches, {2})
                          : b.div(b.sum(patches, {2}), const_tensor(b, {p.ohow}, t, p.count));
  return b.reshape(y, {xs[0], xs[1], Dim(p.win.oh), Dim(p.win.ow)});
}

NodeId max_pool_tangent(Builder& b, const ir::Pool2dAttrs& a, NodeId x, NodeId y, NodeId tx) {
  const Shape xs = b.shape(x);
  const DType t = xs.dtype;
  const PoolWindows p = pool_windows(xs, a);
  auto as_float = [&](NodeId c) { return b.cast(c, t); };
  const NodeId px = window_patches(b, p, x, 0.0);
  const NodeId yr = b.reshape(y, {xs[0], xs[1], Dim(1), Dim(p.ohow)});
  // hit: an in-bounds cell equal to y, or NaN where y is NaN (pool2d_grad's rule)
  const NodeId both_nan =
      b.mul(as_float(b.compare(CmpOp::ne, px, px)), as_float(b.compare(CmpOp::ne, yr, yr)));
  const NodeId hit = b.mul(b.add(as_float(b.compare(CmpOp::eq, px, yr)), both_nan),
                           const_tensor(b, {p.kk, p.ohow}, t, p.inside));
  std::vector<std::int64_t> iota(static_cast<std::size_t>(p.kk));
  for (std::int64_t i = 0; i < p.kk; ++i)
    iota[static_cast<std::size_t>(i)] = i;
  const NodeId first = b.argmax(hit, 2, true); // [N, C, 1, OH OW]
  const NodeId pick =
      b.mul(as_float(b.compare(CmpOp::eq, index_tensor(b, {p.kk, 1}, iota), first)), hit);
  const NodeId ty = b.sum(b.mul(pick, window_patches(b, p, tx, 0.0)), {2});
  return b.reshape(ty, {xs[0], xs[1], Dim(p.win.oh), Dim(p.win.ow)});
}

NodeId layer_norm_primitives(Builder& b, double eps, std::span<const NodeId> in) {
  NodeId x = in[0];
  DType t = b.shape(x).dtype;
  NodeId xc = b.sub(x, b.mean(x, {-1}, true));
  NodeId r = b.rsqrt(b.add(b.mean(b.mul(xc, xc), {-1}, true), scalar(b, eps, t)));
  NodeId y = b.mul(b.mul(xc, r), in[1]);
  return in.size() > 2 ? b.add(y, in[2]) : y;
}

NodeId rms_norm_primitives(Builder& b, double eps, std::span<const NodeId> in) {
  NodeId x = in[0];
  DType t = b.shape(x).dtype;
  NodeId r = b.rsqrt(b.add(b.mean(b.mul(x, x), {-1}, true), scalar(b, eps, t)));
  return b.mul(b.mul(x, r), in[1]);
}

NodeId log_softmax_primitives(Builder& b, std::int64_t axis, std::span<const NodeId> in) {
  NodeId x = in[0];
  NodeId xm = b.sub(x, b.reduce(ir::ReduceOp::max, x, {axis}, true));
  return b.sub(xm, b.log(b.sum(b.exp(xm), {axis}, true)));
}

NodeId one_hot(Builder& b, NodeId labels, std::int64_t classes, DType t) {
  Shape ls = b.shape(labels);
  std::vector<double> iota(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < classes; ++i)
    iota[static_cast<std::size_t>(i)] = static_cast<double>(i);
  NodeId cls = const_tensor(b, {1, classes}, ls.dtype, iota);
  return b.cast(b.compare(CmpOp::eq, b.reshape(labels, {ls[0], Dim(1)}), cls), t);
}

NodeId softmax_cross_entropy_primitives(Builder& b, std::span<const NodeId> in) {
  NodeId x = in[0];
  Shape xs = b.shape(x);
  std::int64_t classes = static_dim(xs, 1, "softmax_cross_entropy's decomposition");
  NodeId lsm = log_softmax_primitives(b, 1, in);
  return b.neg(b.sum(b.mul(lsm, one_hot(b, in[1], classes, xs.dtype)), {1}));
}

} // namespace rlx::autodiff::detail
