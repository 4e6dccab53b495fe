// ops_movement.cpp: ONNX shape and data movement, constants and Shape-driven ops -> rlx ops.
// Operands that decide a shape (Reshape's shape, Slice's starts, ...) must be known at import
// time; Shape / Size of static dims are constants, so the usual export spellings fold.
#include "importer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

namespace rlx::onnx::detail {

namespace {

using ir::CmpOp;
using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

std::vector<Dim> dims_of(NodeCtx& c, NodeId x) {
  return c.g().shape(x).dims;
}

/// A constant with \p x's dims but 0 along \p axis (rlx ops do not take empty extents).
NodeId empty_like(NodeCtx& c, NodeId x, std::size_t axis) {
  ir::Shape s = c.g().shape(x);
  s.dims[axis] = Dim(0);
  if (!s.is_static())
    throw Unsupported("an empty slice of a tensor with symbolic dims");
  return c.constant(ir::Tensor(s));
}

/// The axes operand of Squeeze / Unsqueeze / Reduce*: an attribute before \p input_opset, an
/// optional input from it on.
std::optional<std::vector<std::int64_t>> axes_operand(NodeCtx& c, std::int64_t input_opset,
                                                      std::size_t slot) {
  if (c.opset() < input_opset)
    return c.attr_ints("axes");
  if (c.has(slot))
    return c.need_ints(slot, "axes");
  return std::nullopt;
}

void reshape(NodeCtx& c) {
  NodeId x = c.in(0);
  std::vector<std::int64_t> spec;
  if (c.opset() < 5) {
    c.ignore("consumed_inputs");
    auto s = c.attr_ints("shape");
    if (!s)
      throw Invalid("attribute 'shape' is missing");
    spec = *s;
  } else {
    spec = c.need_ints(1, "the target shape");
  }
  bool allowzero = c.attr_i("allowzero", 0) != 0;
  auto in = dims_of(c, x);
  std::vector<Dim> out;
  int infer_at = -1;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    std::int64_t v = spec[i];
    if (v == 0 && !allowzero) {
      if (i >= in.size())
        throw Invalid("shape entry 0 at axis " + std::to_string(i) + " beyond the input rank");
      out.push_back(in[i]);
    } else if (v == -1) {
      if (infer_at >= 0)
        throw Invalid("more than one -1 in the target shape");
      infer_at = static_cast<int>(i);
      out.emplace_back(1);
    } else if (v < -1 || v > kMaxElements) {
      throw Invalid("target dim " + std::to_string(v));
    } else {
      out.emplace_back(v);
    }
  }
  if (infer_at >= 0) {
    std::int64_t pin = 1, pout = 1;
    std::multiset<std::string> sin, sout;
    for (const auto& d : in)
      d.is_symbolic() ? (void)sin.insert(d.symbol()) : (void)(pin *= d.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer_at)
        out[i].is_symbolic() ? (void)sout.insert(out[i].symbol()) : (void)(pout *= out[i].size());
    if (sin == sout) {
      if (pout == 0 || pin % pout != 0)
        throw Invalid("cannot infer -1: " + std::to_string(pin) + " elements into blocks of " +
                      std::to_string(pout));
      out[static_cast<std::size_t>(infer_at)] = Dim(pin / pout);
    } else {
      std::vector<std::string> extra;
      std::set_difference(sin.begin(), sin.end(), sout.begin(), sout.end(),
                          std::back_inserter(extra));
      if (extra.size() == 1 && pin == pout && sout.size() + 1 == sin.size())
        out[static_cast<std::size_t>(infer_at)] = Dim::sym(extra[0]);
      else
        throw Unsupported("cannot infer the -1 of a reshape across symbolic dims; bind them");
    }
  }
  c.set(0, reshape_to(c, x, std::move(out)));
}

void squeeze(NodeCtx& c) {
  NodeId x = c.in(0);
  auto in = dims_of(c, x);
  auto axes = axes_operand(c, 13, 1);
  std::vector<char> drop(in.size(), 0);
  if (axes) {
    for (auto a : *axes) {
      auto n = static_cast<std::size_t>(norm_axis(a, in.size(), "axis"));
      if (!(in[n].is_static() && in[n].size() == 1))
        throw Invalid("cannot squeeze axis " + std::to_string(a) + " of size " + in[n].str());
      drop[n] = 1;
    }
  } else {
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i].is_symbolic())
        throw Unsupported("squeezing every 1-dim of a shape with symbolic dims; give axes");
      drop[i] = in[i].size() == 1;
    }
  }
  std::vector<Dim> out;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!drop[i])
      out.push_back(in[i]);
  c.set(0, reshape_to(c, x, std::move(out)));
}

void unsqueeze(NodeCtx& c) {
  NodeId x = c.in(0);
  auto in = dims_of(c, x);
  auto axes = axes_operand(c, 13, 1);
  if (!axes)
    throw Invalid("axes are missing");
  std::size_t rank = in.size() + axes->size();
  std::vector<char> one(rank, 0);
  for (auto a : *axes) {
    auto n = static_cast<std::size_t>(norm_axis(a, rank, "axis"));
    if (one[n])
      throw Invalid("axis " + std::to_string(a) + " is listed twice");
    one[n] = 1;
  }
  std::vector<Dim> out;
  std::size_t k = 0;
  for (std::size_t i = 0; i < rank; ++i)
    out.push_back(one[i] ? Dim(1) : in[k++]);
  c.set(0, reshape_to(c, x, std::move(out)));
}

void flatten(NodeCtx& c) {
  NodeId x = c.in(0);
  auto in = dims_of(c, x);
  std::int64_t axis = c.attr_i("axis", 1);
  if (axis < 0)
    axis += static_cast<std::int64_t>(in.size());
  if (axis < 0 || axis > static_cast<std::int64_t>(in.size()))
    throw Invalid("axis out of range");
  auto a = static_cast<std::size_t>(axis);
  c.set(0, reshape_to(c, x, {dims_product(in, 0, a), dims_product(in, a, in.size())}));
}

void concat(NodeCtx& c) {
  std::vector<NodeId> parts;
  for (std::size_t i = 0; i < c.num_inputs(); ++i)
    parts.push_back(c.in(i));
  if (parts.empty())
    throw Invalid("needs at least one input");
  std::size_t rank = c.g().shape(parts[0]).rank();
  std::int64_t axis = norm_axis(c.attr_i("axis", c.opset() < 4 ? 1 : INT64_MIN), rank, "axis");
  // Empty parts take no room; drop them (but keep one so the result has a type).
  std::vector<NodeId> kept;
  for (NodeId p : parts) {
    const Dim& d = c.g().shape(p).dims.at(static_cast<std::size_t>(axis));
    if (!(d.is_static() && d.size() == 0))
      kept.push_back(p);
  }
  if (kept.empty())
    kept.push_back(parts[0]);
  c.set(0, kept.size() == 1 ? kept[0] : c.b().concat(std::move(kept), axis));
}

void split(NodeCtx& c) {
  NodeId x = c.in(0);
  auto in = dims_of(c, x);
  auto axis = static_cast<std::size_t>(norm_axis(c.attr_i("axis", 0), in.size(), "axis"));
  if (!in[axis].is_static())
    throw Unsupported("splitting a symbolic dim (" + in[axis].str() + ")");
  std::int64_t d = in[axis].size();
  std::vector<std::int64_t> sizes;
  if (c.opset() < 13) {
    if (auto s = c.attr_ints("split"))
      sizes = *s;
    else if (c.has(1))
      sizes = c.need_ints(1, "split");
  } else if (c.has(1)) {
    sizes = c.need_ints(1, "split");
  }
  c.ignore("num_outputs");
  std::size_t n = c.num_outputs();
  if (sizes.empty()) {
    auto k = static_cast<std::int64_t>(n);
    std::int64_t chunk = (d + k - 1) / k;
    for (std::size_t i = 0; i < n; ++i)
      sizes.push_back(std::min(chunk, d - chunk * static_cast<std::int64_t>(i)));
  }
  if (sizes.size() != n)
    throw Invalid(std::to_string(sizes.size()) + " split sizes for " + std::to_string(n) +
                  " outputs");
  std::int64_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (sizes[i] < 0 || start + sizes[i] > d)
      throw Invalid("split sizes do not fit dim " + std::to_string(d));
    if (c.output_used(i))
      c.set(i, sizes[i] == 0 ? empty_like(c, x, axis)
                             : c.b().narrow(x, static_cast<std::int64_t>(axis), start, sizes[i]));
    start += sizes[i];
  }
  if (start != d)
    throw Invalid("split sizes sum to " + std::to_string(start) + ", the dim is " +
                  std::to_string(d));
}

/// Elements [start, end) by step along \p axis, ONNX-clamped; narrow for step 1, else a gather.
NodeId slice_axis(NodeCtx& c, NodeId x, std::size_t axis, std::int64_t start, std::int64_t end,
                  std::int64_t step) {
  const Dim dim = c.g().shape(x).dims[axis];
  if (step == 0)
    throw Invalid("a slice step of 0");
  if (dim.is_symbolic()) {
    if (start == 0 && step == 1 && end >= std::numeric_limits<std::int32_t>::max())
      return x;
    throw Unsupported("slicing symbolic dim " + dim.str() + "; bind it");
  }
  std::int64_t d = dim.size();
  if (start < 0)
    start += d;
  if (end < 0)
    end += d;
  std::int64_t len = 0;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, d);
    end = std::clamp<std::int64_t>(end, 0, d);
    len = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<std::int64_t>(start, 0, d - 1);
    end = std::clamp<std::int64_t>(end, -1, d - 1);
    len = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  auto ax = static_cast<std::int64_t>(axis);
  if (len == 0)
    return empty_like(c, x, axis);
  if (step == 1)
    return (start == 0 && len == d) ? x : c.b().narrow(x, ax, start, len);
  check_built_size(len, "the slice index list");
  std::vector<std::int64_t> idx(static_cast<std::size_t>(len));
  for (std::int64_t k = 0; k < len; ++k)
    idx[static_cast<std::size_t>(k)] = start + k * step;
  return c.b().gather(x, c.constant(ir::Tensor::from<std::int64_t>({len}, idx)), ax);
}

void slice(NodeCtx& c) {
  NodeId x = c.in(0);
  std::size_t rank = c.g().shape(x).rank();
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts").value_or(std::vector<std::int64_t>{});
    ends = c.attr_ints("ends").value_or(std::vector<std::int64_t>{});
    axes = c.attr_ints("axes").value_or(std::vector<std::int64_t>{});
  } else {
    starts = c.need_ints(1, "starts");
    ends = c.need_ints(2, "ends");
    if (c.has(3))
      axes = c.need_ints(3, "axes");
    if (c.has(4))
      steps = c.need_ints(4, "steps");
  }
  if (starts.size() != ends.size())
    throw Invalid("starts and ends differ in length");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    throw Invalid("starts, ends, axes and steps differ in length");
  for (std::size_t i = 0; i < starts.size(); ++i)
    x = slice_axis(c, x, static_cast<std::size_t>(norm_axis(axes[i], rank, "axis")), starts[i],
                   ends[i], steps[i]);
  c.set(0, x);
}

void gather(NodeCtx& c) {
  NodeId data = c.in(0), idx = c.in(1);
  const ir::Shape ds = c.g().shape(data); // copies: adding nodes moves the node list
  auto axis = norm_axis(c.attr_i("axis", 0), ds.rank(), "axis");
  const Dim d = ds.dims[static_cast<std::size_t>(axis)];
  if (auto v = c.value_of(idx)) {
    if (!ir::is_int(v->dtype()))
      throw Invalid("indices must be integers");
    bool neg = false;
    for (std::int64_t k = 0; k < v->numel(); ++k)
      neg |= v->get_i64(k) < 0;
    if (neg && d.is_static()) {
      ir::Tensor fixed = v->clone();
      for (std::int64_t k = 0; k < fixed.numel(); ++k)
        if (fixed.get_i64(k) < 0)
          fixed.set_i64(k, fixed.get_i64(k) + d.size());
      idx = c.constant(fixed);
    }
  } else if (d.is_static()) {
    // Negative indices count from the end (ONNX); rlx's Gather rejects them, so wrap first.
    auto& b = c.b();
    DType it = c.g().shape(idx).dtype;
    NodeId z = c.scalar(0, it);
    idx = b.where(b.compare(CmpOp::lt, idx, z),
                  b.add(idx, c.scalar(static_cast<double>(d.size()), it)), idx);
  }
  c.set(0, c.b().gather(data, idx, axis));
}

std::vector<Dim> dims_from(const std::vector<std::int64_t>& v) {
  std::vector<Dim> out;
  std::int64_t prod = 1;
  for (auto x : v) {
    if (x < 0 || x > kMaxElements || (x > 0 && prod > kMaxElements / x))
      throw Invalid("dim " + std::to_string(x) + " (negative, or over 2^40 elements in all)");
    prod *= x;
    out.emplace_back(x);
  }
  return out;
}

void expand(NodeCtx& c) {
  NodeId x = c.in(0);
  auto target = ir::broadcast_dims(dims_of(c, x), dims_from(c.need_ints(1, "the shape")));
  c.set(0, target == dims_of(c, x) ? x : c.b().expand(x, target));
}

void tile(NodeCtx& c) {
  NodeId x = c.in(0);
  auto in = dims_of(c, x);
  auto reps = c.need_ints(1, "repeats");
  if (reps.size() != in.size())
    throw Invalid("repeats has " + std::to_string(reps.size()) + " entries for rank " +
                  std::to_string(in.size()));
  std::vector<Dim> split, big, out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0 || reps[i] > kMaxElements ||
        (in[i].is_static() && in[i].size() > 0 && reps[i] > kMaxElements / in[i].size()))
      throw Invalid("repeat " + std::to_string(reps[i]) + " (negative or too large)");
    if (reps[i] != 1 && in[i].is_symbolic())
      throw Unsupported("tiling symbolic dim " + in[i].str());
    split.emplace_back(1);
    split.push_back(in[i]);
    big.emplace_back(reps[i]);
    big.push_back(in[i]);
    out.push_back(reps[i] == 1 ? in[i] : Dim(reps[i] * in[i].size()));
  }
  NodeId y = c.b().expand(reshape_to(c, x, split), big);
  c.set(0, reshape_to(c, y, out));
}

void shape_op(NodeCtx& c) {
  auto in = dims_of(c, c.in(0));
  auto r = static_cast<std::int64_t>(in.size());
  std::int64_t start = c.attr_i("start", 0), end = c.attr_i("end", r);
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = std::clamp<std::int64_t>(start, 0, r);
  end = std::clamp<std::int64_t>(end, 0, r);
  std::vector<std::int64_t> v;
  for (std::int64_t i = start; i < end; ++i) {
    const Dim& d = in[static_cast<std::size_t>(i)];
    if (d.is_symbolic())
      throw Unsupported("Shape of symbolic dim " + d.str() +
                        " (bind it, e.g. --batch / --seq, so the shape computation folds)");
    v.push_back(d.size());
  }
  auto n = static_cast<std::int64_t>(v.size());
  c.set(0, c.constant(ir::Tensor::from<std::int64_t>({n}, v)));
}

void constant(NodeCtx& c) {
  if (auto* t = c.attr_t("value")) {
    c.set(0, c.constant(tensor_from_proto(*t)));
  } else if (c.has_attr("value_float")) {
    c.set(0, c.constant(ir::Tensor::scalar<float>(static_cast<float>(c.attr_f("value_float", 0)))));
  } else if (auto fs = c.attr_floats("value_floats")) {
    c.set(0, c.constant(ir::Tensor::from<float>({static_cast<std::int64_t>(fs->size())}, *fs)));
  } else if (c.has_attr("value_int")) {
    c.set(0, c.constant(ir::Tensor::scalar<std::int64_t>(c.attr_i("value_int", 0))));
  } else if (auto is = c.attr_ints("value_ints")) {
    c.set(0,
          c.constant(ir::Tensor::from<std::int64_t>({static_cast<std::int64_t>(is->size())}, *is)));
  } else {
    // sparse_value, value_string(s): left unread, so they are reported as unsupported.
    if (!c.has_attr("sparse_value") && !c.has_attr("value_string") && !c.has_attr("value_strings"))
      throw Invalid("no value attribute");
  }
}

void constant_of_shape(NodeCtx& c) {
  auto dims = dims_from(c.need_ints(0, "the shape"));
  ir::Tensor fill = ir::Tensor::scalar<float>(0.0f);
  if (auto* t = c.attr_t("value")) {
    ir::Tensor v = tensor_from_proto(*t);
    if (v.numel() != 1)
      throw Invalid("value must hold one element");
    fill = v.reshaped({});
  }
  NodeId s = c.constant(fill);
  c.set(0, dims.empty() ? s : c.b().expand(s, dims));
}

void range(NodeCtx& c) {
  ir::Tensor s = c.need_value(0, "start"), l = c.need_value(1, "limit"),
             d = c.need_value(2, "delta");
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1)
    throw Invalid("start, limit and delta must be scalars");
  double start = s.get_f64(0), limit = l.get_f64(0), delta = d.get_f64(0);
  if (delta == 0)
    throw Invalid("delta is 0");
  double count = std::ceil((limit - start) / delta);
  if (!(count <= static_cast<double>(kMaxElements)))
    throw Invalid("the range is too long");
  auto n = static_cast<std::int64_t>(std::max(count, 0.0));
  check_built_size(n, "Range");
  ir::Tensor out(ir::Shape::of({n}, s.dtype()));
  for (std::int64_t i = 0; i < n; ++i) {
    if (ir::is_int(s.dtype()))
      out.set_i64(i, s.get_i64(0) + i * d.get_i64(0));
    else
      out.set_f64(i, start + static_cast<double>(i) * delta);
  }
  c.set(0, c.constant(out));
}

void dropout(NodeCtx& c) {
  c.ignore("seed");
  c.ignore("ratio");
  c.ignore("is_test");
  c.ignore("consumed_inputs");
  if (c.has(2)) {
    auto t = c.value(2);
    if (!t)
      throw Unsupported("a training_mode input unknown at import time");
    if (t->get_i64(0) != 0)
      throw Unsupported("training_mode = true (random dropout)");
  }
  NodeId x = c.in(0);
  c.set(0, x);
  if (c.output_used(1))
    c.set(1, c.b().expand(c.scalar(1, DType::boolean), dims_of(c, x)));
}

void cast(NodeCtx& c, DType to) {
  NodeId x = c.in(0);
  c.set(0, c.g().shape(x).dtype == to ? x : c.b().cast(x, to));
}

void pad(NodeCtx& c) {
  NodeId x = c.in(0);
  std::size_t rank = c.g().shape(x).rank();
  std::string mode = c.attr_s("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    throw Unsupported("Pad mode '" + mode + "'");
  std::vector<std::int64_t> pads;
  double value = 0;
  std::vector<std::int64_t> axes;
  if (c.opset() < 11) {
    pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads").value_or(std::vector<std::int64_t>{});
    value = c.attr_f("value", 0.0);
  } else {
    pads = c.need_ints(1, "pads");
    if (c.has(2)) {
      ir::Tensor v = c.need_value(2, "constant_value");
      if (v.numel() != 1)
        throw Invalid("constant_value must hold one element");
      value = v.get_f64(0);
    }
    if (c.has(3))
      axes = c.need_ints(3, "axes");
  }
  if (axes.empty())
    for (std::size_t i = 0; i < rank; ++i)
      axes.push_back(static_cast<std::int64_t>(i));
  if (pads.size() != 2 * axes.size())
    throw Invalid(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) +
                  " axes");
  std::size_t n = axes.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto ax = norm_axis(axes[i], rank, "axis");
    std::int64_t before = pads[i], after = pads[i + n];
    if (before < 0 || after < 0) {
      const Dim d = c.g().shape(x).dims[static_cast<std::size_t>(ax)];
      if (d.is_symbolic())
        throw Unsupported("negative padding of symbolic dim " + d.str());
      std::int64_t s = std::max<std::int64_t>(-before, 0), e = std::max<std::int64_t>(-after, 0);
      if (s + e > d.size())
        throw Invalid("negative pads remove more than the dim");
      x = c.b().narrow(x, ax, s, d.size() - s - e);
      before = std::max<std::int64_t>(before, 0);
      after = std::max<std::int64_t>(after, 0);
    }
    if (mode == "constant") {
      x = pad_axis(c, x, ax, before, after, value);
      continue;
    }
    if (before == 0 && after == 0)
      continue;
    // edge / reflect: a gather of the mirrored or clamped source index of every output cell.
    const Dim d = c.g().shape(x).dims[static_cast<std::size_t>(ax)];
    if (d.is_symbolic())
      throw Unsupported("Pad mode '" + mode + "' of symbolic dim " + d.str());
    std::int64_t size = d.size();
    if (size == 0 || (mode == "reflect" && (size < 2 || before >= size || after >= size)))
      throw Invalid("reflect padding needs pads below the dim size");
    check_built_size(before + size + after, "the Pad index list");
    std::vector<std::int64_t> idx;
    for (std::int64_t k = -before; k < size + after; ++k) {
      std::int64_t j = k;
      if (mode == "edge")
        j = std::clamp<std::int64_t>(k, 0, size - 1);
      else
        j = k < 0 ? -k : (k >= size ? 2 * (size - 1) - k : k);
      idx.push_back(j);
    }
    auto len = static_cast<std::int64_t>(idx.size());
    x = c.b().gather(x, c.constant(ir::Tensor::from<std::int64_t>({len}, idx)), ax);
  }
  c.set(0, x);
}

constexpr auto kOps = std::to_array<ConverterEntry>({
    {"Identity", [](NodeCtx& c) { c.set(0, c.in(0)); }},
    {"Cast",
     [](NodeCtx& c) {
       std::int64_t to = c.attr_i("to", -1);
       cast(c, require_dtype(static_cast<int>(to), "the cast target"));
     }},
    {"CastLike", [](NodeCtx& c) { cast(c, c.shape(1).dtype); }},
    {"Reshape", reshape},
    {"Transpose",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       std::size_t r = c.g().shape(x).rank();
       std::vector<std::int64_t> perm(r);
       for (std::size_t i = 0; i < r; ++i)
         perm[i] = static_cast<std::int64_t>(r - 1 - i);
       if (auto p = c.attr_ints("perm"))
         perm = *p;
       bool id = true;
       for (std::size_t i = 0; i < perm.size(); ++i)
         id &= perm[i] == static_cast<std::int64_t>(i);
       c.set(0, id && perm.size() == r ? x : c.b().transpose(x, perm));
     }},
    {"Squeeze", squeeze},
    {"Unsqueeze", unsqueeze},
    {"Flatten", flatten},
    {"Concat", concat},
    {"Split", split},
    {"Slice", slice},
    {"Gather", gather},
    {"Expand", expand},
    {"Tile", tile},
    {"Shape", shape_op},
    {"Size",
     [](NodeCtx& c) {
       const auto& s = c.shape(0);
       std::int64_t n = 1;
       for (const auto& d : s.dims) {
         if (d.is_symbolic())
           throw Unsupported("Size of symbolic dim " + d.str() + "; bind it");
         n *= d.size();
       }
       c.set(0, c.constant(ir::Tensor::scalar<std::int64_t>(n)));
     }},
    {"Constant", constant},
    {"ConstantOfShape", constant_of_shape},
    {"Range", range},
    {"Dropout", dropout},
    {"Pad", pad},
});

} // namespace

std::span<const ConverterEntry> movement_converters() {
  return kOps;
}

} // namespace rlx::onnx::detail
