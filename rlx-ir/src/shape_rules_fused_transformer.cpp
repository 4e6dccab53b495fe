// shape_rules_fused_transformer.cpp: the shape rules of the transformer fused ops (SwiGLU and the
// SwiGLU dual matmul) that the fusion passes of rlx-fusion emit.
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"

#include <string>

namespace rlx::ir::rules {

namespace {
void require(bool ok, const std::string& msg) {
  if (!ok)
    throw ShapeError(msg);
}
std::string dn(DType t) {
  return std::string(dtype_name(t));
}
} // namespace

Shape swiglu(In in, const NoAttrs&) {
  const Shape& gate = in[0];
  const Shape& up = in[1];
  require(is_float(gate.dtype), "swiglu: gate must be a float type, got " + dn(gate.dtype));
  require(gate.dtype == up.dtype,
          "swiglu: gate and up types differ (" + dn(gate.dtype) + " vs " + dn(up.dtype) + ")");
  require(gate.dims == up.dims, "swiglu: gate " + gate.str() + " and up " + up.str() +
                                    " must have equal dims (no broadcasting)");
  return gate;
}

Shape swiglu_matmul(In in, const SwiGluMatMulAttrs& a) {
  const Shape& x = in[0];
  const Shape& wg = in[1];
  const Shape& wu = in[2];
  const char* layout = a.weights_kn ? "[K, N] (weights_kn)" : "[N, K]";
  require(is_float(x.dtype), "swiglu_matmul: x must be a float type, got " + dn(x.dtype));
  require(x.dtype == wg.dtype && x.dtype == wu.dtype,
          "swiglu_matmul: x, w_gate and w_up must share one type, got " + x.str() + ", " +
              wg.str() + ", " + wu.str());
  require(x.rank() >= 2, "swiglu_matmul: x needs rank >= 2, got " + x.str());
  require(wg.rank() == 2 && wu.rank() == 2, std::string("swiglu_matmul: w_gate and w_up must be ") +
                                                layout + ", got " + wg.str() + " and " + wu.str());
  require(wg.dims == wu.dims,
          "swiglu_matmul: w_gate " + wg.str() + " and w_up " + wu.str() + " must have equal dims");
  const Dim k = a.weights_kn ? wg[0] : wg[1];
  const Dim n = a.weights_kn ? wg[1] : wg[0];
  require(k == x[x.rank() - 1], "swiglu_matmul: contraction mismatch: x " + x.str() +
                                    " against w_gate " + wg.str() + " " + layout + " (K " +
                                    x[x.rank() - 1].str() + " vs " + k.str() + ")");
  Shape out = x;
  out.dims.back() = n;
  return out;
}

} // namespace rlx::ir::rules
