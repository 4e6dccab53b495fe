// shape_rules_fused_norm.cpp: the shape rules of the residual + norm fused ops (a tuple result:
// the sum and the normalised sum) that rlx-fusion's residual-norm passes emit.
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"

#include <string>
#include <vector>

namespace rlx::ir::rules {

namespace {

/// The sum's type: x and r of one float type and equal dims (the fused op does not broadcast).
Shape residual_sum(In in, const char* op) {
  const Shape& x = in[0];
  const Shape& r = in[1];
  if (!is_float(x.dtype))
    throw ShapeError(std::string(op) + ": x must be a float type, got " + x.str());
  if (x.dtype != r.dtype || x.dims != r.dims)
    throw ShapeError(std::string(op) + ": x " + x.str() + " and the residual " + r.str() +
                     " must have one type and equal dims (no broadcasting)");
  return x;
}

/// The operands of the norm applied to the sum: (sum, gamma [, beta]).
std::vector<Shape> norm_operands(const Shape& sum, In in) {
  std::vector<Shape> out{sum};
  out.insert(out.end(), in.begin() + 2, in.end());
  return out;
}

} // namespace

Shape residual_layer_norm(In in, const NormAttrs& a) {
  const Shape sum = residual_sum(in, "residual_layer_norm");
  const std::vector<Shape> norm_in = norm_operands(sum, in);
  return Shape::tuple({sum, layer_norm(norm_in, a)});
}

Shape residual_rms_norm(In in, const NormAttrs& a) {
  const Shape sum = residual_sum(in, "residual_rms_norm");
  const std::vector<Shape> norm_in = norm_operands(sum, in);
  return Shape::tuple({sum, rms_norm(norm_in, a)});
}

} // namespace rlx::ir::rules
