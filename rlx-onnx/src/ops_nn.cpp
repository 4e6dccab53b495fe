// ops_nn.cpp: ONNX MatMul / Gemm / Einsum, reductions, softmax, normalisation, convolution and
// pooling -> rlx ops.
#include "importer.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

namespace rlx::onnx::detail {

namespace {

using ir::CmpOp;
using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::ReduceOp;

NodeId sc(NodeCtx& c, double v, NodeId like) {
  return c.scalar(v, c.g().shape(like).dtype);
}

std::vector<Dim> dims_of(NodeCtx& c, NodeId x) {
  return c.g().shape(x).dims;
}

void matmul(NodeCtx& c) {
  NodeId a = c.in(0), b = c.in(1);
  auto da = dims_of(c, a), db = dims_of(c, b);
  if (da.empty() || db.empty())
    throw Invalid("MatMul operands must have rank >= 1");
  bool va = da.size() == 1, vb = db.size() == 1;
  if (va)
    a = reshape_to(c, a, {Dim(1), da[0]});
  if (vb)
    b = reshape_to(c, b, {db[0], Dim(1)});
  NodeId y = c.b().matmul(a, b);
  if (va || vb) {
    auto dy = dims_of(c, y);
    std::vector<Dim> out(dy.begin(), dy.end() - 2);
    if (!va)
      out.push_back(dy[dy.size() - 2]);
    if (!vb)
      out.push_back(dy.back());
    y = reshape_to(c, y, out);
  }
  c.set(0, y);
}

void gemm(NodeCtx& c) {
  auto& b = c.b();
  if (c.opset() < 7)
    c.ignore("broadcast");
  bool ta = c.attr_i("transA", 0) != 0, tb = c.attr_i("transB", 0) != 0;
  double alpha = c.attr_f("alpha", 1.0), beta = c.attr_f("beta", 1.0);
  NodeId y = b.matmul(c.in(0), c.in(1), ta, tb);
  if (alpha != 1.0)
    y = b.mul(y, sc(c, alpha, y));
  if (c.has(2)) {
    NodeId bias = c.in(2);
    if (beta != 1.0)
      bias = b.mul(bias, sc(c, beta, bias));
    y = b.add(y, bias);
  }
  c.set(0, y);
}

void einsum(NodeCtx& c) {
  std::string eq = c.attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find('.') != std::string::npos)
    throw Unsupported("Einsum with an ellipsis ('" + eq + "')");
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> ops;
  std::size_t p = 0;
  for (;;) {
    auto comma = lhs.find(',', p);
    ops.push_back(lhs.substr(p, comma - p));
    if (comma == std::string::npos)
      break;
    p = comma + 1;
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    for (char ch = 'A'; ch <= 'z'; ++ch) {
      int n = 0;
      for (const auto& o : ops)
        n += static_cast<int>(std::count(o.begin(), o.end(), ch));
      if (n == 1)
        out += ch;
    }
  }
  if (ops.size() != c.num_inputs())
    throw Invalid("equation '" + eq + "' has " + std::to_string(ops.size()) +
                  " operands, the node " + std::to_string(c.num_inputs()));
  if (ops.size() > 2)
    throw Unsupported("Einsum with more than two operands");
  std::vector<NodeId> xs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string& o = ops[i];
    for (char ch : o)
      if (std::count(o.begin(), o.end(), ch) > 1)
        throw Unsupported("Einsum with a repeated index in one operand ('" + o + "', a diagonal)");
    NodeId x = c.in(i);
    if (c.g().shape(x).rank() != o.size())
      throw Invalid("operand " + std::to_string(i) + " has rank " +
                    std::to_string(c.g().shape(x).rank()) + ", equation term '" + o + "'");
    xs.push_back(x);
  }
  auto in = [](const std::string& s, char ch) { return s.find(ch) != std::string::npos; };
  // Sum out indices that only one operand has and the output lacks.
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string other = ops.size() == 2 ? ops[1 - i] : std::string();
    std::vector<std::int64_t> axes;
    std::string kept;
    for (std::size_t k = 0; k < ops[i].size(); ++k) {
      char ch = ops[i][k];
      if (!in(out, ch) && !in(other, ch))
        axes.push_back(static_cast<std::int64_t>(k));
      else
        kept += ch;
    }
    if (!axes.empty()) {
      xs[i] = c.b().sum(xs[i], axes);
      ops[i] = kept;
    }
  }
  std::string cur;
  NodeId y;
  if (ops.size() == 1) {
    y = xs[0];
    cur = ops[0];
  } else {
    const std::string &a = ops[0], &b = ops[1];
    ir::DotGeneralAttrs d;
    std::string batch, fa, fb;
    for (std::size_t k = 0; k < a.size(); ++k) {
      char ch = a[k];
      if (in(b, ch) && in(out, ch)) {
        d.lhs_batch.push_back(static_cast<std::int64_t>(k));
        d.rhs_batch.push_back(static_cast<std::int64_t>(b.find(ch)));
        batch += ch;
      } else if (in(b, ch)) {
        d.lhs_contracting.push_back(static_cast<std::int64_t>(k));
        d.rhs_contracting.push_back(static_cast<std::int64_t>(b.find(ch)));
      } else {
        fa += ch;
      }
    }
    for (char ch : b)
      if (!in(a, ch))
        fb += ch;
    y = c.b().dot_general(xs[0], xs[1], d);
    cur = batch + fa + fb;
  }
  if (cur.size() != out.size())
    throw Invalid("equation '" + eq + "': output indices do not match the operands");
  std::vector<std::int64_t> perm;
  for (char ch : out) {
    auto k = cur.find(ch);
    if (k == std::string::npos)
      throw Invalid("equation '" + eq + "': output index '" + std::string(1, ch) + "' is unknown");
    perm.push_back(static_cast<std::int64_t>(k));
  }
  bool id = true;
  for (std::size_t i = 0; i < perm.size(); ++i)
    id &= perm[i] == static_cast<std::int64_t>(i);
  c.set(0, id ? y : c.b().transpose(y, perm));
}

void softmax(NodeCtx& c, bool log) {
  NodeId x = c.in(0);
  auto d = dims_of(c, x);
  auto rank = d.size();
  if (c.opset() >= 13) {
    auto axis = norm_axis(c.attr_i("axis", -1), rank, "axis");
    c.set(0, log ? c.b().log_softmax(x, axis) : c.b().softmax(x, axis));
    return;
  }
  // Before opset 13 the input is coerced to 2-D [prod(:axis), prod(axis:)].
  std::int64_t axis = c.attr_i("axis", 1);
  if (axis < 0)
    axis += static_cast<std::int64_t>(rank);
  if (axis < 0 || axis > static_cast<std::int64_t>(rank))
    throw Invalid("axis out of range");
  if (axis == static_cast<std::int64_t>(rank) - 1) {
    c.set(0, log ? c.b().log_softmax(x, -1) : c.b().softmax(x, -1));
    return;
  }
  auto a = static_cast<std::size_t>(axis);
  NodeId x2 = reshape_to(c, x, {dims_product(d, 0, a), dims_product(d, a, rank)});
  NodeId y = log ? c.b().log_softmax(x2, 1) : c.b().softmax(x2, 1);
  c.set(0, reshape_to(c, y, d));
}

void layer_norm(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0), scale = c.in(1);
  std::optional<NodeId> bias;
  if (c.has(2))
    bias = c.in(2);
  auto d = dims_of(c, x);
  auto a = static_cast<std::size_t>(norm_axis(c.attr_i("axis", -1), d.size(), "axis"));
  double eps = c.attr_f("epsilon", 1e-5);
  c.ignore("stash_type");
  std::vector<Dim> tail(d.begin() + static_cast<std::ptrdiff_t>(a), d.end());
  Dim n = dims_product(d, a, d.size());
  auto flat = [&](NodeId p) {
    if (dims_of(c, p) != tail)
      p = b.expand(p, tail);
    return reshape_to(c, p, {n});
  };
  std::vector<Dim> d2(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(a));
  d2.push_back(n);
  NodeId y = b.layer_norm(reshape_to(c, x, d2), flat(scale), bias ? flat(*bias) : NodeId{}, eps);
  c.set(0, reshape_to(c, y, d));
  if (c.output_used(1) || c.output_used(2)) {
    std::vector<std::int64_t> axes;
    for (std::size_t i = a; i < d.size(); ++i)
      axes.push_back(static_cast<std::int64_t>(i));
    NodeId mean = b.mean(x, axes, true);
    NodeId cen = b.sub(x, mean);
    NodeId var = b.mean(b.mul(cen, cen), axes, true);
    c.set(1, mean);
    c.set(2, b.rsqrt(b.add(var, sc(c, eps, var))));
  }
}

void reduce(NodeCtx& c, const std::string& op) {
  auto& b = c.b();
  NodeId x = c.in(0);
  std::vector<std::int64_t> axes;
  bool from_input = op == "ReduceSum" ? c.opset() >= 13 : c.opset() >= 18;
  bool have_axes = false;
  if (from_input) {
    if (c.has(1)) {
      axes = c.need_ints(1, "axes");
      have_axes = true;
    }
  } else if (auto a = c.attr_ints("axes")) {
    axes = *a;
    have_axes = true;
  }
  bool keep = c.attr_i("keepdims", 1) != 0;
  bool noop = c.attr_i("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop) {
    c.set(0, x);
    return;
  }
  (void)have_axes;
  auto r = c.g().shape(x).rank();
  for (auto& ax : axes)
    ax = norm_axis(ax, r, "axis");
  DType t = c.g().shape(x).dtype;
  if ((op == "ReduceMean" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp") &&
      !ir::is_float(t))
    throw Unsupported(op + " of " + std::string(ir::dtype_name(t)));
  auto red = [&](ReduceOp k, NodeId v) { return b.reduce(k, v, axes, keep); };
  NodeId y;
  if (op == "ReduceSum")
    y = red(ReduceOp::sum, x);
  else if (op == "ReduceMean")
    y = red(ReduceOp::mean, x);
  else if (op == "ReduceMax")
    y = red(ReduceOp::max, x);
  else if (op == "ReduceMin")
    y = red(ReduceOp::min, x);
  else if (op == "ReduceProd")
    y = red(ReduceOp::prod, x);
  else if (op == "ReduceL1")
    y = red(ReduceOp::sum, b.abs(x));
  else if (op == "ReduceL2")
    y = b.sqrt(red(ReduceOp::sum, b.mul(x, x)));
  else if (op == "ReduceSumSquare")
    y = red(ReduceOp::sum, b.mul(x, x));
  else if (op == "ReduceLogSum")
    y = b.log(red(ReduceOp::sum, x));
  else // ReduceLogSumExp
    y = b.log(red(ReduceOp::sum, b.exp(x)));
  c.set(0, y);
}

void argmax(NodeCtx& c, bool min) {
  auto& b = c.b();
  NodeId x = c.in(0);
  auto axis = norm_axis(c.attr_i("axis", 0), c.g().shape(x).rank(), "axis");
  bool keep = c.attr_i("keepdims", 1) != 0;
  bool last = c.attr_i("select_last_index", 0) != 0;
  const ir::Dim d = c.g().shape(x).dims[static_cast<std::size_t>(axis)];
  if (last) {
    // The last extreme is the first one of the reversed axis, counted from the end.
    if (d.is_symbolic())
      throw Unsupported("select_last_index over symbolic dim " + d.str());
    check_built_size(d.size(), "the reversed index list");
    std::vector<std::int64_t> rev(static_cast<std::size_t>(d.size()));
    for (std::size_t i = 0; i < rev.size(); ++i)
      rev[i] = d.size() - 1 - static_cast<std::int64_t>(i);
    x = b.gather(x, c.constant(ir::Tensor::from<std::int64_t>({d.size()}, rev)), axis);
  }
  if (min) {
    DType t = c.g().shape(x).dtype;
    if (t == DType::u8 || t == DType::boolean)
      x = b.cast(x, DType::i32);
    // For integers -1 - x (= ~x) orders in reverse without overflowing; floats negate.
    x = ir::is_float(t) ? b.neg(x) : b.sub(sc(c, -1, x), x);
  }
  NodeId am = b.argmax(x, axis, keep);
  if (last)
    am = b.sub(c.scalar(static_cast<double>(d.size() - 1), ir::DType::i64), am);
  c.set(0, am);
}

/// TopK: the rlx op (a (values, indices) tuple) read through two Gets. k is an attribute before
/// opset 10, then a one-element input that must be known at import time (the result's shape
/// depends on it). sorted = 0 leaves the order to the runtime (ONNX), so sorted order serves it.
void topk(NodeCtx& c) {
  NodeId x = c.in(0);
  const auto rank = c.g().shape(x).rank();
  if (rank == 0)
    throw Invalid("TopK of a scalar");
  auto axis = norm_axis(c.attr_i("axis", -1), rank, "axis");
  std::int64_t k = 0;
  if (c.opset() < 10) {
    if (!c.has_attr("k"))
      throw Invalid("TopK needs the attribute k (opset < 10)");
    k = c.attr_i("k", 0);
  } else {
    auto ks = c.need_ints(1, "k");
    if (ks.size() != 1)
      throw Invalid("TopK's k must hold one value, got " + std::to_string(ks.size()));
    k = ks[0];
  }
  const bool largest = c.attr_i("largest", 1) != 0;
  c.ignore("sorted");
  ir::TopKAttrs a;
  a.axis = axis;
  a.k = k;
  a.largest = largest;
  NodeId t = c.g().add(OpKind::TopK, {x}, a, c.node().name());
  if (c.output_used(0))
    c.set(0, c.g().add(OpKind::Get, {t}, ir::GetAttrs{0}));
  if (c.output_used(1))
    c.set(1, c.g().add(OpKind::Get, {t}, ir::GetAttrs{1}));
}

/// Spatial geometry of a Conv / pool node on a 4-D NCHW input: per spatial axis the kernel
/// extent, stride, dilation and begin / end pads (auto_pad resolved).
struct Window {
  std::vector<std::int64_t> kernel, stride, dil, pad_begin, pad_end;
};

Window window(NodeCtx& c, NodeId x, std::vector<std::int64_t> kernel, bool ceil_mode) {
  auto d = dims_of(c, x);
  std::size_t ns = kernel.size();
  Window w;
  w.kernel = kernel;
  w.stride = c.attr_ints("strides").value_or(std::vector<std::int64_t>(ns, 1));
  w.dil = c.attr_ints("dilations").value_or(std::vector<std::int64_t>(ns, 1));
  auto pads = c.attr_ints("pads").value_or(std::vector<std::int64_t>(2 * ns, 0));
  std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  if (w.stride.size() != ns || w.dil.size() != ns || pads.size() != 2 * ns)
    throw Invalid("strides / dilations / pads do not match the " + std::to_string(ns) +
                  " spatial dims");
  for (std::size_t i = 0; i < ns; ++i) {
    if (w.stride[i] < 1 || w.dil[i] < 1 || kernel[i] < 1 || pads[i] < 0 || pads[i + ns] < 0)
      throw Invalid("kernel, strides and dilations must be >= 1 and pads >= 0");
    w.pad_begin.push_back(pads[i]);
    w.pad_end.push_back(pads[i + ns]);
  }
  for (std::size_t i = 0; i < ns; ++i) {
    const Dim& dim = d[2 + i];
    bool need_size = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER" || ceil_mode;
    if (!need_size)
      continue;
    if (dim.is_symbolic())
      throw Unsupported("auto_pad / ceil_mode over symbolic dim " + dim.str());
    std::int64_t in = dim.size(), k = (kernel[i] - 1) * w.dil[i] + 1, s = w.stride[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      std::int64_t out = (in + s - 1) / s;
      std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s + k - in);
      std::int64_t small = total / 2, large = total - small;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
    }
    if (ceil_mode) {
      std::int64_t span = in + w.pad_begin[i] + w.pad_end[i] - k;
      std::int64_t out = (span + s - 1) / s + 1;
      if ((out - 1) * s >= in + w.pad_begin[i]) // the last window must start inside
        --out;
      std::int64_t extra = (out - 1) * s + k - (in + w.pad_begin[i] + w.pad_end[i]);
      if (extra > 0)
        w.pad_end[i] += extra;
    }
  }
  if (auto_pad == "VALID")
    std::fill(w.pad_begin.begin(), w.pad_begin.end(), 0),
        std::fill(w.pad_end.begin(), w.pad_end.end(), 0);
  else if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    throw Invalid("auto_pad '" + auto_pad + "'");
  return w;
}

bool symmetric(const Window& w) {
  return w.pad_begin == w.pad_end;
}

/// Lifts a 3-D [N, C, L] operand to 4-D [N, C, 1, L] (1-D conv / pool as 2-D).
NodeId to_4d(NodeCtx& c, NodeId x) {
  auto d = dims_of(c, x);
  if (d.size() == 4)
    return x;
  if (d.size() != 3)
    throw Unsupported("only 1-D and 2-D convolution / pooling are supported (rank " +
                      std::to_string(d.size()) + " input)");
  return reshape_to(c, x, {d[0], d[1], Dim(1), d[2]});
}

/// The 2-D form of 1-D window parameters (a kernel of 1 over the added axis).
Window to_2d(Window w) {
  if (w.kernel.size() == 2)
    return w;
  auto lift = [](std::vector<std::int64_t>& v, std::int64_t one) { v.insert(v.begin(), one); };
  lift(w.kernel, 1);
  lift(w.stride, 1);
  lift(w.dil, 1);
  lift(w.pad_begin, 0);
  lift(w.pad_end, 0);
  return w;
}

NodeId explicit_pad(NodeCtx& c, NodeId x, const Window& w, double v) {
  for (std::size_t i = 0; i < 2; ++i)
    x = pad_axis(c, x, static_cast<std::int64_t>(2 + i), w.pad_begin[i], w.pad_end[i], v);
  return x;
}

void conv(NodeCtx& c) {
  NodeId x = c.in(0), wt = c.in(1);
  auto xd = dims_of(c, x);
  auto wd = dims_of(c, wt);
  if (xd.size() != wd.size())
    throw Invalid("X and W ranks differ");
  std::vector<std::int64_t> kernel;
  for (std::size_t i = 2; i < wd.size(); ++i)
    kernel.push_back(wd[i].size());
  if (auto ks = c.attr_ints("kernel_shape"); ks && *ks != kernel)
    throw Invalid("kernel_shape does not match W");
  Window w = to_2d(window(c, x, kernel, false));
  x = to_4d(c, x);
  wt = to_4d(c, wt);
  ir::Conv2dAttrs a;
  a.stride = w.stride;
  a.dilation = w.dil;
  a.groups = c.attr_i("group", 1);
  if (symmetric(w)) {
    a.padding = w.pad_begin;
  } else {
    x = explicit_pad(c, x, w, 0.0);
    a.padding = {0, 0};
  }
  NodeId y = c.b().conv2d(x, wt, c.has(2) ? c.in(2) : NodeId{}, a);
  if (xd.size() == 3) {
    auto yd = dims_of(c, y);
    y = reshape_to(c, y, {yd[0], yd[1], yd[3]});
  }
  c.set(0, y);
}

/// Inserts \p s - 1 zeros between the elements of axis \p axis (static) of \p x.
NodeId dilate_axis(NodeCtx& c, NodeId x, std::size_t axis, std::int64_t s) {
  if (s == 1)
    return x;
  auto& b = c.b();
  auto d = dims_of(c, x);
  if (d[axis].is_symbolic())
    throw Unsupported("ConvTranspose with strides over symbolic dim " + d[axis].str());
  std::int64_t n = d[axis].size();
  std::vector<Dim> u = d;
  u.insert(u.begin() + static_cast<std::ptrdiff_t>(axis) + 1, Dim(1));
  NodeId xu = reshape_to(c, x, u);
  std::vector<Dim> zd = u;
  zd[axis + 1] = Dim(s - 1);
  NodeId z = b.expand(c.scalar(0, c.g().shape(x).dtype), zd);
  NodeId both = b.concat({xu, z}, static_cast<std::int64_t>(axis) + 1);
  std::vector<Dim> flat = d;
  flat[axis] = Dim(n * s);
  return b.narrow(reshape_to(c, both, flat), static_cast<std::int64_t>(axis), 0, (n - 1) * s + 1);
}

/// ConvTranspose as a convolution: the input dilated by the strides and padded by
/// (k - 1) * dilation - pad, the kernel transposed per group and flipped.
void conv_transpose(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0), wt = c.in(1);
  auto xd = dims_of(c, x);
  auto wd = dims_of(c, wt);
  if (xd.size() != wd.size() || (xd.size() != 3 && xd.size() != 4))
    throw Unsupported("ConvTranspose over " + std::to_string(xd.size() - 2) + " spatial dims");
  if (c.has_attr("output_shape"))
    throw Unsupported("ConvTranspose with output_shape");
  std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    throw Unsupported("ConvTranspose with auto_pad " + auto_pad);
  std::size_t ns = xd.size() - 2;
  std::vector<std::int64_t> kernel;
  for (std::size_t i = 2; i < wd.size(); ++i)
    kernel.push_back(wd[i].size());
  if (auto ks = c.attr_ints("kernel_shape"); ks && *ks != kernel)
    throw Invalid("kernel_shape does not match W");
  auto strides = c.attr_ints("strides").value_or(std::vector<std::int64_t>(ns, 1));
  auto dil = c.attr_ints("dilations").value_or(std::vector<std::int64_t>(ns, 1));
  auto pads = c.attr_ints("pads").value_or(std::vector<std::int64_t>(2 * ns, 0));
  auto outpad = c.attr_ints("output_padding").value_or(std::vector<std::int64_t>(ns, 0));
  if (auto_pad == "VALID")
    pads.assign(2 * ns, 0);
  std::int64_t group = c.attr_i("group", 1);
  if (strides.size() != ns || dil.size() != ns || pads.size() != 2 * ns || outpad.size() != ns ||
      group < 1)
    throw Invalid("strides / dilations / pads / output_padding / group do not fit");
  if (ns == 1) { // lift 1-D to 2-D
    x = to_4d(c, x);
    wt = to_4d(c, wt);
    kernel.insert(kernel.begin(), 1);
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
    outpad.insert(outpad.begin(), 0);
  }
  auto w4 = dims_of(c, wt);
  if (!w4[0].is_static() || !w4[1].is_static())
    throw Unsupported("ConvTranspose with a symbolic weight");
  std::int64_t cin = w4[0].size(), mg = w4[1].size();
  if (cin % group != 0)
    throw Invalid("input channels not divisible by group");
  // W [C, M/g, kh, kw] -> [M, C/g, kh, kw], spatially flipped.
  NodeId w =
      reshape_to(c, wt, {Dim(group), Dim(cin / group), Dim(mg), Dim(kernel[0]), Dim(kernel[1])});
  w = b.transpose(w, {0, 2, 1, 3, 4});
  w = reshape_to(c, w, {Dim(group * mg), Dim(cin / group), Dim(kernel[0]), Dim(kernel[1])});
  for (std::size_t i = 0; i < 2; ++i) {
    if (kernel[i] == 1)
      continue;
    std::vector<std::int64_t> rev(static_cast<std::size_t>(kernel[i]));
    for (std::size_t k = 0; k < rev.size(); ++k)
      rev[k] = kernel[i] - 1 - static_cast<std::int64_t>(k);
    w = b.gather(w, c.constant(ir::Tensor::from<std::int64_t>({kernel[i]}, rev)),
                 static_cast<std::int64_t>(2 + i));
  }
  for (std::size_t i = 0; i < 2; ++i) {
    auto ax = static_cast<std::int64_t>(2 + i);
    x = dilate_axis(c, x, 2 + i, strides[i]);
    std::int64_t keff = (kernel[i] - 1) * dil[i] + 1;
    std::int64_t before = keff - 1 - pads[i], after = keff - 1 - pads[i + 2] + outpad[i];
    std::int64_t n = dims_of(c, x)[2 + i].size();
    std::int64_t cut_b = std::max<std::int64_t>(-before, 0),
                 cut_a = std::max<std::int64_t>(-after, 0);
    if (cut_b + cut_a >= n)
      throw Invalid("pads larger than the output");
    if (cut_b || cut_a)
      x = b.narrow(x, ax, cut_b, n - cut_b - cut_a);
    x = pad_axis(c, x, ax, std::max<std::int64_t>(before, 0), std::max<std::int64_t>(after, 0),
                 0.0);
  }
  ir::Conv2dAttrs a;
  a.stride = {1, 1};
  a.padding = {0, 0};
  a.dilation = dil;
  a.groups = group;
  NodeId y = b.conv2d(x, w, c.has(2) ? c.in(2) : NodeId{}, a);
  if (xd.size() == 3) {
    auto yd = dims_of(c, y);
    y = reshape_to(c, y, {yd[0], yd[1], yd[3]});
  }
  c.set(0, y);
}

/// Max pooling with dilations over an already padded [N, C, H, W] x (static H, W): per spatial
/// axis one Gather of every window's cells (offset t of window o reads o * stride + t * dilation),
/// t-major, reshaped to [.., k, out, ..]; then the max over both k axes.
NodeId dilated_max_pool(NodeCtx& c, NodeId x, const Window& w) {
  auto& b = c.b();
  for (std::size_t i = 0; i < 2; ++i) {
    const auto d = dims_of(c, x);
    const std::size_t ax = 2 + 2 * i; // [N, C, H, W] -> [N, C, kh, oh, W] -> axis 4 next
    if (!d[ax].is_static())
      throw Unsupported("pooling with dilations over symbolic dim " + d[ax].str());
    const std::int64_t extent = (w.kernel[i] - 1) * w.dil[i] + 1;
    if (d[ax].size() < extent)
      throw Invalid("the dilated pooling window (" + std::to_string(extent) +
                    ") exceeds the padded input (" + d[ax].str() + ")");
    const std::int64_t out = (d[ax].size() - extent) / w.stride[i] + 1;
    check_built_size(w.kernel[i] * out, "the dilated pooling index list");
    std::vector<std::int64_t> idx;
    for (std::int64_t t = 0; t < w.kernel[i]; ++t)
      for (std::int64_t o = 0; o < out; ++o)
        idx.push_back(o * w.stride[i] + t * w.dil[i]);
    const auto n = static_cast<std::int64_t>(idx.size());
    x = b.gather(x, c.constant(ir::Tensor::from<std::int64_t>({n}, idx)),
                 static_cast<std::int64_t>(ax));
    std::vector<Dim> split(d.begin(), d.end());
    split[ax] = Dim(out);
    split.insert(split.begin() + static_cast<std::ptrdiff_t>(ax), Dim(w.kernel[i]));
    x = reshape_to(c, x, split);
  }
  return b.reduce(ReduceOp::max, x, {2, 4});
}

void pool(NodeCtx& c, bool max) {
  auto& b = c.b();
  NodeId x = c.in(0);
  auto xd = dims_of(c, x);
  auto ks = c.attr_ints("kernel_shape");
  if (!ks)
    throw Invalid("kernel_shape is missing");
  bool ceil_mode = c.attr_i("ceil_mode", 0) != 0;
  bool include_pad = !max && c.attr_i("count_include_pad", 0) != 0;
  if (max)
    c.ignore("storage_order"); // only affects the Indices output, which is not supported
  Window raw = to_2d(window(c, x, *ks, false));
  Window w = to_2d(window(c, x, *ks, ceil_mode)); // plus the cells ceil_mode adds at the end
  const bool dilated = w.dil[0] != 1 || w.dil[1] != 1;
  if (dilated && !max)
    throw Unsupported("average pooling with dilations");
  x = to_4d(c, x);
  DType t = c.g().shape(x).dtype;
  if (!ir::is_float(t)) {
    if (!max || t == DType::i64)
      throw Unsupported("pooling " + std::string(ir::dtype_name(t)));
    x = b.cast(x, DType::f64); // exact for u8 / i8 / i32
  }
  ir::Pool2dAttrs a;
  a.kind = max ? ir::PoolKind::max : ir::PoolKind::avg;
  a.kernel = w.kernel;
  a.stride = w.stride;
  bool native =
      symmetric(w) && 2 * w.pad_begin[0] <= w.kernel[0] && 2 * w.pad_begin[1] <= w.kernel[1];
  NodeId y;
  if (dilated) {
    y = dilated_max_pool(c, explicit_pad(c, x, w, -std::numeric_limits<double>::infinity()), w);
  } else if (native && (max || !include_pad)) {
    // rlx pooling never lets padded cells take part: ONNX's max, and average without
    // count_include_pad.
    a.padding = w.pad_begin;
    y = b.pool2d(x, a);
  } else if (max) {
    a.padding = {0, 0};
    y = b.pool2d(explicit_pad(c, x, w, -std::numeric_limits<double>::infinity()), a);
  } else {
    // Average over the counted cells: avg(x padded with 0) / avg(mask padded), where the mask
    // is 1 on input cells, and on pads when count_include_pad (never on ceil_mode's extra cells).
    a.padding = {0, 0};
    NodeId ones = b.expand(c.scalar(1, c.g().shape(x).dtype), c.g().shape(x).dims);
    NodeId mask;
    if (include_pad) {
      Window extra = w;
      for (std::size_t i = 0; i < 2; ++i) {
        extra.pad_begin[i] = 0;
        extra.pad_end[i] = w.pad_end[i] - raw.pad_end[i];
      }
      mask = explicit_pad(c, explicit_pad(c, ones, raw, 1.0), extra, 0.0);
    } else {
      mask = explicit_pad(c, ones, w, 0.0);
    }
    y = b.div(b.pool2d(explicit_pad(c, x, w, 0.0), a), b.pool2d(mask, a));
  }
  if (!ir::is_float(t))
    y = b.cast(y, t);
  if (xd.size() == 3) {
    auto yd = dims_of(c, y);
    y = reshape_to(c, y, {yd[0], yd[1], yd[3]});
  }
  c.set(0, y);
}

void global_pool(NodeCtx& c, ReduceOp op) {
  NodeId x = c.in(0);
  std::vector<std::int64_t> axes;
  for (std::size_t i = 2; i < c.g().shape(x).rank(); ++i)
    axes.push_back(static_cast<std::int64_t>(i));
  c.set(0, c.b().reduce(op, x, axes, true));
}

/// [C] -> [C, 1, ...] so that it broadcasts over an NC... input of rank \p rank.
NodeId per_channel(NodeCtx& c, NodeId p, std::size_t rank) {
  auto d = dims_of(c, p);
  if (d.size() != 1)
    throw Invalid("per-channel parameters must be 1-D, got " + c.g().shape(p).str());
  std::vector<Dim> out{d[0]};
  for (std::size_t i = 2; i < rank; ++i)
    out.emplace_back(1);
  return reshape_to(c, p, out);
}

void batch_norm(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  std::size_t r = c.g().shape(x).rank();
  double eps = c.attr_f("epsilon", 1e-5);
  c.ignore("momentum");
  c.ignore("is_test");
  c.ignore("consumed_inputs");
  if (c.attr_i("spatial", 1) != 1)
    throw Unsupported("spatial = 0");
  if (c.attr_i("training_mode", 0) != 0)
    throw Unsupported("training_mode = 1");
  NodeId scale = per_channel(c, c.in(1), r), bias = per_channel(c, c.in(2), r);
  NodeId mean = per_channel(c, c.in(3), r), var = per_channel(c, c.in(4), r);
  NodeId k = b.mul(scale, b.rsqrt(b.add(var, sc(c, eps, var))));
  c.set(0, b.add(b.mul(b.sub(x, mean), k), bias));
}

void instance_norm(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  std::size_t r = c.g().shape(x).rank();
  double eps = c.attr_f("epsilon", 1e-5);
  std::vector<std::int64_t> axes;
  for (std::size_t i = 2; i < r; ++i)
    axes.push_back(static_cast<std::int64_t>(i));
  NodeId cen = b.sub(x, b.mean(x, axes, true));
  NodeId var = b.mean(b.mul(cen, cen), axes, true);
  NodeId y = b.mul(cen, b.rsqrt(b.add(var, sc(c, eps, var))));
  c.set(0, b.add(b.mul(y, per_channel(c, c.in(1), r)), per_channel(c, c.in(2), r)));
}

/// LRN over the channels of [N, C, ..]: y = x / (bias + alpha / size * s)^beta, s the sum of x^2
/// over channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to [0, C): x^2
/// zero-padded along C, then the sum of `size` shifted Narrows (in ascending channel order).
void lrn(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  const auto d = dims_of(c, x);
  if (d.size() < 3)
    throw Invalid("LRN needs an input of rank >= 3 ([N, C, ..]), got rank " +
                  std::to_string(d.size()));
  if (!d[1].is_static())
    throw Unsupported("LRN over a symbolic channel dim (" + d[1].str() + ")");
  if (!c.has_attr("size"))
    throw Invalid("LRN needs the attribute size");
  const std::int64_t size = c.attr_i("size", 1);
  if (size < 1)
    throw Invalid("LRN size must be >= 1, got " + std::to_string(size));
  const double alpha = c.attr_f("alpha", 1e-4), beta = c.attr_f("beta", 0.75);
  const double bias = c.attr_f("bias", 1.0);
  const std::int64_t channels = d[1].size(), lo = (size - 1) / 2, hi = size - 1 - lo;
  NodeId sq = pad_axis(c, b.mul(x, x), 1, lo, hi, 0.0);
  NodeId sum = b.narrow(sq, 1, 0, channels);
  for (std::int64_t i = 1; i < size; ++i)
    sum = b.add(sum, b.narrow(sq, 1, i, channels));
  NodeId den = b.add(sc(c, bias, x), b.mul(sc(c, alpha / static_cast<double>(size), x), sum));
  c.set(0, b.div(x, b.pow(den, sc(c, beta, x))));
}

/// MeanVarianceNormalization (ONNX's function body): (x - mean) / (sqrt(mean(x^2) - mean^2) +
/// 1e-9) over `axes` (default [0, 2, 3]).
void mean_variance_norm(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  const auto r = c.g().shape(x).rank();
  std::vector<std::int64_t> axes = c.attr_ints("axes").value_or(std::vector<std::int64_t>{0, 2, 3});
  for (auto& a : axes)
    a = norm_axis(a, r, "axes");
  NodeId mean = b.mean(x, axes, true);
  NodeId var = b.sub(b.mean(b.mul(x, x), axes, true), b.mul(mean, mean));
  c.set(0, b.div(b.sub(x, mean), b.add(b.sqrt(var), sc(c, 1e-9, x))));
}

#define RLX_REDUCE(Name)                                                                           \
  {                                                                                                \
#Name, [](NodeCtx & c) { reduce(c, #Name); }                                                   \
  }
constexpr auto kOps = std::to_array<ConverterEntry>({
    {"MatMul", matmul},
    {"Gemm", gemm},
    {"Einsum", einsum},
    {"Softmax", [](NodeCtx& c) { softmax(c, false); }},
    {"LogSoftmax", [](NodeCtx& c) { softmax(c, true); }},
    {"LayerNormalization", layer_norm},
    RLX_REDUCE(ReduceSum),
    RLX_REDUCE(ReduceMean),
    RLX_REDUCE(ReduceMax),
    RLX_REDUCE(ReduceMin),
    RLX_REDUCE(ReduceProd),
    RLX_REDUCE(ReduceL1),
    RLX_REDUCE(ReduceL2),
    RLX_REDUCE(ReduceSumSquare),
    RLX_REDUCE(ReduceLogSum),
    RLX_REDUCE(ReduceLogSumExp),
    {"ArgMax", [](NodeCtx& c) { argmax(c, false); }},
    {"ArgMin", [](NodeCtx& c) { argmax(c, true); }},
    {"TopK", topk},
    {"LRN", lrn},
    {"MeanVarianceNormalization", mean_variance_norm},
    {"Conv", conv},
    {"ConvTranspose", conv_transpose},
    {"MaxPool", [](NodeCtx& c) { pool(c, true); }},
    {"AveragePool", [](NodeCtx& c) { pool(c, false); }},
    {"GlobalAveragePool", [](NodeCtx& c) { global_pool(c, ReduceOp::mean); }},
    {"GlobalMaxPool", [](NodeCtx& c) { global_pool(c, ReduceOp::max); }},
    {"BatchNormalization", batch_norm},
    {"InstanceNormalization", instance_norm},
});
#undef RLX_REDUCE

} // namespace

std::span<const ConverterEntry> nn_converters() {
  return kOps;
}

} // namespace rlx::onnx::detail
