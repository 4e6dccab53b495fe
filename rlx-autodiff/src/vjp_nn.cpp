// vjp_nn.cpp: VJP rules of Attention, Rope, SoftmaxCrossEntropy, Conv2d and Pool2d.
//
// Rope and SoftmaxCrossEntropy have closed forms. Attention, Conv2d and Pool2d are differentiated
// through their decomposition into primitives (emitted here, in the gradient graph, reading the
// forward operands): attention recomputes its probabilities in the backward like flash
// attention's backward; conv and pool become an im2col Gather (whose transpose is ScatterAdd) and
// a MatMul / Reduce. Dedicated backward ops with CPU kernels are the planned replacement.
#include "helpers.hpp"
#include "table.hpp"

#include <cmath>

namespace rlx::autodiff::detail {
namespace {

using ir::AttnLayout;
using ir::CmpOp;
using ir::Dim;
using ir::MaskKind;
using ir::OpKind;
using ir::Tensor;
using Grads = std::vector<NodeId>;
using Sizes = std::vector<std::int64_t>;

std::int64_t static_dim(const Shape& s, std::size_t i, const char* what) {
  if (!s[i].is_static())
    fail(std::string("autodiff: ") + what + " needs a static dim " + std::to_string(i) + " in " +
         s.str() + "; bind the symbols first");
  return s[i].size();
}

NodeId const_tensor(Builder& b, const Sizes& sizes, DType t, const std::vector<double>& v) {
  Tensor x(Shape::of(sizes, t));
  for (std::size_t i = 0; i < v.size(); ++i)
    x.set_f64(static_cast<std::int64_t>(i), v[i]);
  return b.constant(std::move(x));
}

NodeId index_tensor(Builder& b, const Sizes& sizes, const std::vector<std::int64_t>& v) {
  Tensor x(Shape::of(sizes, DType::i64));
  auto d = x.data<std::int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i)
    d[i] = v[i];
  return b.constant(std::move(x));
}

// ---- attention ---------------------------------------------------------------------------------

/// The primitive form of Attention (see its row in ops.def): [B, H, S, D] operands, GQA by
/// repeating kv heads, scale, softcap, bias, then masking by a kept-key predicate; masked scores
/// become the dtype's lowest finite value and the probabilities are multiplied by the predicate,
/// so a row with no kept key gives 0 (as the reference does) and stays finite in the backward.
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

Grads attention(VjpContext& c) {
  ir::AttentionAttrs a = c.node.attr<ir::AttentionAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return attention_primitives(b, a, in); });
}

// ---- rope --------------------------------------------------------------------------------------

Grads rope(VjpContext& c) {
  // y = x C + P(x) S, with P a pairing permutation (an involution) along the features, C the
  // cosines (1 past n_rot) and S the signed sines (0 past n_rot); so dx = up C + P(up S).
  auto& b = c.b;
  const auto& a = c.node.attr<ir::RopeAttrs>();
  Shape xs = b.shape(c.in[0]);
  DType t = xs.dtype;
  bool bshd = a.layout == AttnLayout::bshd;
  std::int64_t seq = static_dim(xs, bshd ? 1 : 2, "rope's backward");
  std::int64_t d = xs[3].size();
  std::int64_t n = a.n_rot == 0 ? d : a.n_rot, half = n / 2;
  std::vector<double> cs(static_cast<std::size_t>(seq * d), 1.0), sn(cs.size(), 0.0);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(d));
  for (std::int64_t f = 0; f < d; ++f)
    idx[static_cast<std::size_t>(f)] = f;
  for (std::int64_t kk = 0; kk < half; ++kk) {
    std::int64_t ia = a.style == ir::RopeStyle::half ? kk : 2 * kk;
    std::int64_t ib = a.style == ir::RopeStyle::half ? kk + half : 2 * kk + 1;
    idx[static_cast<std::size_t>(ia)] = ib;
    idx[static_cast<std::size_t>(ib)] = ia;
    for (std::int64_t s = 0; s < seq; ++s) {
      double ang = static_cast<double>(s + a.position_offset) *
                   std::pow(a.theta, -2.0 * static_cast<double>(kk) / static_cast<double>(n));
      auto row = static_cast<std::size_t>(s * d);
      cs[row + static_cast<std::size_t>(ia)] = std::cos(ang);
      cs[row + static_cast<std::size_t>(ib)] = std::cos(ang);
      sn[row + static_cast<std::size_t>(ia)] = -std::sin(ang);
      sn[row + static_cast<std::size_t>(ib)] = std::sin(ang);
    }
  }
  Sizes tab = bshd ? Sizes{seq, 1, d} : Sizes{seq, d};
  NodeId C = const_tensor(b, tab, t, cs), S = const_tensor(b, tab, t, sn);
  NodeId perm = index_tensor(b, {d}, idx);
  return {b.add(b.mul(c.up, C), b.gather(b.mul(c.up, S), perm, 3))};
}

// ---- softmax cross-entropy ---------------------------------------------------------------------

Grads softmax_cross_entropy(VjpContext& c) {
  // loss_n = logsumexp(x_n) - x_n[label_n]:  dx = up_n (softmax(x_n) - onehot(label_n))
  auto& b = c.b;
  NodeId x = c.in[0], labels = c.in[1];
  Shape xs = b.shape(x), ls = b.shape(labels);
  std::int64_t classes = static_dim(xs, 1, "softmax_cross_entropy's backward");
  std::vector<double> iota(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < classes; ++i)
    iota[static_cast<std::size_t>(i)] = static_cast<double>(i);
  NodeId cls = const_tensor(b, {1, classes}, ls.dtype, iota);
  NodeId onehot = b.cast(b.compare(CmpOp::eq, b.reshape(labels, {ls[0], Dim(1)}), cls), xs.dtype);
  NodeId up = b.reshape(c.up, {xs[0], Dim(1)});
  return {b.mul(up, b.sub(b.softmax(x, -1), onehot)), {}};
}

// ---- conv2d and pool2d (im2col through Gather) -------------------------------------------------

struct Window {
  std::int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  /// Flat index of input cell (ih, iw) reached by window (oh, ow) and tap (kh, kw), or -1 when it
  /// falls in the padding.
  std::int64_t at(std::int64_t o_h, std::int64_t o_w, std::int64_t k_h, std::int64_t k_w) const {
    std::int64_t ih = o_h * sh - ph + k_h * dh, iw = o_w * sw - pw + k_w * dw;
    return ih < 0 || ih >= h || iw < 0 || iw >= w ? -1 : ih * w + iw;
  }
};

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

Grads conv2d(VjpContext& c) {
  ir::Conv2dAttrs a = c.node.attr<ir::Conv2dAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return conv_primitives(b, a, in); });
}

NodeId pool_primitives(Builder& b, const ir::Pool2dAttrs& a, std::span<const NodeId> in) {
  Shape xs = b.shape(in[0]);
  DType t = xs.dtype;
  bool is_max = a.kind == ir::PoolKind::max;
  Window win{xs[2].size(), xs[3].size(), a.kernel[0], a.kernel[1], a.stride[0], a.stride[1],
             a.padding[0], a.padding[1], 1,           1,           0,           0};
  win.oh = (win.h + 2 * win.ph - win.kh) / win.sh + 1;
  win.ow = (win.w + 2 * win.pw - win.kw) / win.sw + 1;
  std::int64_t hw = win.h * win.w, kk = win.kh * win.kw, ohow = win.oh * win.ow;
  std::vector<std::int64_t> idx;
  std::vector<double> count(static_cast<std::size_t>(ohow), 0.0);
  for (std::int64_t i = 0; i < win.kh; ++i)
    for (std::int64_t j = 0; j < win.kw; ++j)
      for (std::int64_t oh = 0; oh < win.oh; ++oh)
        for (std::int64_t ow = 0; ow < win.ow; ++ow) {
          std::int64_t cell = win.at(oh, ow, i, j);
          idx.push_back(cell < 0 ? hw : cell);
          if (cell >= 0)
            count[static_cast<std::size_t>(oh * win.ow + ow)] += 1;
        }
  NodeId flat = b.reshape(in[0], {xs[0], xs[1], Dim(hw)});
  NodeId pad = full(b, Shape({xs[0], xs[1], Dim(1)}, t), is_max ? lowest(t) : 0.0);
  NodeId patches = b.gather(b.concat({flat, pad}, 2), index_tensor(b, {kk, ohow}, idx), 2);
  NodeId y = is_max ? b.reduce(ir::ReduceOp::max, patches, {2})
                    : b.div(b.sum(patches, {2}), const_tensor(b, {ohow}, t, count));
  return b.reshape(y, {xs[0], xs[1], Dim(win.oh), Dim(win.ow)});
}

Grads pool2d(VjpContext& c) {
  ir::Pool2dAttrs a = c.node.attr<ir::Pool2dAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return pool_primitives(b, a, in); });
}

std::uint32_t attention_masks(const ir::Node& n) {
  return n.attr<ir::AttentionAttrs>().mask == MaskKind::padding ? 1u << 3 : 0u;
}

} // namespace

void add_nn_rules(VjpTable& t) {
  // Attention: a padding mask (operand 3 of MaskKind::padding) never receives a gradient; an
  // additive bias mask does.
  set_rule(t, OpKind::Attention, attention, 0, true, attention_masks);
  set_rule(t, OpKind::Rope, rope);
  set_rule(t, OpKind::SoftmaxCrossEntropy, softmax_cross_entropy, 1u << 1);
  set_rule(t, OpKind::Conv2d, conv2d, 0, true);
  set_rule(t, OpKind::Pool2d, pool2d, 0, true);
}

} // namespace rlx::autodiff::detail
