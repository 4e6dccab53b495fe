// ops_indexing.cpp: ONNX ops built from index arithmetic on static shapes: GatherElements, Trilu,
// CumSum, Hardmax, DepthToSpace / SpaceToDepth, and the NegativeLogLikelihoodLoss /
// SoftmaxCrossEntropyLoss pair (one-hot picks, so every result is exact).
#include "importer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace rlx::onnx::detail {

namespace {

using ir::CmpOp;
using ir::Dim;
using ir::DType;
using ir::NodeId;

std::vector<std::int64_t> static_sizes(NodeCtx& c, NodeId x, const char* what) {
  const ir::Shape& s = c.g().shape(x);
  if (!s.is_static())
    throw Unsupported(std::string(what) + " of a tensor with symbolic dims " + s.str() +
                      "; bind them");
  return s.sizes();
}

/// A constant of \p sizes whose element is its coordinate along \p axis (dtype \p t).
NodeId coords(NodeCtx& c, const std::vector<std::int64_t>& sizes, std::size_t axis, DType t) {
  check_built_size(
      std::accumulate(sizes.begin(), sizes.end(), std::int64_t{1}, std::multiplies<>()),
      "a coordinate table");
  ir::Tensor v(ir::Shape::of(sizes, t));
  auto strides = ir::contiguous_strides(sizes);
  for (std::int64_t i = 0; i < v.numel(); ++i)
    v.set_i64(i, (i / strides[axis]) % sizes[axis]);
  return c.constant(v);
}

/// Sizes of rank \p rank that are 1 everywhere but \p n at \p axis.
std::vector<std::int64_t> along(std::size_t rank, std::size_t axis, std::int64_t n) {
  std::vector<std::int64_t> s(rank, 1);
  s[axis] = n;
  return s;
}

void gather_elements(NodeCtx& c) {
  auto& b = c.b();
  NodeId data = c.in(0), idx = c.in(1);
  auto ds = static_sizes(c, data, "GatherElements");
  auto is = static_sizes(c, idx, "GatherElements");
  if (ds.size() != is.size())
    throw Invalid("data and indices ranks differ");
  auto axis = static_cast<std::size_t>(norm_axis(c.attr_i("axis", 0), ds.size(), "axis"));
  auto strides = ir::contiguous_strides(ds);
  // Linear index = index * stride[axis] + sum of the other coordinates * their strides.
  check_built_size(std::accumulate(is.begin(), is.end(), std::int64_t{1}, std::multiplies<>()),
                   "the GatherElements offsets");
  ir::Tensor offset(ir::Shape::of(is, DType::i64));
  auto istr = ir::contiguous_strides(is);
  for (std::int64_t i = 0; i < offset.numel(); ++i) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < is.size(); ++d)
      if (d != axis)
        off += ((i / istr[d]) % is[d]) * strides[d];
    offset.set_i64(i, off);
  }
  if (!ir::is_int(c.g().shape(idx).dtype))
    throw Invalid("indices must be integers");
  idx = b.cast(idx, DType::i64);
  NodeId z = c.scalar(0, DType::i64);
  NodeId dim = c.scalar(static_cast<double>(ds[axis]), DType::i64);
  idx = b.where(b.compare(CmpOp::lt, idx, z), b.add(idx, dim), idx);
  NodeId flat = b.add(b.mul(idx, c.scalar(static_cast<double>(strides[axis]), DType::i64)),
                      c.constant(offset));
  std::int64_t n = std::accumulate(ds.begin(), ds.end(), std::int64_t{1}, std::multiplies<>());
  c.set(0, b.gather(reshape_to(c, data, {Dim(n)}), flat, 0));
}

void trilu(NodeCtx& c) {
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, "Trilu");
  if (s.size() < 2)
    throw Invalid("Trilu needs rank >= 2");
  std::int64_t k = 0;
  if (c.has(1)) {
    auto v = c.need_ints(1, "k");
    if (v.size() != 1)
      throw Invalid("k must hold one value");
    k = v[0];
  }
  bool upper = c.attr_i("upper", 1) != 0;
  std::int64_t n = s[s.size() - 2], m = s.back();
  check_built_size(n * m, "the Trilu mask");
  ir::Tensor mask(ir::Shape::of({n, m}, DType::boolean));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j)
      mask.set_i64(i * m + j, upper ? (j - i >= k) : (j - i <= k));
  c.set(0, c.b().where(c.constant(mask), x, c.scalar(0, c.g().shape(x).dtype)));
}

/// Moves \p axis to the last position; \returns the permutation.
std::vector<std::int64_t> to_last(std::size_t rank, std::size_t axis) {
  std::vector<std::int64_t> p;
  for (std::size_t i = 0; i < rank; ++i)
    if (i != axis)
      p.push_back(static_cast<std::int64_t>(i));
  p.push_back(static_cast<std::int64_t>(axis));
  return p;
}

std::vector<std::int64_t> inverse(const std::vector<std::int64_t>& p) {
  std::vector<std::int64_t> inv(p.size());
  for (std::size_t i = 0; i < p.size(); ++i)
    inv[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
  return inv;
}

void cumsum(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, "CumSum");
  auto av = c.need_ints(1, "axis");
  if (av.size() != 1)
    throw Invalid("axis must hold one value");
  if (s.empty())
    throw Invalid("CumSum needs rank >= 1");
  auto axis = static_cast<std::size_t>(norm_axis(av[0], s.size(), "axis"));
  bool exclusive = c.attr_i("exclusive", 0) != 0, reverse = c.attr_i("reverse", 0) != 0;
  DType t = c.g().shape(x).dtype;
  std::int64_t n = s[axis];
  // out[.., i] = sum_j x[.., j] * T[j][i], T selecting the summed positions.
  check_built_size(n * n, "the CumSum matrix");
  ir::Tensor tri(ir::Shape::of({n, n}, t));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      tri.set_i64(j * n + i, in ? 1 : 0);
    }
  auto perm = to_last(s.size(), axis);
  NodeId xt = b.transpose(x, perm);
  auto td = c.g().shape(xt).dims;
  bool vec = td.size() == 1;
  if (vec)
    xt = reshape_to(c, xt, {Dim(1), td[0]});
  NodeId y = b.matmul(xt, c.constant(tri));
  if (vec)
    y = reshape_to(c, y, td);
  c.set(0, b.transpose(y, inverse(perm)));
}

void hardmax(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, "Hardmax");
  std::vector<std::int64_t> orig = s;
  std::size_t axis;
  if (c.opset() >= 13) {
    axis = static_cast<std::size_t>(norm_axis(c.attr_i("axis", -1), s.size(), "axis"));
  } else { // coerced to 2-D [prod(:axis), prod(axis:)]
    std::int64_t a = c.attr_i("axis", 1);
    if (a < 0)
      a += static_cast<std::int64_t>(s.size());
    if (a < 0 || a > static_cast<std::int64_t>(s.size()))
      throw Invalid("axis out of range");
    auto mid = s.begin() + a;
    std::int64_t p = std::accumulate(s.begin(), mid, std::int64_t{1}, std::multiplies<>());
    std::int64_t q = std::accumulate(mid, s.end(), std::int64_t{1}, std::multiplies<>());
    s = {p, q};
    x = reshape_to(c, x, {Dim(p), Dim(q)});
    axis = 1;
  }
  NodeId am = b.argmax(x, static_cast<std::int64_t>(axis), true);
  NodeId hit =
      b.compare(CmpOp::eq, am, coords(c, along(s.size(), axis, s[axis]), axis, DType::i64));
  NodeId y = b.cast(hit, c.g().shape(x).dtype);
  std::vector<Dim> od(orig.begin(), orig.end());
  c.set(0, reshape_to(c, y, od));
}

void depth_space(NodeCtx& c, bool to_space) {
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, to_space ? "DepthToSpace" : "SpaceToDepth");
  if (s.size() != 4)
    throw Invalid("the input must be 4-D NCHW");
  std::int64_t bs = c.attr_i("blocksize", 0);
  if (bs < 1)
    throw Invalid("blocksize must be >= 1");
  std::int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  std::vector<Dim> r, out;
  std::vector<std::int64_t> perm;
  if (to_space) {
    std::string mode = c.attr_s("mode", "DCR");
    if (ch % (bs * bs) != 0)
      throw Invalid("channels not divisible by blocksize^2");
    std::int64_t co = ch / (bs * bs);
    if (mode == "DCR") {
      r = {n, bs, bs, co, h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      r = {n, co, bs, bs, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      throw Invalid("mode '" + mode + "'");
    }
    out = {n, co, h * bs, w * bs};
  } else {
    if (h % bs != 0 || w % bs != 0)
      throw Invalid("spatial dims not divisible by blocksize");
    r = {n, ch, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, ch * bs * bs, h / bs, w / bs};
  }
  c.set(0, reshape_to(c, c.b().transpose(reshape_to(c, x, r), perm), out));
}

/// NegativeLogLikelihoodLoss on log-probabilities \p lp [N, C, d...] and integer targets.
NodeId nll(NodeCtx& c, NodeId lp, NodeId target, std::optional<NodeId> weight) {
  auto& b = c.b();
  auto s = static_sizes(c, lp, "NegativeLogLikelihoodLoss");
  if (s.size() < 2)
    throw Invalid("the input must be [N, C, ...]");
  DType t = c.g().shape(lp).dtype, tt = c.g().shape(target).dtype;
  if (!ir::is_int(tt))
    throw Invalid("the target must be integers");
  std::string reduction = c.attr_s("reduction", "mean");
  std::optional<std::int64_t> ignore;
  if (c.has_attr("ignore_index"))
    ignore = c.attr_i("ignore_index", 0);
  c.ignore("ignore_index");
  // Pick lp[n, target, d] with a one-hot over C (exact: one term, the rest are zeros).
  std::vector<Dim> td = c.g().shape(target).dims, uq = td;
  uq.insert(uq.begin() + 1, Dim(1));
  NodeId t1 = reshape_to(c, target, uq);
  NodeId hot = b.compare(CmpOp::eq, t1, coords(c, along(s.size(), 1, s[1]), 1, tt));
  NodeId picked = b.sum(b.where(hot, lp, c.scalar(0, t)), {1});
  NodeId keep;
  if (ignore)
    keep = b.compare(CmpOp::ne, target, c.scalar(static_cast<double>(*ignore), tt));
  NodeId w;
  if (weight) {
    NodeId safe = ignore ? b.where(keep, target, c.scalar(0, tt)) : target;
    w = b.gather(*weight, safe, 0);
    if (ignore)
      w = b.where(keep, w, c.scalar(0, t));
  } else if (ignore) {
    w = b.cast(keep, t);
  }
  NodeId loss = b.neg(picked);
  if (w.valid())
    loss = b.mul(loss, w);
  if (reduction == "none")
    return loss;
  NodeId total = b.sum(loss, {});
  if (reduction == "sum")
    return total;
  if (reduction != "mean")
    throw Invalid("reduction '" + reduction + "'");
  if (w.valid())
    return b.div(total, b.sum(w, {}));
  std::int64_t count = 1;
  for (const auto& d : td)
    count *= d.size();
  return b.div(total, c.scalar(static_cast<double>(count), t));
}

void one_hot(NodeCtx& c) {
  auto& b = c.b();
  NodeId idx = c.in(0);
  auto depth_v = c.need_value(1, "depth");
  if (depth_v.numel() != 1)
    throw Invalid("depth must hold one value");
  auto depth = static_cast<std::int64_t>(depth_v.get_f64(0));
  if (depth < 1 || depth > kMaxElements)
    throw Invalid("depth " + std::to_string(depth));
  NodeId vals = c.in(2);
  if (c.g().shape(vals).dims != std::vector<Dim>{Dim(2)})
    throw Invalid("values must be [off, on]");
  NodeId off = reshape_to(c, b.narrow(vals, 0, 0, 1), {});
  NodeId on = reshape_to(c, b.narrow(vals, 0, 1, 1), {});
  auto d = c.g().shape(idx).dims;
  auto axis = static_cast<std::size_t>(norm_axis(c.attr_i("axis", -1), d.size() + 1, "axis"));
  if (!ir::is_int(c.g().shape(idx).dtype) && !ir::is_float(c.g().shape(idx).dtype))
    throw Invalid("indices must be numeric");
  idx = b.cast(idx, DType::i64); // ONNX casts (float) indices to integers
  NodeId dep = c.scalar(static_cast<double>(depth), DType::i64);
  idx = b.where(b.compare(CmpOp::lt, idx, c.scalar(0, DType::i64)), b.add(idx, dep), idx);
  std::vector<Dim> u = d;
  u.insert(u.begin() + static_cast<std::ptrdiff_t>(axis), Dim(1));
  NodeId hot = b.compare(CmpOp::eq, reshape_to(c, idx, u),
                         coords(c, along(u.size(), axis, depth), axis, DType::i64));
  c.set(0, b.where(hot, on, off));
}

void eye_like(NodeCtx& c) {
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, "EyeLike");
  if (s.size() != 2)
    throw Invalid("EyeLike needs a 2-D input");
  DType t = c.g().shape(x).dtype;
  if (c.has_attr("dtype"))
    t = require_dtype(static_cast<int>(c.attr_i("dtype", 1)), "the EyeLike dtype");
  std::int64_t k = c.attr_i("k", 0);
  check_built_size(s[0] * s[1], "EyeLike");
  ir::Tensor v(ir::Shape::of(s, t));
  for (std::int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1])
      v.set_f64(i * s[1] + i + k, 1.0);
  c.set(0, c.constant(v));
}

void compress(NodeCtx& c) {
  NodeId x = c.in(0);
  ir::Tensor cond = c.need_value(1, "condition");
  std::int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = norm_axis(c.attr_i("axis", 0), c.g().shape(x).rank(), "axis");
  } else {
    auto s = static_sizes(c, x, "Compress");
    std::int64_t n = std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
    x = reshape_to(c, x, {Dim(n)});
  }
  const Dim d = c.g().shape(x).dims[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> keep;
  for (std::int64_t i = 0; i < cond.numel(); ++i)
    if (cond.get_i64(i) != 0)
      keep.push_back(i);
  if (d.is_static() && !keep.empty() && keep.back() >= d.size())
    throw Invalid("condition selects beyond the dim");
  if (keep.empty())
    throw Unsupported("a Compress that selects nothing (empty result)");
  auto n = static_cast<std::int64_t>(keep.size());
  c.set(0, c.b().gather(x, c.constant(ir::Tensor::from<std::int64_t>({n}, keep)), axis));
}

/// Resize / Upsample: per resized axis, nearest picks a gather; linear and cubic multiply by the
/// [in, out] interpolation matrix of ONNX's formulas (edge-clamped neighbours), all built from the
/// static sizes at import time.
void resize(NodeCtx& c, bool upsample) {
  auto& b = c.b();
  NodeId x = c.in(0);
  auto s = static_sizes(c, x, upsample ? "Upsample" : "Resize");
  std::size_t r = s.size();
  std::string mode = c.attr_s("mode", "nearest");
  std::string ctm = "asymmetric", nearest = "floor";
  double a = -0.75;
  bool exclude = false;
  std::vector<double> scales;
  std::vector<std::int64_t> sizes;
  auto read_scales = [&](std::size_t slot) {
    ir::Tensor t = c.need_value(slot, "scales");
    for (std::int64_t i = 0; i < t.numel(); ++i)
      scales.push_back(t.get_f64(i));
  };
  if (upsample || c.opset() < 11) {
    if (c.opset() < 9 && upsample) {
      auto f = c.attr_floats("scales");
      if (!f)
        throw Invalid("scales missing");
      scales.assign(f->begin(), f->end());
    } else {
      read_scales(1);
    }
  } else {
    ctm = c.attr_s("coordinate_transformation_mode", "half_pixel");
    nearest = c.attr_s("nearest_mode", "round_prefer_floor");
    a = c.attr_f("cubic_coeff_a", -0.75);
    exclude = c.attr_i("exclude_outside", 0) != 0;
    c.ignore("extrapolation_value"); // only used by tf_crop_and_resize, refused below
    if (c.has(3)) {
      sizes = c.need_ints(3, "sizes");
    } else if (c.has(2)) {
      read_scales(2);
    }
  }
  if (mode == "bilinear" || mode == "trilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw Invalid("mode '" + mode + "'");
  if (ctm == "tf_crop_and_resize")
    throw Unsupported("coordinate_transformation_mode tf_crop_and_resize");
  if (scales.empty() && sizes.empty())
    throw Invalid("neither scales nor sizes given");
  if ((!scales.empty() && scales.size() != r) || (!sizes.empty() && sizes.size() != r))
    throw Invalid("scales / sizes do not match the rank");
  for (std::size_t ax = 0; ax < r; ++ax) {
    std::int64_t in = s[ax];
    std::int64_t out =
        sizes.empty() ? static_cast<std::int64_t>(std::floor(in * scales[ax])) : sizes[ax];
    double scale = sizes.empty() ? scales[ax] : static_cast<double>(out) / static_cast<double>(in);
    if (out < 1 || out > kMaxElements || !(scale > 0))
      throw Invalid("output size " + std::to_string(out) + " on axis " + std::to_string(ax));
    if (out == in && scale == 1.0)
      continue;
    auto original = [&](std::int64_t i) {
      double xi = static_cast<double>(i);
      if (ctm == "half_pixel")
        return (xi + 0.5) / scale - 0.5;
      // ONNX measures the resized length as in * scale, before flooring.
      double len = static_cast<double>(in) * scale;
      if (ctm == "pytorch_half_pixel")
        return len > 1 ? (xi + 0.5) / scale - 0.5 : 0.0;
      if (ctm == "align_corners")
        return len == 1 ? 0.0 : xi * static_cast<double>(in - 1) / (len - 1);
      if (ctm == "asymmetric")
        return xi / scale;
      if (ctm == "tf_half_pixel_for_nn")
        return (xi + 0.5) / scale;
      throw Invalid("coordinate_transformation_mode '" + ctm + "'");
    };
    auto clamp = [&](std::int64_t i) { return std::clamp<std::int64_t>(i, 0, in - 1); };
    auto axis = static_cast<std::int64_t>(ax);
    if (mode == "nearest") {
      check_built_size(out, "the Resize index map");
      std::vector<std::int64_t> idx;
      for (std::int64_t i = 0; i < out; ++i) {
        double xo = original(i), f = std::floor(xo);
        std::int64_t k;
        if (nearest == "floor")
          k = static_cast<std::int64_t>(f);
        else if (nearest == "ceil")
          k = static_cast<std::int64_t>(std::ceil(xo));
        else if (nearest == "round_prefer_floor")
          k = static_cast<std::int64_t>(xo - f == 0.5 ? f : std::round(xo));
        else if (nearest == "round_prefer_ceil")
          k = static_cast<std::int64_t>(xo - f == 0.5 ? f + 1 : std::round(xo));
        else
          throw Invalid("nearest_mode '" + nearest + "'");
        idx.push_back(clamp(k));
      }
      x = b.gather(x, c.constant(ir::Tensor::from<std::int64_t>({out}, idx)), axis);
      continue;
    }
    DType t = c.g().shape(x).dtype;
    if (!ir::is_float(t))
      throw Unsupported(mode + " Resize of " + std::string(ir::dtype_name(t)));
    if (in > kMaxBuiltElements / out)
      check_built_size(kMaxBuiltElements + 1, "the Resize interpolation matrix");
    ir::Tensor m(ir::Shape::of({in, out}, t));
    std::vector<double> acc(static_cast<std::size_t>(in * out), 0.0);
    for (std::int64_t i = 0; i < out; ++i) {
      double xo = original(i);
      double base = std::floor(xo);
      if (xo == base)
        base -= 1; // ratio in (0, 1]: the pixel on the left is preferred
      double ratio = xo - base;
      std::vector<std::pair<std::int64_t, double>> taps;
      auto b0 = static_cast<std::int64_t>(base);
      if (mode == "linear") {
        taps = {{b0, 1 - ratio}, {b0 + 1, ratio}};
      } else {
        double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
        taps = {{b0 - 1, ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a},
                {b0, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1},
                {b0 + 1, ((a + 2) * q - (a + 3)) * q * q + 1},
                {b0 + 2, ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a}};
      }
      double total = 0;
      for (auto& [k, w] : taps) {
        if (exclude && (k < 0 || k >= in))
          w = 0;
        total += w;
      }
      for (auto& [k, w] : taps)
        acc[static_cast<std::size_t>(clamp(k) * out + i)] += exclude && total != 0 ? w / total : w;
    }
    for (std::size_t k = 0; k < acc.size(); ++k)
      m.set_f64(static_cast<std::int64_t>(k), acc[k]);
    auto perm = to_last(r, ax);
    NodeId y = b.matmul(
        reshape_to(
            c, b.transpose(x, perm),
            {Dim(std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>()) / in),
             Dim(in)}),
        c.constant(m));
    std::vector<Dim> td;
    for (auto p : perm)
      td.push_back(Dim(p == axis ? out : s[static_cast<std::size_t>(p)]));
    x = b.transpose(reshape_to(c, y, td), inverse(perm));
    s[ax] = out;
  }
  c.set(0, x);
}

/// Flat source positions of ScatterElements / ScatterND with indices known at import time:
/// \returns, per element of data, the flat update index written there (-1: kept).
std::vector<std::int64_t> scatter_map(NodeCtx& c, const std::vector<std::int64_t>& ds,
                                      const ir::Tensor& idx, const std::vector<std::int64_t>& us,
                                      std::optional<std::size_t> axis) {
  auto dstr = ir::contiguous_strides(ds);
  std::int64_t n = std::accumulate(ds.begin(), ds.end(), std::int64_t{1}, std::multiplies<>());
  check_built_size(n, "the scatter map");
  std::vector<std::int64_t> src(static_cast<std::size_t>(n), -1);
  auto wrap = [&](std::int64_t v, std::int64_t dim) {
    if (v < -dim || v >= dim)
      throw Invalid("index " + std::to_string(v) + " out of range for dim " + std::to_string(dim));
    return v < 0 ? v + dim : v;
  };
  std::int64_t un = std::accumulate(us.begin(), us.end(), std::int64_t{1}, std::multiplies<>());
  auto ustr = ir::contiguous_strides(us);
  if (axis) { // ScatterElements: updates and indices share a shape
    for (std::int64_t u = 0; u < un; ++u) {
      std::int64_t off = 0;
      for (std::size_t d = 0; d < ds.size(); ++d) {
        std::int64_t coord = (u / ustr[d]) % us[d];
        if (d == *axis)
          coord = wrap(idx.get_i64(u), ds[d]);
        off += coord * dstr[d];
      }
      src[static_cast<std::size_t>(off)] = u;
    }
  } else { // ScatterND: indices [..., k] address the first k dims; updates [..., ds[k:]]
    auto is = idx.shape().sizes();
    std::size_t k = static_cast<std::size_t>(is.back());
    std::int64_t tuples = idx.numel() / static_cast<std::int64_t>(std::max<std::size_t>(k, 1));
    std::int64_t block = 1;
    for (std::size_t d = k; d < ds.size(); ++d)
      block *= ds[d];
    if (k > ds.size() || tuples * block != un)
      throw Invalid("indices / updates do not fit the data");
    for (std::int64_t t = 0; t < tuples; ++t) {
      std::int64_t off = 0;
      for (std::size_t d = 0; d < k; ++d)
        off += wrap(idx.get_i64(t * static_cast<std::int64_t>(k) + static_cast<std::int64_t>(d)),
                    ds[d]) *
               dstr[d];
      for (std::int64_t e = 0; e < block; ++e)
        src[static_cast<std::size_t>(off + e)] = t * block + e;
    }
  }
  (void)c;
  return src;
}

/// ScatterElements / ScatterND (reduction none) with indices known at import time:
/// where(written, gather(updates), data).
void scatter(NodeCtx& c, bool nd) {
  auto& b = c.b();
  NodeId data = c.in(0), upd = c.in(2);
  auto ds = static_sizes(c, data, "Scatter");
  auto us = static_sizes(c, upd, "Scatter");
  ir::Tensor idx = c.need_value(1, "indices");
  std::string red = c.attr_s("reduction", "none");
  if (red != "none")
    throw Unsupported("reduction '" + red + "'");
  std::optional<std::size_t> axis;
  if (!nd)
    axis = static_cast<std::size_t>(norm_axis(c.attr_i("axis", 0), ds.size(), "axis"));
  if (!nd && idx.shape().sizes() != us)
    throw Invalid("indices and updates shapes differ");
  auto src = scatter_map(c, ds, idx, us, axis);
  std::int64_t n = static_cast<std::int64_t>(src.size());
  ir::Tensor mask(ir::Shape::of(ds, DType::boolean)), from(ir::Shape::of(ds, DType::i64));
  for (std::int64_t i = 0; i < n; ++i) {
    mask.set_i64(i, src[static_cast<std::size_t>(i)] >= 0);
    from.set_i64(i, std::max<std::int64_t>(src[static_cast<std::size_t>(i)], 0));
  }
  std::int64_t un = std::accumulate(us.begin(), us.end(), std::int64_t{1}, std::multiplies<>());
  NodeId picked = b.gather(reshape_to(c, upd, {Dim(un)}), c.constant(from), 0);
  c.set(0, b.where(c.constant(mask), picked, data));
}

/// GatherND (batch_dims 0) with indices known at import time: a gather of flat positions.
void gather_nd(NodeCtx& c) {
  NodeId data = c.in(0);
  auto ds = static_sizes(c, data, "GatherND");
  if (c.attr_i("batch_dims", 0) != 0)
    throw Unsupported("batch_dims != 0");
  ir::Tensor idx = c.need_value(1, "indices");
  auto is = idx.shape().sizes();
  if (is.empty())
    throw Invalid("indices must have rank >= 1");
  auto k = static_cast<std::size_t>(is.back());
  if (k > ds.size() || k == 0)
    throw Invalid("index tuples longer than the data rank");
  auto dstr = ir::contiguous_strides(ds);
  std::int64_t tuples = idx.numel() / static_cast<std::int64_t>(k);
  std::vector<std::int64_t> flat;
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < k; ++d) {
      std::int64_t v = idx.get_i64(t * static_cast<std::int64_t>(k) + static_cast<std::int64_t>(d));
      if (v < -ds[d] || v >= ds[d])
        throw Invalid("index out of range");
      off += (v < 0 ? v + ds[d] : v) * dstr[d];
    }
    flat.push_back(off / (k < ds.size() ? dstr[k - 1] : 1));
  }
  // Rows of the trailing block: reshape data to [prod(ds[:k]), ds[k:]...] and gather rows.
  std::int64_t rows = 1;
  std::vector<Dim> shaped{Dim(0)};
  for (std::size_t d = 0; d < k; ++d)
    rows *= ds[d];
  shaped[0] = Dim(rows);
  for (std::size_t d = k; d < ds.size(); ++d)
    shaped.emplace_back(ds[d]);
  std::vector<std::int64_t> ishape(is.begin(), is.end() - 1);
  NodeId out = c.b().gather(reshape_to(c, data, shaped),
                            c.constant(ir::Tensor::from<std::int64_t>(ishape, flat)), 0);
  c.set(0, out);
}

constexpr auto kOps = std::to_array<ConverterEntry>({
    {"GatherElements", gather_elements},
    {"ScatterElements", [](NodeCtx& c) { scatter(c, false); }},
    {"ScatterND", [](NodeCtx& c) { scatter(c, true); }},
    {"Scatter", [](NodeCtx& c) { scatter(c, false); }}, // opset 9-10 name of ScatterElements
    {"GatherND", gather_nd},
    {"Resize", [](NodeCtx& c) { resize(c, false); }},
    {"Upsample", [](NodeCtx& c) { resize(c, true); }},
    {"OneHot", one_hot},
    {"EyeLike", eye_like},
    {"Compress", compress},
    {"Trilu", trilu},
    {"CumSum", cumsum},
    {"Hardmax", hardmax},
    {"DepthToSpace", [](NodeCtx& c) { depth_space(c, true); }},
    {"SpaceToDepth", [](NodeCtx& c) { depth_space(c, false); }},
    {"NegativeLogLikelihoodLoss",
     [](NodeCtx& c) {
       c.set(0, nll(c, c.in(0), c.in(1), c.has(2) ? std::optional<NodeId>(c.in(2)) : std::nullopt));
     }},
    {"SoftmaxCrossEntropyLoss",
     [](NodeCtx& c) {
       NodeId lp = c.b().log_softmax(c.in(0), 1);
       c.set(0, nll(c, lp, c.in(1), c.has(2) ? std::optional<NodeId>(c.in(2)) : std::nullopt));
       c.set(1, lp);
     }},
});

} // namespace

std::span<const ConverterEntry> indexing_converters() {
  return kOps;
}

} // namespace rlx::onnx::detail
