// conv_backward.cpp: decompositions of conv2d_grad_input, conv2d_grad_weight and pool2d_grad
// (ops.def's "conv / pool backward"): the im2col forms the VJP rules of Conv2d / Pool2d emitted
// before the ops existed. The forward's windows become constant i64 indices into the flattened
// input with one extra "dump" cell for taps in the padding: a Gather of them is im2col, a
// ScatterAdd into them is its transpose (col2im); the dump cell is narrowed away.
#include "families.hpp"

#include "rlx/ir/tensor.hpp"

namespace rlx::ir::decompose_detail {

namespace {

/// The windows of a conv / pool: input (h, w), kernel (kh, kw), stride, padding, dilation and
/// the output (oh, ow).
struct Windows {
  std::int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  /// Flat index of the input cell tap (ky, kx) of window (oy, ox) reads, or -1 in the padding.
  std::int64_t at(std::int64_t oy, std::int64_t ox, std::int64_t ky, std::int64_t kx) const {
    const std::int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
    return iy < 0 || iy >= h || ix < 0 || ix >= w ? -1 : iy * w + ix;
  }
  std::int64_t taps() const { return kh * kw; }
  std::int64_t outs() const { return oh * ow; }
};

/// i64 constant of \p sizes holding \p v.
NodeId index_constant(Builder& b, std::vector<std::int64_t> sizes,
                      const std::vector<std::int64_t>& v) {
  Tensor t(Shape::of(std::move(sizes), DType::i64));
  auto d = t.data<std::int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i)
    d[i] = v[i];
  return b.constant(std::move(t));
}

/// Zeros of \p dims and dtype \p t (dims may be symbolic: an expanded scalar).
NodeId zeros(Builder& b, std::vector<Dim> dims, DType t) {
  std::vector<Dim> ones(dims.size(), Dim(1));
  return b.expand(b.reshape(b.scalar(0.0, t), ones), std::move(dims));
}

/// The conv's im2col indices [G, Cg * KH * KW, OH * OW] into [C * H * W + 1] (the last cell:
/// padding).
NodeId conv_indices(Builder& b, const Windows& win, std::int64_t groups, std::int64_t cg) {
  const std::int64_t hw = win.h * win.w, c = groups * cg, kk = cg * win.taps();
  std::vector<std::int64_t> idx;
  idx.reserve(static_cast<std::size_t>(groups * kk * win.outs()));
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t cl = 0; cl < cg; ++cl)
      for (std::int64_t ky = 0; ky < win.kh; ++ky)
        for (std::int64_t kx = 0; kx < win.kw; ++kx)
          for (std::int64_t oy = 0; oy < win.oh; ++oy)
            for (std::int64_t ox = 0; ox < win.ow; ++ox) {
              const std::int64_t cell = win.at(oy, ox, ky, kx);
              idx.push_back(cell < 0 ? c * hw : (g * cg + cl) * hw + cell);
            }
  return index_constant(b, {groups, kk, win.outs()}, idx);
}

Windows conv_windows(const Conv2dGradAttrs& a, const Shape& x, const Shape& w, const Shape& y) {
  return {x[2].size(),  x[3].size(),  w[2].size(),   w[3].size(),   a.stride[0], a.stride[1],
          a.padding[0], a.padding[1], a.dilation[0], a.dilation[1], y[2].size(), y[3].size()};
}

// conv2d_grad_input(dy, w): dpatches = W_g^T dy_g per group ([N, G, Cg KH KW, OH OW]), then
// col2im (ScatterAdd into the flattened input plus the padding cell).
NodeId conv2d_grad_input_by_col2im(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (!float_node(b, id, why))
    return {};
  const auto& a = n.attr<Conv2dGradAttrs>();
  const Shape xs = n.shape, ws = b.shape(n.inputs[1]), ys = b.shape(n.inputs[0]);
  const DType t = xs.dtype;
  const Windows win = conv_windows(a, xs, ws, ys);
  const std::int64_t G = a.groups, C = xs[1].size(), O = ws[0].size(), Cg = C / G;
  const std::int64_t kk = Cg * win.taps(), hw = win.h * win.w;
  const NodeId dyr = b.reshape(n.inputs[0], {xs[0], Dim(G), Dim(O / G), Dim(win.outs())});
  const NodeId wr = b.reshape(n.inputs[1], {Dim(G), Dim(O / G), Dim(kk)});
  const NodeId dpatches = b.matmul(wr, dyr, true, false); // [N, G, kk, OH OW]
  const NodeId flat = b.scatter_add(zeros(b, {xs[0], Dim(C * hw + 1)}, t),
                                    conv_indices(b, win, G, Cg), dpatches, 1);
  return b.reshape(b.narrow(flat, 1, 0, C * hw), {xs[0], xs[1], xs[2], xs[3]});
}

// conv2d_grad_weight(x, dy): im2col of x ([N, G, Cg KH KW, OH OW]), dw_g = sum over n of
// dy_g patches^T.
NodeId conv2d_grad_weight_by_im2col(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (!float_node(b, id, why))
    return {};
  const auto& a = n.attr<Conv2dGradAttrs>();
  const Shape xs = b.shape(n.inputs[0]), ws = n.shape, ys = b.shape(n.inputs[1]);
  const DType t = xs.dtype;
  const Windows win = conv_windows(a, xs, ws, ys);
  const std::int64_t G = a.groups, C = xs[1].size(), O = ws[0].size(), Cg = C / G;
  const std::int64_t hw = win.h * win.w;
  const NodeId flat = b.reshape(n.inputs[0], {xs[0], Dim(C * hw)});
  const NodeId padded = b.concat({flat, zeros(b, {xs[0], Dim(1)}, t)}, 1);
  const NodeId patches = b.gather(padded, conv_indices(b, win, G, Cg), 1); // [N, G, kk, OH OW]
  const NodeId dyr = b.reshape(n.inputs[1], {xs[0], Dim(G), Dim(O / G), Dim(win.outs())});
  const NodeId dw = b.sum(b.matmul(dyr, patches, false, true), {0}); // [G, O / G, kk]
  return b.reshape(dw, {ws[0], ws[1], ws[2], ws[3]});
}

// pool2d_grad: the windows' cells as indices [KH KW, OH OW] into [H W + 1] (the last cell:
// padding); avg scatters dy / count to every in-bounds cell, max to the first in-bounds cell equal
// to y (or NaN when y is), found as the argmax of the 0 / 1 hit mask.
NodeId pool2d_grad_by_scatter(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (!float_node(b, id, why))
    return {};
  const auto& a = n.attr<Pool2dGradAttrs>();
  const bool is_max = a.kind == PoolKind::max;
  const Shape xs = n.shape, ys = b.shape(n.inputs.back());
  const DType t = xs.dtype;
  const Windows win{xs[2].size(), xs[3].size(), a.kernel[0],  a.kernel[1], a.stride[0],
                    a.stride[1],  a.padding[0], a.padding[1], 1,           1,
                    ys[2].size(), ys[3].size()};
  const std::int64_t hw = win.h * win.w, kk = win.taps(), ohow = win.outs();
  std::vector<std::int64_t> idx;
  std::vector<double> inside, count(static_cast<std::size_t>(ohow), 0.0);
  for (std::int64_t ky = 0; ky < win.kh; ++ky)
    for (std::int64_t kx = 0; kx < win.kw; ++kx)
      for (std::int64_t oy = 0; oy < win.oh; ++oy)
        for (std::int64_t ox = 0; ox < win.ow; ++ox) {
          const std::int64_t cell = win.at(oy, ox, ky, kx);
          idx.push_back(cell < 0 ? hw : cell);
          inside.push_back(cell < 0 ? 0.0 : 1.0);
          count[static_cast<std::size_t>(oy * win.ow + ox)] += cell < 0 ? 0.0 : 1.0;
        }
  const NodeId indices = index_constant(b, {kk, ohow}, idx);
  auto float_constant = [&](std::vector<std::int64_t> sizes, const std::vector<double>& v) {
    Tensor c(Shape::of(std::move(sizes), t));
    for (std::size_t i = 0; i < v.size(); ++i)
      c.set_f64(static_cast<std::int64_t>(i), v[i]);
    return b.constant(std::move(c));
  };
  const NodeId dy = b.reshape(n.inputs.back(), {xs[0], xs[1], Dim(1), Dim(ohow)});
  NodeId updates;
  if (!is_max) {
    updates =
        b.expand(b.div(dy, float_constant({1, ohow}, count)), {xs[0], xs[1], Dim(kk), Dim(ohow)});
  } else {
    const NodeId flat = b.reshape(n.inputs[0], {xs[0], xs[1], Dim(hw)});
    const NodeId padded = b.concat({flat, zeros(b, {xs[0], xs[1], Dim(1)}, t)}, 2);
    const NodeId p = b.gather(padded, indices, 2); // [N, C, kk, OH OW]
    const NodeId y = b.reshape(n.inputs[1], {xs[0], xs[1], Dim(1), Dim(ohow)});
    auto as_float = [&](NodeId c) { return b.cast(c, t); };
    const NodeId both_nan =
        b.mul(as_float(b.compare(CmpOp::ne, p, p)), as_float(b.compare(CmpOp::ne, y, y)));
    const NodeId hit = b.mul(b.add(as_float(b.compare(CmpOp::eq, p, y)), both_nan),
                             float_constant({kk, ohow}, inside));
    std::vector<std::int64_t> iota(static_cast<std::size_t>(kk));
    for (std::int64_t i = 0; i < kk; ++i)
      iota[static_cast<std::size_t>(i)] = i;
    const NodeId first = b.argmax(hit, 2, true); // [N, C, 1, OH OW]
    const NodeId one_hot = as_float(b.compare(CmpOp::eq, index_constant(b, {kk, 1}, iota), first));
    updates = b.mul(b.mul(one_hot, hit), dy); // 0 for a window with no hit
  }
  const NodeId flat = b.scatter_add(zeros(b, {xs[0], xs[1], Dim(hw + 1)}, t), indices, updates, 2);
  return b.reshape(b.narrow(flat, 2, 0, hw), {xs[0], xs[1], xs[2], xs[3]});
}

} // namespace

void add_conv_backward_decompositions(DecompositionTable& t) {
  t.set(OpKind::Conv2dGradInput, {{"conv2d_grad_input_by_col2im", conv2d_grad_input_by_col2im}});
  t.set(OpKind::Conv2dGradWeight, {{"conv2d_grad_weight_by_im2col", conv2d_grad_weight_by_im2col}});
  t.set(OpKind::Pool2dGrad, {{"pool2d_grad_by_scatter", pool2d_grad_by_scatter}});
}

} // namespace rlx::ir::decompose_detail
