// shape_rules_fused.cpp: the shape rules of the fused ops (ops.def's "fused ops" section), each
// checking what its decomposition needs so a malformed fused node is a ShapeError at build time.
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"

#include <string>

namespace rlx::ir::rules {

Shape matmul_bias_act(In in, const MatMulBiasActAttrs& a) {
  const Shape out = matmul(in.first(2), MatMulAttrs{a.transpose_a, a.transpose_b});
  if (a.act != Activation::none && !is_float(out.dtype))
    throw ShapeError("matmul_bias_act: activation " +
                     std::string(enum_names(a.act)[static_cast<std::size_t>(a.act)]) +
                     " needs a float type, got " + std::string(dtype_name(out.dtype)));
  if (in.size() == 3) {
    const Shape& bias = in[2];
    const Dim& n = out.dims.back();
    if (!(bias.rank() == 1 && bias.dims[0] == n && bias.dtype == out.dtype))
      throw ShapeError("matmul_bias_act bias must be [" + n.str() + "] " +
                       std::string(dtype_name(out.dtype)) + ", got " + bias.str());
  }
  return out;
}

} // namespace rlx::ir::rules
