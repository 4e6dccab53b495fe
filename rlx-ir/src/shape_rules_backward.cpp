// shape_rules_backward.cpp: the shape rules of the backward ops (ops.def's "backward ops"
// section): the closed-form VJPs of the norms (tuple results), softmax / log-softmax, attention,
// softmax cross-entropy, and conv2d / pool2d (each checked through its forward's rule).
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace rlx::ir::rules {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok)
    throw ShapeError(msg);
}

/// Checks x [.., D], gamma [D], dy (x's type) and eps of a norm's backward; \returns gamma's type.
Shape norm_grad_operands(In in, const NormAttrs& a, const std::string& what) {
  const Shape& x = in[0];
  require(is_float(x.dtype), what + ": x must be a float type, got " + x.str());
  require(x.rank() >= 1, what + ": x must have rank >= 1, got " + x.str());
  require(a.eps > 0 && std::isfinite(a.eps), what + ": eps must be > 0");
  const Shape& g = in[1];
  require(g.dtype == x.dtype && g.rank() == 1 && g.dims[0] == x.dims.back(),
          what + ": gamma must be [" + x.dims.back().str() + "] " +
              std::string(dtype_name(x.dtype)) + ", got " + g.str());
  require(in[2] == x, what + ": dy " + in[2].str() + " must have x's type " + x.str());
  return g;
}

} // namespace

Shape layer_norm_grad(In in, const NormAttrs& a) {
  Shape g = norm_grad_operands(in, a, "layer_norm_grad");
  return Shape::tuple({in[0], g, g});
}

Shape rms_norm_grad(In in, const NormAttrs& a) {
  Shape g = norm_grad_operands(in, a, "rms_norm_grad");
  return Shape::tuple({in[0], g});
}

Shape softmax_grad(In in, const AxisAttrs& a) {
  const Shape& y = in[0];
  require(is_float(y.dtype), "softmax_grad: y must be a float type, got " + y.str());
  normalize_axis(a.axis, y.rank(), "softmax_grad");
  require(in[1] == y, "softmax_grad: dy " + in[1].str() + " must have y's type " + y.str());
  return y;
}

// attention_grad(q, k, v, out, dout [, mask]): the forward's operands checked by attention's own
// rule; out and dout of the forward's result type; the gradients of q, k and v.
Shape attention_grad(In in, const AttentionAttrs& a) {
  require(in.size() >= 5, "attention_grad: needs q, k, v, out, dout [, mask]");
  std::vector<Shape> fwd{in[0], in[1], in[2]};
  if (in.size() > 5)
    fwd.push_back(in[5]);
  const Shape out = attention(fwd, a);
  require(in[3] == out,
          "attention_grad: out " + in[3].str() + " must be the forward's result " + out.str());
  require(in[4] == out,
          "attention_grad: dout " + in[4].str() + " must be the forward's result " + out.str());
  return Shape::tuple({in[0], in[1], in[2]});
}

// softmax_cross_entropy_grad(logits, labels, dloss): the forward's operands checked by its rule;
// dloss of the per-row loss type.
Shape softmax_cross_entropy_grad(In in, const NoAttrs& a) {
  const Shape loss = softmax_cross_entropy(in.first(2), a);
  require(in[2] == loss,
          "softmax_cross_entropy_grad: dloss " + in[2].str() + " must be " + loss.str());
  return in[0];
}

// ---- conv / pool backward ----------------------------------------------------------------------

namespace {

Conv2dAttrs forward_attrs(const Conv2dGradAttrs& a) {
  Conv2dAttrs f;
  f.stride = a.stride;
  f.padding = a.padding;
  f.dilation = a.dilation;
  f.groups = a.groups;
  return f;
}

void require_size(const std::vector<std::int64_t>& v, const std::string& what) {
  require(v.size() == 2 && v[0] >= 1 && v[1] >= 1, what + " must be two values >= 1");
}

} // namespace

// conv2d_grad_input(dy, w): x = [N, w[1] groups, size] must give the forward result dy's type.
Shape conv2d_grad_input(In in, const Conv2dGradAttrs& a) {
  const Shape &dy = in[0], &w = in[1];
  require(dy.rank() == 4, "conv2d_grad_input: dy must be [N, O, OH, OW], got " + dy.str());
  require(w.rank() == 4, "conv2d_grad_input: w must be [O, C/groups, KH, KW], got " + w.str());
  require(w[1].is_static() && a.groups >= 1,
          "conv2d_grad_input: w's dim 1 must be static and groups >= 1");
  require_size(a.size, "conv2d_grad_input: size (the input's H, W)");
  const Shape x({dy[0], Dim(w[1].size() * a.groups), Dim(a.size[0]), Dim(a.size[1])}, dy.dtype);
  const Shape y = conv2d(std::vector<Shape>{x, w}, forward_attrs(a));
  require(dy == y, "conv2d_grad_input: dy " + dy.str() + " must be the forward's result " +
                       y.str() + " for input " + x.str());
  return x;
}

// conv2d_grad_weight(x, dy): w = [dy[1], x[1] / groups, size] must give dy's type.
Shape conv2d_grad_weight(In in, const Conv2dGradAttrs& a) {
  const Shape &x = in[0], &dy = in[1];
  require(x.rank() == 4, "conv2d_grad_weight: x must be [N, C, H, W], got " + x.str());
  require(dy.rank() == 4, "conv2d_grad_weight: dy must be [N, O, OH, OW], got " + dy.str());
  require(x[1].is_static() && dy[1].is_static(),
          "conv2d_grad_weight: C and O must be static, got " + x.str() + " and " + dy.str());
  require(a.groups >= 1 && x[1].size() % a.groups == 0, "conv2d_grad_weight: groups " +
                                                            std::to_string(a.groups) +
                                                            " must divide C " + x[1].str());
  require_size(a.size, "conv2d_grad_weight: size (the kernel's KH, KW)");
  const Shape w({dy[1], Dim(x[1].size() / a.groups), Dim(a.size[0]), Dim(a.size[1])}, x.dtype);
  const Shape y = conv2d(std::vector<Shape>{x, w}, forward_attrs(a));
  require(dy == y, "conv2d_grad_weight: dy " + dy.str() + " must be the forward's result " +
                       y.str() + " for weight " + w.str());
  return w;
}

// pool2d_grad: avg (dy) or max (x, y, dy); y and dy of the forward's result type.
Shape pool2d_grad(In in, const Pool2dGradAttrs& a) {
  const bool is_max = a.kind == PoolKind::max;
  require(in.size() == (is_max ? 3u : 1u),
          is_max ? "pool2d_grad: max takes x, y, dy" : "pool2d_grad: avg takes dy only");
  const Shape& dy = in.back();
  require(dy.rank() == 4, "pool2d_grad: dy must be [N, C, OH, OW], got " + dy.str());
  require_size(a.input_size, "pool2d_grad: input_size (the input's H, W)");
  const Shape x =
      is_max ? in[0] : Shape({dy[0], dy[1], Dim(a.input_size[0]), Dim(a.input_size[1])}, dy.dtype);
  require(x.rank() == 4 && x[2] == Dim(a.input_size[0]) && x[3] == Dim(a.input_size[1]),
          "pool2d_grad: x " + x.str() + " must be [N, C, " + std::to_string(a.input_size[0]) +
              ", " + std::to_string(a.input_size[1]) + "] (input_size)");
  Pool2dAttrs f;
  f.kind = a.kind;
  f.kernel = a.kernel;
  f.stride = a.stride;
  f.padding = a.padding;
  const Shape y = pool2d(std::vector<Shape>{x}, f);
  if (is_max)
    require(in[1] == y,
            "pool2d_grad: y " + in[1].str() + " must be the forward's result " + y.str());
  require(dy == y, "pool2d_grad: dy " + dy.str() + " must be the forward's result " + y.str());
  return x;
}

} // namespace rlx::ir::rules
