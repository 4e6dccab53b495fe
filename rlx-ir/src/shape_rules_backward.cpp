// shape_rules_backward.cpp: the shape rules of the backward ops (ops.def's "backward ops"
// section): the closed-form VJPs of the norms (tuple results) and of softmax / log-softmax.
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

} // namespace rlx::ir::rules
