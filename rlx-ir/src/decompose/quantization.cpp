// quantization.cpp: decompositions of FakeQuantize and Dequantize.
//
// Exact in IEEE arithmetic unless noted; the notes say where a form rounds differently (never more
// than a few ulps) or differs on special values. Tested in rlx-ir/tests/decompositions_test.cpp.
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// fake_quantize(x) = dequantize(quantize(x)) for f32 x (Dequantize yields f32; for other float
// types the extra rounding through f32 would differ from the reference).
NodeId fake_quantize_by_qdq(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (n.shape.dtype != DType::f32) {
    why = "only f32 inputs decompose exactly (dequantize yields f32)";
    return {};
  }
  const auto& q = n.attr<QuantAttrs>();
  return b.dequantize(b.quantize(n.inputs[0], q), q);
}

/// The per-channel (or per-tensor) \p values of \p q as a constant broadcasting against an
/// operand of rank \p rank: [C, 1, ..., 1] from the quantization axis on, or a scalar.
NodeId channel_constant(Builder& b, const QuantAttrs& q, const std::vector<double>& values,
                        std::size_t rank, DType t) {
  if (!q.axis)
    return b.scalar(values.at(0), t);
  const std::int64_t ax = normalize_axis(*q.axis, rank, "dequantize");
  std::vector<std::int64_t> dims(rank - static_cast<std::size_t>(ax), 1);
  dims[0] = static_cast<std::int64_t>(values.size());
  Tensor v(Shape::of(dims, t));
  for (std::size_t i = 0; i < values.size(); ++i)
    v.set_f64(static_cast<std::int64_t>(i), values[i]);
  return b.constant(v);
}

NodeId dequantize_in(Builder& b, NodeId id, DType t) {
  const Node n = node_copy(b, id);
  const auto& q = n.attr<QuantAttrs>();
  const std::size_t rank = n.shape.rank();
  std::vector<double> zps(q.zero_points.begin(), q.zero_points.end());
  NodeId v = b.sub(b.cast(n.inputs[0], t), channel_constant(b, q, zps, rank, t));
  v = b.mul(v, channel_constant(b, q, q.scales, rank, t));
  return t == DType::f32 ? v : b.cast(v, DType::f32);
}

// dequantize(q) = f32((f64(q) - zp) * scale): exactly the reference's computation.
NodeId dequantize_in_f64(Builder& b, NodeId id, const Opts&, std::string&) {
  return dequantize_in(b, id, DType::f64);
}

// dequantize(q) = (f32(q) - zp) * f32(scale): the scale rounds to f32 first (within an ulp).
NodeId dequantize_in_f32(Builder& b, NodeId id, const Opts&, std::string&) {
  return dequantize_in(b, id, DType::f32);
}

} // namespace

void add_quantization_decompositions(DecompositionTable& t) {
  t.set(OpKind::FakeQuantize, {{"fake_quantize_by_qdq", fake_quantize_by_qdq}});
  t.set(OpKind::Dequantize,
        {{"dequantize_in_f64", dequantize_in_f64}, {"dequantize_in_f32", dequantize_in_f32}});
}

} // namespace rlx::ir::decompose_detail
