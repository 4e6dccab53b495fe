// shape_rules.cpp: the shape rule of every op (named in ops.def's shape_rule column).
#include "shape_rules.hpp"

#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/region.hpp"
#include "rlx/ir/size.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace rlx::ir::rules {
namespace {

void expect(bool ok, const std::string& msg) {
  if (!ok)
    throw ShapeError(msg);
}
std::string dn(DType t) {
  return std::string(dtype_name(t));
}
void expect_float(const Shape& s, const char* what) {
  expect(is_float(s.dtype), std::string(what) + " must be a float type, got " + dn(s.dtype));
}
void expect_numeric(const Shape& s, const char* what) {
  expect(s.dtype != DType::boolean, std::string(what) + " must be numeric, got bool");
}
void expect_int(const Shape& s, const char* what) {
  expect(is_int(s.dtype), std::string(what) + " must be an integer type, got " + dn(s.dtype));
}
void expect_rank(const Shape& s, std::size_t r, const char* what) {
  expect(s.rank() == r,
         std::string(what) + " must have rank " + std::to_string(r) + ", got " + s.str());
}
void expect_same_dtype(const Shape& a, const Shape& b, const char* what) {
  expect(a.dtype == b.dtype, std::string(what) + ": operand types differ (" + dn(a.dtype) + " vs " +
                                 dn(b.dtype) + "); insert a cast");
}
void expect_dim(const Dim& got, const Dim& want, const std::string& what) {
  expect(got == want, what + " is " + got.str() + ", expected " + want.str());
}
/// A rank-1 tensor of \p n elements of \p t.
void expect_vector(const Shape& s, const Dim& n, DType t, const std::string& what) {
  expect(s.rank() == 1 && s.dims[0] == n && s.dtype == t,
         what + " must be [" + n.str() + "] " + dn(t) + ", got " + s.str());
}
std::int64_t static_div(const Dim& a, std::int64_t k, const std::string& what) {
  expect(a.is_static(), what + ": dim " + a.str() + " must be static");
  expect(k > 0 && a.size() % k == 0,
         what + ": " + a.str() + " is not divisible by " + std::to_string(k));
  return a.size() / k;
}

} // namespace

Shape leaf(In, const LeafAttrs& a) {
  expect(!a.name.empty(), "leaf nodes need a non-empty name");
  expect(!a.shape.is_tuple(), "a leaf cannot have the tuple type " + a.shape.str());
  for (const auto& d : a.shape.dims)
    expect(d.is_symbolic() || d.size() >= 0, "negative dimension in " + a.shape.str());
  return a.shape;
}

Shape constant(In, const ConstantAttrs& a) {
  expect(!a.value.empty() || a.value.numel() == 0, "constant has no value");
  return a.value.shape();
}

Shape unary(In in, const NoAttrs&) {
  expect_numeric(in[0], "operand");
  return in[0];
}

Shape unary_float(In in, const NoAttrs&) {
  expect_float(in[0], "operand");
  return in[0];
}

Shape cast(In in, const CastAttrs& a) {
  return in[0].with_dtype(a.to);
}

Shape binary(In in, const NoAttrs&) {
  expect_same_dtype(in[0], in[1], "binary op");
  expect_numeric(in[0], "operand");
  return Shape(broadcast_dims(in[0].dims, in[1].dims), in[0].dtype);
}

Shape compare(In in, const CompareAttrs&) {
  expect_same_dtype(in[0], in[1], "compare");
  return Shape(broadcast_dims(in[0].dims, in[1].dims), DType::boolean);
}

Shape where(In in, const NoAttrs&) {
  expect(in[0].dtype == DType::boolean, "where: condition must be bool, got " + dn(in[0].dtype));
  expect_same_dtype(in[1], in[2], "where");
  return Shape(broadcast_dims(broadcast_dims(in[0].dims, in[1].dims), in[2].dims), in[1].dtype);
}

Shape matmul(In in, const MatMulAttrs& a) {
  const Shape& x = in[0];
  const Shape& y = in[1];
  expect(x.rank() >= 2 && y.rank() >= 2,
         "matmul operands need rank >= 2 (reshape vectors), got " + x.str() + " and " + y.str());
  expect_same_dtype(x, y, "matmul");
  expect_numeric(x, "matmul operand");
  std::size_t rx = x.rank(), ry = y.rank();
  const Dim& m = a.transpose_a ? x[rx - 1] : x[rx - 2];
  const Dim& kx = a.transpose_a ? x[rx - 2] : x[rx - 1];
  const Dim& ky = a.transpose_b ? y[ry - 1] : y[ry - 2];
  const Dim& n = a.transpose_b ? y[ry - 2] : y[ry - 1];
  expect(kx == ky, "matmul contraction mismatch: " + x.str() + (a.transpose_a ? "ᵀ" : "") + " x " +
                       y.str() + (a.transpose_b ? "ᵀ" : "") + " (K " + kx.str() + " vs " +
                       ky.str() + ")");
  std::vector<Dim> bx(x.dims.begin(), x.dims.end() - 2), by(y.dims.begin(), y.dims.end() - 2);
  auto out = broadcast_dims(bx, by);
  out.push_back(m);
  out.push_back(n);
  return Shape(std::move(out), x.dtype);
}

Shape dot_general(In in, const DotGeneralAttrs& a) {
  const Shape& x = in[0];
  const Shape& y = in[1];
  expect_same_dtype(x, y, "dot_general");
  expect_numeric(x, "dot_general operand");
  expect(a.lhs_batch.size() == a.rhs_batch.size(),
         "dot_general: lhs and rhs batch dim counts differ");
  expect(a.lhs_contracting.size() == a.rhs_contracting.size(),
         "dot_general: lhs and rhs contracting dim counts differ");
  auto check_dims = [](const std::vector<std::int64_t>& b, const std::vector<std::int64_t>& c,
                       std::size_t rank, const char* side) {
    std::set<std::int64_t> seen;
    for (auto d : b)
      expect(d >= 0 && d < static_cast<std::int64_t>(rank) && seen.insert(d).second,
             std::string("dot_general: bad or repeated ") + side + " dim " + std::to_string(d));
    for (auto d : c)
      expect(d >= 0 && d < static_cast<std::int64_t>(rank) && seen.insert(d).second,
             std::string("dot_general: bad or repeated ") + side + " dim " + std::to_string(d));
    return seen;
  };
  auto used_x = check_dims(a.lhs_batch, a.lhs_contracting, x.rank(), "lhs");
  auto used_y = check_dims(a.rhs_batch, a.rhs_contracting, y.rank(), "rhs");
  std::vector<Dim> out;
  for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
    expect_dim(y[static_cast<std::size_t>(a.rhs_batch[i])],
               x[static_cast<std::size_t>(a.lhs_batch[i])],
               "dot_general: rhs batch dim " + std::to_string(a.rhs_batch[i]));
    out.push_back(x[static_cast<std::size_t>(a.lhs_batch[i])]);
  }
  for (std::size_t i = 0; i < a.lhs_contracting.size(); ++i)
    expect_dim(y[static_cast<std::size_t>(a.rhs_contracting[i])],
               x[static_cast<std::size_t>(a.lhs_contracting[i])],
               "dot_general: rhs contracting dim " + std::to_string(a.rhs_contracting[i]));
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (!used_x.count(static_cast<std::int64_t>(i)))
      out.push_back(x[i]);
  for (std::size_t i = 0; i < y.rank(); ++i)
    if (!used_y.count(static_cast<std::int64_t>(i)))
      out.push_back(y[i]);
  return Shape(std::move(out), x.dtype);
}

Shape dense_solve(In in, const NoAttrs&) {
  const Shape& A = in[0];
  const Shape& b = in[1];
  expect_float(A, "dense_solve matrix");
  expect_same_dtype(A, b, "dense_solve");
  expect(A.rank() >= 2, "dense_solve: A must have rank >= 2, got " + A.str());
  std::size_t r = A.rank();
  expect_dim(A[r - 1], A[r - 2], "dense_solve: A must be square; its last dim");
  expect(b.rank() == r || b.rank() == r - 1, "dense_solve: b must have rank " + std::to_string(r) +
                                                 " or " + std::to_string(r - 1) + ", got " +
                                                 b.str());
  for (std::size_t i = 0; i + 2 < r; ++i)
    expect_dim(b[i], A[i], "dense_solve: batch dim " + std::to_string(i) + " of b");
  expect_dim(b[r - 2], A[r - 2], "dense_solve: the row dim of b");
  return b;
}

Shape reshape(In in, const TargetShapeAttrs& a) {
  const Shape& x = in[0];
  std::int64_t in_static = 1;
  std::multiset<std::string> in_syms, out_syms;
  for (const auto& d : x.dims) {
    if (d.is_symbolic())
      in_syms.insert(d.symbol());
    else
      in_static = checked_mul(in_static, d.size(), "reshape: input element count");
  }
  std::int64_t out_static = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    const Dim& d = a.shape[i];
    if (d.is_symbolic()) {
      out_syms.insert(d.symbol());
    } else if (d.size() == -1) {
      expect(infer_at < 0, "reshape: at most one -1 dim allowed");
      infer_at = static_cast<int>(i);
    } else {
      expect(d.size() >= 0, "reshape: negative target dim " + d.str());
      out_static = checked_mul(out_static, d.size(), "reshape: element count of the target");
    }
  }
  std::vector<Dim> out = a.shape;
  std::string target = Shape(a.shape, x.dtype).str();
  target = target.substr(0, target.rfind(' '));
  if (infer_at >= 0) {
    expect(in_syms == out_syms, "reshape " + x.str() + " to " + target +
                                    ": cannot infer -1 across symbolic dims; bind them first");
    expect(out_static != 0 && in_static % out_static == 0,
           "reshape " + x.str() + " to " + target + ": element count does not divide");
    out[static_cast<std::size_t>(infer_at)] = Dim(in_static / out_static);
  } else {
    expect(in_syms == out_syms && in_static == out_static,
           "reshape " + x.str() + " to " + target + ": element counts differ");
  }
  return Shape(std::move(out), x.dtype);
}

Shape transpose(In in, const TransposeAttrs& a) {
  const Shape& x = in[0];
  expect(a.perm.size() == x.rank(), "transpose: perm has " + std::to_string(a.perm.size()) +
                                        " entries for rank " + std::to_string(x.rank()));
  std::vector<char> seen(x.rank(), 0);
  std::vector<Dim> out;
  for (auto p : a.perm) {
    expect(p >= 0 && p < static_cast<std::int64_t>(x.rank()) && !seen[static_cast<std::size_t>(p)],
           "transpose: perm is not a permutation of 0.." + std::to_string(x.rank() - 1));
    seen[static_cast<std::size_t>(p)] = 1;
    out.push_back(x[static_cast<std::size_t>(p)]);
  }
  return Shape(std::move(out), x.dtype);
}

Shape narrow(In in, const NarrowAttrs& a) {
  const Shape& x = in[0];
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, x.rank(), "narrow"));
  expect(a.start >= 0 && a.length >= 1, "narrow: start must be >= 0 and length >= 1, got start " +
                                            std::to_string(a.start) + " length " +
                                            std::to_string(a.length));
  if (x[ax].is_static())
    expect(a.start <= x[ax].size() && a.length <= x[ax].size() - a.start,
           "narrow: start " + std::to_string(a.start) + " length " + std::to_string(a.length) +
               " exceeds dim " + x[ax].str() + " of " + x.str());
  Shape out = x;
  out.dims[ax] = Dim(a.length);
  return out;
}

Shape concat(In in, const AxisAttrs& a) {
  const Shape& x = in[0];
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, x.rank(), "concat"));
  Shape out = x;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i];
    expect_same_dtype(x, s, "concat");
    expect(s.rank() == x.rank(), "concat: operand " + std::to_string(i) + " has rank " +
                                     std::to_string(s.rank()) + ", expected " +
                                     std::to_string(x.rank()));
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (d != ax)
        expect_dim(s[d], x[d],
                   "concat: dim " + std::to_string(d) + " of operand " + std::to_string(i));
    if (in.size() == 1)
      return x;
    expect(s[ax].is_static(), "concat: the concatenated dim must be static, got " + s[ax].str());
    total = checked_add(total, s[ax].size(), "concat: the concatenated dim");
  }
  out.dims[ax] = Dim(total);
  return out;
}

Shape expand(In in, const TargetShapeAttrs& a) {
  const Shape& x = in[0];
  expect(a.shape.size() >= x.rank(), "expand: target rank " + std::to_string(a.shape.size()) +
                                         " is below the input rank " + std::to_string(x.rank()));
  std::vector<Dim> out = a.shape;
  std::size_t off = out.size() - x.rank();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].is_static() && out[i].size() == -1) {
      expect(i >= off, "expand: -1 at a new leading dim");
      out[i] = x[i - off];
    }
    expect(out[i].is_symbolic() || out[i].size() >= 0, "expand: negative target dim");
  }
  expect(broadcasts_to(x.dims, out),
         "expand: " + x.str() + " does not broadcast to " + Shape(out, x.dtype).str());
  return Shape(std::move(out), x.dtype);
}

namespace {
std::vector<Dim> gathered_dims(const Shape& table, const Shape& idx, std::size_t ax) {
  std::vector<Dim> out(table.dims.begin(), table.dims.begin() + static_cast<std::ptrdiff_t>(ax));
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), table.dims.begin() + static_cast<std::ptrdiff_t>(ax) + 1, table.dims.end());
  return out;
}
} // namespace

Shape gather(In in, const AxisAttrs& a) {
  expect(in[0].rank() >= 1, "gather: table must have rank >= 1");
  expect_int(in[1], "gather indices");
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, in[0].rank(), "gather"));
  return Shape(gathered_dims(in[0], in[1], ax), in[0].dtype);
}

Shape scatter_add(In in, const AxisAttrs& a) {
  const Shape& t = in[0];
  expect(t.rank() >= 1, "scatter_add: target must have rank >= 1");
  expect_int(in[1], "scatter_add indices");
  expect_same_dtype(t, in[2], "scatter_add");
  expect_numeric(t, "scatter_add target");
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, t.rank(), "scatter_add"));
  auto want = gathered_dims(t, in[1], ax);
  expect(in[2].dims == want,
         "scatter_add: updates must be " + Shape(want, t.dtype).str() + ", got " + in[2].str());
  return t;
}

Shape reduce(In in, const ReduceAttrs& a) {
  const Shape& x = in[0];
  expect_numeric(x, "reduce operand");
  if (a.op == ReduceOp::mean)
    expect_float(x, "mean operand");
  std::vector<char> red(x.rank(), a.axes.empty() ? 1 : 0);
  for (auto ax : a.axes) {
    auto n = static_cast<std::size_t>(normalize_axis(ax, x.rank(), "reduce"));
    expect(!red[n], "reduce: axis " + std::to_string(ax) + " listed twice");
    red[n] = 1;
  }
  std::vector<Dim> out;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    if (!red[i])
      out.push_back(x[i]);
    else if (a.keep_dims)
      out.emplace_back(1);
    else if (a.op == ReduceOp::max || a.op == ReduceOp::min)
      expect(x[i].is_symbolic() || x[i].size() > 0, "reduce max/min over an empty axis");
  }
  return Shape(std::move(out), x.dtype);
}

Shape softmax(In in, const AxisAttrs& a) {
  expect_float(in[0], "softmax operand");
  normalize_axis(a.axis, in[0].rank(), "softmax");
  return in[0];
}

Shape argmax(In in, const ArgMaxAttrs& a) {
  expect_numeric(in[0], "argmax operand");
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, in[0].rank(), "argmax"));
  std::vector<Dim> out;
  for (std::size_t i = 0; i < in[0].rank(); ++i)
    if (i != ax)
      out.push_back(in[0][i]);
    else if (a.keep_dims)
      out.emplace_back(1);
  return Shape(std::move(out), DType::i64);
}

Shape layer_norm(In in, const NormAttrs& a) {
  const Shape& x = in[0];
  expect_float(x, "layer_norm input");
  expect(x.rank() >= 1, "layer_norm input must have rank >= 1");
  expect(a.eps > 0 && std::isfinite(a.eps), "layer_norm: eps must be > 0");
  const Dim& d = x.dims.back();
  expect_vector(in[1], d, x.dtype, "layer_norm gamma");
  if (in.size() == 3)
    expect_vector(in[2], d, x.dtype, "layer_norm beta");
  return x;
}

Shape rms_norm(In in, const NormAttrs& a) {
  const Shape& x = in[0];
  expect_float(x, "rms_norm input");
  expect(x.rank() >= 1, "rms_norm input must have rank >= 1");
  expect(a.eps > 0 && std::isfinite(a.eps), "rms_norm: eps must be > 0");
  expect_vector(in[1], x.dims.back(), x.dtype, "rms_norm gamma");
  return x;
}

namespace {
struct AttnDims {
  Dim b, s, h, d;
};
AttnDims split_attn(const Shape& s, AttnLayout l, const char* what) {
  expect(s.rank() == 4, std::string("attention ") + what + " must be 4-D (" +
                            (l == AttnLayout::bshd ? "[B, S, H, D]" : "[B, H, S, D]") + "), got " +
                            s.str());
  if (l == AttnLayout::bshd)
    return {s[0], s[1], s[2], s[3]};
  return {s[0], s[2], s[1], s[3]};
}
} // namespace

Shape attention(In in, const AttentionAttrs& a) {
  const Shape& q = in[0];
  expect_float(q, "attention query");
  expect_same_dtype(q, in[1], "attention q/k");
  expect_same_dtype(q, in[2], "attention q/v");
  auto Q = split_attn(q, a.layout, "query");
  auto K = split_attn(in[1], a.layout, "key");
  auto V = split_attn(in[2], a.layout, "value");
  expect(a.num_heads >= 1 && a.num_kv_heads >= 1 && a.num_heads % a.num_kv_heads == 0,
         "attention: num_heads (" + std::to_string(a.num_heads) +
             ") must be a positive multiple of num_kv_heads (" + std::to_string(a.num_kv_heads) +
             ")");
  expect_dim(Q.h, Dim(a.num_heads), "attention: query head count");
  expect_dim(K.h, Dim(a.num_kv_heads), "attention: key head count");
  expect_dim(V.h, Dim(a.num_kv_heads), "attention: value head count");
  expect_dim(K.b, Q.b, "attention: key batch");
  expect_dim(V.b, Q.b, "attention: value batch");
  expect_dim(K.d, Q.d, "attention: key head_dim");
  expect_dim(V.s, K.s, "attention: value seq");
  bool takes_mask = a.mask == MaskKind::padding || a.mask == MaskKind::bias;
  expect(in.size() == (takes_mask ? 4u : 3u),
         std::string("attention: mask kind ") +
             std::string(enum_names(a.mask)[static_cast<std::size_t>(a.mask)]) +
             (takes_mask ? " needs a 4th mask input" : " takes no mask input"));
  if (a.mask == MaskKind::padding) {
    const Shape& m = in[3];
    expect(m.rank() == 2 && m[0] == Q.b && m[1] == K.s,
           "attention: padding mask must be [B, Sk] = [" + Q.b.str() + ", " + K.s.str() +
               "], got " + m.str());
  } else if (a.mask == MaskKind::bias) {
    const Shape& m = in[3];
    expect_same_dtype(q, m, "attention bias");
    expect(broadcasts_to(m.dims, {Q.b, Dim(a.num_heads), Q.s, K.s}),
           "attention: bias " + m.str() + " does not broadcast to [B, H, Sq, Sk]");
  }
  if (a.mask == MaskKind::sliding_window)
    expect(a.window >= 1, "attention: sliding_window needs window >= 1");
  if (a.scale)
    expect(std::isfinite(*a.scale), "attention: scale must be finite");
  if (a.softcap)
    expect(*a.softcap > 0 && std::isfinite(*a.softcap), "attention: softcap must be > 0");
  Shape out = q;
  out.dims[3] = V.d;
  return out;
}

Shape rope(In in, const RopeAttrs& a) {
  const Shape& x = in[0];
  expect_float(x, "rope input");
  auto X = split_attn(x, a.layout, "rope input");
  expect(X.d.is_static(), "rope: head_dim must be static");
  std::int64_t n = a.n_rot == 0 ? X.d.size() : a.n_rot;
  expect(n > 0 && n % 2 == 0 && n <= X.d.size(),
         "rope: n_rot must be even and <= head_dim " + X.d.str() + ", got " + std::to_string(n));
  expect(a.position_offset >= 0, "rope: position_offset must be >= 0");
  expect(a.theta > 0 && std::isfinite(a.theta), "rope: theta must be > 0");
  return x;
}

Shape softmax_cross_entropy(In in, const NoAttrs&) {
  expect_rank(in[0], 2, "softmax_cross_entropy logits");
  expect_float(in[0], "softmax_cross_entropy logits");
  expect_int(in[1], "softmax_cross_entropy labels");
  expect(in[1].rank() == 1 && in[1][0] == in[0][0],
         "softmax_cross_entropy: labels must be [" + in[0][0].str() + "], got " + in[1].str());
  return Shape({in[0][0]}, in[0].dtype);
}

namespace {
void expect_pair(const std::vector<std::int64_t>& v, std::int64_t min, const char* what) {
  expect(v.size() == 2 && v[0] >= min && v[1] >= min,
         std::string(what) + " must be two values >= " + std::to_string(min));
}
std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                      std::int64_t d, const char* what) {
  const std::string w(what);
  std::int64_t eff = checked_add(checked_mul(d, k - 1, w + ": dilated window"), 1, w);
  std::int64_t padded = checked_add(in, checked_mul(2, p, w + ": padding"), w + ": padded input");
  std::int64_t span = padded - eff;
  expect(span >= 0, w + ": window " + std::to_string(eff) + " is larger than the padded input " +
                        std::to_string(padded));
  return span / s + 1;
}
} // namespace

Shape conv2d(In in, const Conv2dAttrs& a) {
  const Shape& x = in[0];
  const Shape& w = in[1];
  expect_rank(x, 4, "conv2d input [N, C, H, W]");
  expect_rank(w, 4, "conv2d weight [O, C/groups, KH, KW]");
  expect_float(x, "conv2d input");
  expect_same_dtype(x, w, "conv2d");
  expect_pair(a.stride, 1, "conv2d stride");
  expect_pair(a.padding, 0, "conv2d padding");
  expect_pair(a.dilation, 1, "conv2d dilation");
  expect(a.groups >= 1, "conv2d: groups must be >= 1");
  for (std::size_t i = 1; i < 4; ++i)
    expect(x[i].is_static(), "conv2d: C, H, W must be static, got " + x.str());
  expect(w.is_static(), "conv2d: weight must be static");
  std::int64_t c = x[1].size(), o = w[0].size();
  expect(c % a.groups == 0 && o % a.groups == 0, "conv2d: groups " + std::to_string(a.groups) +
                                                     " must divide C " + std::to_string(c) +
                                                     " and O " + std::to_string(o));
  expect(w[1].size() == c / a.groups, "conv2d: weight dim 1 must be C/groups = " +
                                          std::to_string(c / a.groups) + ", got " + w[1].str());
  if (in.size() == 3)
    expect_vector(in[2], w[0], x.dtype, "conv2d bias");
  std::int64_t h =
      conv_out(x[2].size(), w[2].size(), a.stride[0], a.padding[0], a.dilation[0], "conv2d");
  std::int64_t wd =
      conv_out(x[3].size(), w[3].size(), a.stride[1], a.padding[1], a.dilation[1], "conv2d");
  return Shape({x[0], w[0], Dim(h), Dim(wd)}, x.dtype);
}

Shape pool2d(In in, const Pool2dAttrs& a) {
  const Shape& x = in[0];
  expect_rank(x, 4, "pool2d input [N, C, H, W]");
  expect_float(x, "pool2d input");
  expect_pair(a.kernel, 1, "pool2d kernel");
  expect_pair(a.stride, 1, "pool2d stride");
  expect_pair(a.padding, 0, "pool2d padding");
  expect(a.padding[0] <= a.kernel[0] / 2 && a.padding[1] <= a.kernel[1] / 2,
         "pool2d: padding must be at most half the kernel");
  expect(x[2].is_static() && x[3].is_static(), "pool2d: H and W must be static");
  std::int64_t h = conv_out(x[2].size(), a.kernel[0], a.stride[0], a.padding[0], 1, "pool2d");
  std::int64_t w = conv_out(x[3].size(), a.kernel[1], a.stride[1], a.padding[1], 1, "pool2d");
  return Shape({x[0], x[1], Dim(h), Dim(w)}, x.dtype);
}

namespace {
/// Checks that \p g's Inputs match \p types in order and it has no Params; \returns its outputs'
/// types.
std::vector<Shape> check_body(const Graph& g, In types, const std::string& what) {
  auto ins = g.inputs();
  expect(ins.size() == types.size(), what + " takes " + std::to_string(ins.size()) +
                                         " inputs but receives " + std::to_string(types.size()));
  for (std::size_t i = 0; i < ins.size(); ++i)
    expect(g.shape(ins[i]) == types[i], what + " input " + std::to_string(i) + " is " +
                                            g.shape(ins[i]).str() + " but receives " +
                                            types[i].str());
  expect(g.params().empty(), what + " may not hold params; pass them in as inputs");
  std::vector<Shape> outs;
  for (NodeId o : g.outputs())
    outs.push_back(g.shape(o));
  return outs;
}
} // namespace

Shape if_op(In in, const IfAttrs& a) {
  expect(a.then_branch && a.else_branch, "if: both branches are required");
  expect(in[0].dtype == DType::boolean && in[0].rank() == 0,
         "if: predicate must be a bool scalar, got " + in[0].str());
  auto caps = in.subspan(1);
  auto t = check_body(*a.then_branch, caps, "if then-branch");
  auto e = check_body(*a.else_branch, caps, "if else-branch");
  expect(t.size() == 1 && e.size() == 1, "if: each branch must have exactly one output");
  expect(t[0] == e[0], "if: branch types differ: " + t[0].str() + " vs " + e[0].str());
  return t[0];
}

Shape while_op(In in, const WhileAttrs& a) {
  expect(a.cond && a.body, "while: cond and body are required");
  expect(a.max_iterations >= 1, "while: max_iterations must be >= 1");
  auto c = check_body(*a.cond, in, "while cond");
  expect(c.size() == 1 && c[0].dtype == DType::boolean && c[0].rank() == 0,
         "while: cond must return one bool scalar");
  auto b = check_body(*a.body, in, "while body");
  expect(b.size() == in.size(), "while: body returns " + std::to_string(b.size()) + " values for " +
                                    std::to_string(in.size()) + " carries");
  for (std::size_t i = 0; i < b.size(); ++i)
    expect(b[i] == in[i], "while: body output " + std::to_string(i) + " is " + b[i].str() +
                              " but the carry is " + in[i].str());
  expect(a.output_index >= 0 && a.output_index < static_cast<std::int64_t>(in.size()),
         "while: output_index out of range");
  return in[static_cast<std::size_t>(a.output_index)];
}

Shape custom(In in, const CustomAttrs& a) {
  const CustomOpDef* def = CustomOpRegistry::global().find(a.name);
  expect(def != nullptr, "custom op '" + a.name + "' is not registered");
  auto n = static_cast<int>(in.size());
  expect(n >= def->min_arity && (def->max_arity < 0 || n <= def->max_arity),
         "custom op '" + a.name + "': wrong number of inputs (" + std::to_string(n) + ")");
  return def->infer(in, a);
}

Shape custom_fn(In in, const CustomFnAttrs& a) {
  expect(bool(a.body), "custom_fn: body is required");
  auto outs = check_body(*a.body, in, "custom_fn body");
  expect(outs.size() == 1, "custom_fn: body must have exactly one output");
  if (a.vjp) {
    std::vector<Shape> vin(in.begin(), in.end());
    vin.push_back(outs[0]);
    auto g = check_body(*a.vjp, vin, "custom_fn vjp");
    expect(g.size() == in.size(), "custom_fn: vjp must return one gradient per input");
    for (std::size_t i = 0; i < g.size(); ++i)
      expect(g[i] == in[i], "custom_fn: vjp output " + std::to_string(i) + " is " + g[i].str() +
                                " but input is " + in[i].str());
  }
  return outs[0];
}

Shape elementwise_region(In in, const RegionAttrs& a) {
  expect(bool(a.body), "elementwise_region: body is required");
  const Graph& body = *a.body;
  auto outs = check_body(body, in, "elementwise_region body");
  expect(!outs.empty(), "elementwise_region: the body has no outputs");
  for (NodeId id : body.ids()) {
    const Node& n = body.node(id);
    if (n.op == OpKind::Input || n.op == OpKind::Constant)
      continue;
    std::string why;
    if (!is_region_body_op(body, id, &why))
      throw ShapeError("elementwise_region: body node " + describe(body, id) +
                       " may not be in a region: " + why);
  }
  // Every result spans one iteration space (the first output's dims), and every body value
  // broadcasts onto it, so a backend computes the region as one loop over that space.
  const std::vector<Dim>& space = outs[0].dims;
  for (std::size_t i = 0; i < body.outputs().size(); ++i) {
    NodeId o = body.outputs()[i];
    expect(!is_leaf(body.node(o).op), "elementwise_region: body output " + std::to_string(i) +
                                          " is the leaf " + describe(body, o) +
                                          "; every result must be computed in the region");
    expect(outs[i].dims == space, "elementwise_region: body output " + std::to_string(i) + " is " +
                                      outs[i].str() + " but output 0 is " + outs[0].str() +
                                      "; every result has the same dims");
  }
  for (NodeId id : body.ids())
    expect(broadcasts_to(body.shape(id).dims, space),
           "elementwise_region: body node " + describe(body, id) + " of type " +
               body.shape(id).str() + " does not broadcast to the region's dims " + outs[0].str());
  if (outs.size() == 1)
    return outs[0];
  return Shape::tuple(std::move(outs));
}

namespace {
void check_quant(const Shape& x, const QuantAttrs& a, const char* what) {
  expect(!a.scales.empty(), std::string(what) + ": scales are required");
  expect(a.zero_points.size() == a.scales.size(),
         std::string(what) + ": zero_points and scales must have the same length");
  for (double s : a.scales)
    expect(s > 0 && std::isfinite(s), std::string(what) + ": scales must be > 0");
  for (auto z : a.zero_points)
    expect(z >= -128 && z <= 127, std::string(what) + ": zero points must fit in i8");
  if (a.axis) {
    auto ax = static_cast<std::size_t>(normalize_axis(*a.axis, x.rank(), what));
    expect(x[ax].is_static() && static_cast<std::int64_t>(a.scales.size()) == x[ax].size(),
           std::string(what) + ": per-channel needs one scale per element of dim " + x[ax].str());
  } else {
    expect(a.scales.size() == 1, std::string(what) + ": per-tensor takes exactly one scale");
  }
}
} // namespace

Shape quantize(In in, const QuantAttrs& a) {
  expect_float(in[0], "quantize input");
  check_quant(in[0], a, "quantize");
  return in[0].with_dtype(DType::i8);
}

Shape dequantize(In in, const QuantAttrs& a) {
  expect(in[0].dtype == DType::i8, "dequantize input must be i8, got " + dn(in[0].dtype));
  check_quant(in[0], a, "dequantize");
  return in[0].with_dtype(DType::f32);
}

Shape fake_quantize(In in, const QuantAttrs& a) {
  expect_float(in[0], "fake_quantize input");
  check_quant(in[0], a, "fake_quantize");
  return in[0];
}

// ---- HIR blocks
// ----------------------------------------------------------------------------------

namespace {
/// [out, in] weight check: \returns out.
Dim check_weight(const Shape& w, const Dim& in_dim, DType t, const std::string& what) {
  expect(w.rank() == 2 && w.dtype == t,
         what + " must be a 2-D [out, in] " + dn(t) + " weight, got " + w.str());
  expect_dim(w[1], in_dim, what + " in-features");
  return w[0];
}
} // namespace

Shape linear(In in, const LinearAttrs&) {
  const Shape& x = in[0];
  expect_float(x, "linear input");
  expect(x.rank() >= 1, "linear input must have rank >= 1");
  Dim out = check_weight(in[1], x.dims.back(), x.dtype, "linear weight");
  if (in.size() == 3)
    expect_vector(in[2], out, x.dtype, "linear bias");
  Shape r = x;
  r.dims.back() = out;
  return r;
}

Shape attention_block(In in, const AttentionBlockAttrs& a) {
  const Shape& x = in[0];
  expect_rank(x, 3, "attention_block input [B, S, E]");
  expect_float(x, "attention_block input");
  bool takes_mask = a.mask == MaskKind::padding || a.mask == MaskKind::bias;
  std::size_t want = 5 + (a.bias ? 4 : 0) + (takes_mask ? 1 : 0);
  expect(in.size() == want, "attention_block: expects " + std::to_string(want) +
                                " inputs for these attributes, got " + std::to_string(in.size()));
  expect(a.num_heads >= 1 && a.num_kv_heads >= 1 && a.num_heads % a.num_kv_heads == 0,
         "attention_block: num_heads must be a positive multiple of num_kv_heads");
  const Dim& e = x[2];
  Dim qd = check_weight(in[1], e, x.dtype, "attention_block wq");
  std::int64_t d = static_div(qd, a.num_heads, "attention_block: wq rows / num_heads");
  Dim kvd = Dim(checked_mul(d, a.num_kv_heads, "attention_block: head_dim x num_kv_heads"));
  expect_dim(check_weight(in[2], e, x.dtype, "attention_block wk"), kvd, "attention_block wk rows");
  expect_dim(check_weight(in[3], e, x.dtype, "attention_block wv"), kvd, "attention_block wv rows");
  Dim eo = check_weight(in[4], qd, x.dtype, "attention_block wo");
  if (a.bias) {
    expect_vector(in[5], qd, x.dtype, "attention_block bq");
    expect_vector(in[6], kvd, x.dtype, "attention_block bk");
    expect_vector(in[7], kvd, x.dtype, "attention_block bv");
    expect_vector(in[8], eo, x.dtype, "attention_block bo");
  }
  if (a.rope)
    expect(d % 2 == 0, "attention_block: rope needs an even head_dim");
  expect(a.rope_theta > 0 && std::isfinite(a.rope_theta),
         "attention_block: rope_theta must be > 0");
  if (a.mask == MaskKind::sliding_window)
    expect(a.window >= 1, "attention_block: sliding_window needs window >= 1");
  if (a.mask == MaskKind::padding) {
    const Shape& m = in.back();
    expect(m.rank() == 2 && m[0] == x[0] && m[1] == x[1],
           "attention_block: padding mask must be [B, S], got " + m.str());
  } else if (a.mask == MaskKind::bias) {
    expect_same_dtype(x, in.back(), "attention_block bias");
    expect(broadcasts_to(in.back().dims, {x[0], Dim(a.num_heads), x[1], x[1]}),
           "attention_block: bias must broadcast to [B, H, S, S]");
  }
  return Shape({x[0], x[1], eo}, x.dtype);
}

Shape swiglu_ffn(In in, const NoAttrs&) {
  const Shape& x = in[0];
  expect_float(x, "swiglu_ffn input");
  expect(x.rank() >= 1, "swiglu_ffn input must have rank >= 1");
  Dim f = check_weight(in[1], x.dims.back(), x.dtype, "swiglu_ffn w_gate");
  expect_dim(check_weight(in[2], x.dims.back(), x.dtype, "swiglu_ffn w_up"), f,
             "swiglu_ffn w_up rows");
  Dim eo = check_weight(in[3], f, x.dtype, "swiglu_ffn w_down");
  Shape r = x;
  r.dims.back() = eo;
  return r;
}

Shape bert_layer(In in, const BertLayerAttrs& a) {
  const Shape& x = in[0];
  expect_rank(x, 3, "bert_layer input [B, S, E]");
  expect_float(x, "bert_layer input");
  expect(in.size() == (a.padding_mask ? 18u : 17u),
         std::string("bert_layer: expects ") + (a.padding_mask ? "18" : "17") + " inputs, got " +
             std::to_string(in.size()));
  expect(a.eps > 0 && std::isfinite(a.eps), "bert_layer: eps must be > 0");
  const Dim& e = x[2];
  static_div(e, a.num_heads, "bert_layer: hidden / num_heads");
  const char* names[] = {"wq", "wk", "wv", "wo"};
  for (int i = 0; i < 4; ++i) {
    std::string n = std::string("bert_layer ") + names[i];
    expect_dim(check_weight(in[1 + 2 * static_cast<std::size_t>(i)], e, x.dtype, n), e,
               n + " rows");
    expect_vector(in[2 + 2 * static_cast<std::size_t>(i)], e, x.dtype, n + " bias");
  }
  expect_vector(in[9], e, x.dtype, "bert_layer ln1 gamma");
  expect_vector(in[10], e, x.dtype, "bert_layer ln1 beta");
  Dim f = check_weight(in[11], e, x.dtype, "bert_layer ffn w1");
  expect_vector(in[12], f, x.dtype, "bert_layer ffn b1");
  expect_dim(check_weight(in[13], f, x.dtype, "bert_layer ffn w2"), e, "bert_layer ffn w2 rows");
  expect_vector(in[14], e, x.dtype, "bert_layer ffn b2");
  expect_vector(in[15], e, x.dtype, "bert_layer ln2 gamma");
  expect_vector(in[16], e, x.dtype, "bert_layer ln2 beta");
  if (a.padding_mask) {
    const Shape& m = in[17];
    expect(m.rank() == 2 && m[0] == x[0] && m[1] == x[1],
           "bert_layer: padding mask must be [B, S], got " + m.str());
  }
  return x;
}

Shape llama_block(In in, const LlamaBlockAttrs& a) {
  const Shape& x = in[0];
  expect_rank(x, 3, "llama_block input [B, S, E]");
  expect_float(x, "llama_block input");
  expect(a.eps > 0 && std::isfinite(a.eps), "llama_block: eps must be > 0");
  expect(a.rope_theta > 0 && std::isfinite(a.rope_theta), "llama_block: rope_theta must be > 0");
  expect(a.num_heads >= 1 && a.num_kv_heads >= 1 && a.num_heads % a.num_kv_heads == 0,
         "llama_block: num_heads must be a positive multiple of num_kv_heads");
  const Dim& e = x[2];
  expect_vector(in[1], e, x.dtype, "llama_block attn_norm");
  Dim qd = check_weight(in[2], e, x.dtype, "llama_block wq");
  std::int64_t d = static_div(qd, a.num_heads, "llama_block: wq rows / num_heads");
  expect(d % 2 == 0, "llama_block: head_dim must be even for RoPE");
  Dim kvd = Dim(checked_mul(d, a.num_kv_heads, "llama_block: head_dim x num_kv_heads"));
  expect_dim(check_weight(in[3], e, x.dtype, "llama_block wk"), kvd, "llama_block wk rows");
  expect_dim(check_weight(in[4], e, x.dtype, "llama_block wv"), kvd, "llama_block wv rows");
  expect_dim(check_weight(in[5], qd, x.dtype, "llama_block wo"), e, "llama_block wo rows");
  expect_vector(in[6], e, x.dtype, "llama_block ffn_norm");
  Dim f = check_weight(in[7], e, x.dtype, "llama_block w_gate");
  expect_dim(check_weight(in[8], e, x.dtype, "llama_block w_up"), f, "llama_block w_up rows");
  expect_dim(check_weight(in[9], f, x.dtype, "llama_block w_down"), e, "llama_block w_down rows");
  return x;
}

} // namespace rlx::ir::rules
