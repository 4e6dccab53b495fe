// decompositions.cpp: the table of decompositions legalisation rewrites unclaimed ops with.
//
// Each entry emits the op's definition (its doc in ops.def, the reference interpreter's kernel)
// in terms of other ops. Where several forms exist they are listed preferred first; legalize()
// takes the first whose emitted ops the backend claims. Every entry is tested numerically against
// the reference interpreter (rlx-compile/tests/decompositions_test.cpp). Exact in IEEE arithmetic
// unless noted; the notes say where a form rounds differently (never more than a few ulps) or
// differs on special values.
#include "decompose.hpp"

#include "graph_util.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/region.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <numbers>

namespace rlx::compile::detail {

namespace {

using ir::Builder;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using Opts = fusion::PassOptions;

NodeId c(Builder& b, NodeId like, double v) {
  return b.scalar(v, b.shape(like).dtype);
}

ir::Node node_of(Builder& b, NodeId id) {
  return b.graph().node(id);
}

bool float_node(Builder& b, NodeId id, std::string& why) {
  if (ir::is_float(b.shape(id).dtype))
    return true;
  why = "defined for float types only, not " + std::string(ir::dtype_name(b.shape(id).dtype));
  return false;
}

// ---- elementwise --------------------------------------------------------------------------------

// -x = x * -1 (exact, keeps the sign of zero).
NodeId neg_by_mul(Builder& b, NodeId id, const Opts&, std::string& why) {
  NodeId x = node_of(b, id).inputs[0];
  if (b.shape(x).dtype == DType::u8 || b.shape(x).dtype == DType::boolean) {
    why = "-1 is not a value of " + std::string(ir::dtype_name(b.shape(x).dtype));
    return {};
  }
  return b.mul(x, c(b, x, -1));
}

// -x = 0 - x (maps -0.0 to +0.0; values compare equal).
NodeId neg_by_sub(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.sub(c(b, x, 0), x);
}

// |x| = max(x, -x) (signed and float types).
NodeId abs_by_max(Builder& b, NodeId id, const Opts&, std::string& why) {
  NodeId x = node_of(b, id).inputs[0];
  if (b.shape(x).dtype == DType::u8 || b.shape(x).dtype == DType::boolean) {
    why = "negation wraps for unsigned values";
    return {};
  }
  return b.maximum(x, b.neg(x));
}

// relu(x) = max(x, 0).
NodeId relu_by_max(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.maximum(x, c(b, x, 0));
}

// 1/x = 1 / x.
NodeId reciprocal_by_div(Builder& b, NodeId id, const Opts&, std::string& why) {
  if (!float_node(b, id, why))
    return {};
  NodeId x = node_of(b, id).inputs[0];
  return b.div(c(b, x, 1), x);
}

// rsqrt(x) = 1 / sqrt(x).
NodeId rsqrt_by_div(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.div(c(b, x, 1), b.sqrt(x));
}

// rsqrt(x) = reciprocal(sqrt(x)).
NodeId rsqrt_by_reciprocal(Builder& b, NodeId id, const Opts&, std::string&) {
  return b.reciprocal(b.sqrt(node_of(b, id).inputs[0]));
}

// sqrt(x) = x ^ 0.5 (differs only at -0.0 (+0.0 instead of -0.0) and -inf (+inf, not NaN)).
NodeId sqrt_by_pow(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.pow(x, c(b, x, 0.5));
}

// sigmoid(x) = 1 / (1 + exp(-x)).
NodeId sigmoid_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.div(c(b, x, 1), b.add(c(b, x, 1), b.exp(b.neg(x))));
}

// silu(x) = x * sigmoid(x).
NodeId silu_by_sigmoid(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.mul(x, b.sigmoid(x));
}

// silu(x) = x / (1 + exp(-x)).
NodeId silu_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  return b.div(x, b.add(c(b, x, 1), b.exp(b.neg(x))));
}

// gelu(x) = x * 0.5 * (1 + erf(x * (1 / sqrt 2))).
NodeId gelu_by_erf(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  NodeId e = b.erf(b.mul(x, c(b, x, 1.0 / std::numbers::sqrt2)));
  return b.mul(b.mul(x, c(b, x, 0.5)), b.add(c(b, x, 1), e));
}

// gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
NodeId gelu_tanh_by_tanh(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_of(b, id).inputs[0];
  const double k = std::sqrt(2.0 / std::numbers::pi);
  NodeId x3 = b.mul(b.mul(x, x), x);
  NodeId inner = b.mul(c(b, x, k), b.add(x, b.mul(c(b, x, 0.044715), x3)));
  return b.mul(b.mul(c(b, x, 0.5), x), b.add(c(b, x, 1), b.tanh(inner)));
}

// a - b = a + (-b).
NodeId sub_by_add(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  return b.add(n.inputs[0], b.neg(n.inputs[1]));
}

// a / b = a * (1 / b) for floats (rounds twice: within one ulp of a / b).
NodeId div_by_reciprocal(Builder& b, NodeId id, const Opts&, std::string& why) {
  if (!float_node(b, id, why))
    return {};
  const ir::Node n = node_of(b, id);
  return b.mul(n.inputs[0], b.reciprocal(n.inputs[1]));
}

// max(a, b) = a >= b ? a : b (NaN operands: selects b where the reference may not).
NodeId maximum_by_where(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  return b.where(b.compare(ir::CmpOp::ge, n.inputs[0], n.inputs[1]), n.inputs[0], n.inputs[1]);
}

// min(a, b) = a <= b ? a : b.
NodeId minimum_by_where(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  return b.where(b.compare(ir::CmpOp::le, n.inputs[0], n.inputs[1]), n.inputs[0], n.inputs[1]);
}

// ---- normalisation ------------------------------------------------------------------------------

// softmax(x) = e / sum(e), e = exp(x - max(x)) along the axis.
NodeId softmax_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t ax =
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, b.shape(x).rank(), "softmax");
  NodeId e = b.exp(b.sub(x, b.reduce(ir::ReduceOp::max, x, {ax}, true)));
  return b.div(e, b.sum(e, {ax}, true));
}

// log_softmax(x) = s - log(sum(exp(s))), s = x - max(x) along the axis.
NodeId log_softmax_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t ax =
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, b.shape(x).rank(), "log_softmax");
  NodeId s = b.sub(x, b.reduce(ir::ReduceOp::max, x, {ax}, true));
  return b.sub(s, b.log(b.sum(b.exp(s), {ax}, true)));
}

// layer_norm(x) = (x - mean) / sqrt(var + eps) * gamma (+ beta) over the last axis, biased var.
NodeId layer_norm_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t last = static_cast<std::int64_t>(b.shape(x).rank()) - 1;
  NodeId d = b.sub(x, b.mean(x, {last}, true));
  NodeId var = b.mean(b.mul(d, d), {last}, true);
  NodeId den = b.sqrt(b.add(var, c(b, x, n.attr<ir::NormAttrs>().eps)));
  NodeId y = b.mul(b.div(d, den), n.inputs[1]);
  return n.inputs.size() == 3 ? b.add(y, n.inputs[2]) : y;
}

// rms_norm(x) = x / sqrt(mean(x^2) + eps) * gamma over the last axis.
NodeId rms_norm_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t last = static_cast<std::int64_t>(b.shape(x).rank()) - 1;
  NodeId ms = b.mean(b.mul(x, x), {last}, true);
  NodeId den = b.sqrt(b.add(ms, c(b, x, n.attr<ir::NormAttrs>().eps)));
  return b.mul(b.div(x, den), n.inputs[1]);
}

// softmax_cross_entropy(logits, labels) = logsumexp(logits) - logits[label], per row; the
// picked logit is sum(where(iota == label, logits, 0)). An out-of-range label (an error in the
// reference) picks nothing here.
NodeId softmax_cross_entropy_by_reduce(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  NodeId logits = n.inputs[0], labels = n.inputs[1];
  const ir::Shape ls = b.shape(logits);
  if (!ls[1].is_static()) {
    why = "the class count is symbolic; bind it first";
    return {};
  }
  const std::int64_t classes = ls[1].size();
  NodeId m = b.reduce(ir::ReduceOp::max, logits, {1}, true);
  NodeId lse = b.add(b.log(b.sum(b.exp(b.sub(logits, m)), {1}, true)), m);
  ir::Tensor iota(ir::Shape::of({classes}, b.shape(labels).dtype));
  for (std::int64_t i = 0; i < classes; ++i)
    iota.set_i64(i, i);
  NodeId hit = b.compare(ir::CmpOp::eq, b.reshape(labels, {ls[0], ir::Dim(1)}), b.constant(iota));
  NodeId picked = b.sum(b.where(hit, logits, c(b, logits, 0)), {1}, true);
  return b.reshape(b.sub(lse, picked), {ls[0]});
}

// ---- attention and positions --------------------------------------------------------------------

/// \p x [.., S, .., D] in \p layout as [B, H, S, D].
NodeId to_bhsd(Builder& b, NodeId x, ir::AttnLayout layout) {
  return layout == ir::AttnLayout::bshd ? b.transpose(x, {0, 2, 1, 3}) : x;
}

// attention(q, k, v[, mask]) in [B, H, S, D] form: scores = scale * q k^T (k's heads repeated for
// GQA), softcap, + bias, masked keys set to -inf, p = softmax(scores), with rows whose scores
// are all -inf (no kept key) 0 as in the reference, out = p v. Causal and sliding-window masks are
// constants of [Sq, Sk], so those two kinds need static sequence lengths.
NodeId attention_by_matmul(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  const auto& a = n.attr<ir::AttentionAttrs>();
  const DType t = n.shape.dtype;
  NodeId q = to_bhsd(b, n.inputs[0], a.layout);
  NodeId k = to_bhsd(b, n.inputs[1], a.layout);
  NodeId v = to_bhsd(b, n.inputs[2], a.layout);
  const ir::Shape qs = b.shape(q), ks = b.shape(k);
  const bool positional = a.mask == ir::MaskKind::causal || a.mask == ir::MaskKind::sliding_window;
  if (positional && !(qs[2].is_static() && ks[2].is_static())) {
    why = "a causal / sliding-window mask needs static sequence lengths; bind them first";
    return {};
  }
  if (!qs[3].is_static()) {
    why = "head_dim is symbolic";
    return {};
  }
  const std::int64_t group = a.num_heads / a.num_kv_heads;
  if (group > 1) { // kv head h / group serves query head h
    auto repeat = [&](NodeId x) {
      const ir::Shape s = b.shape(x);
      NodeId r = b.reshape(x, {s[0], s[1], ir::Dim(1), s[2], s[3]});
      r = b.expand(r, {s[0], s[1], ir::Dim(group), s[2], s[3]});
      return b.reshape(r, {s[0], ir::Dim(a.num_heads), s[2], s[3]});
    };
    k = repeat(k);
    v = repeat(v);
  }
  const double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(qs[3].size())));
  NodeId s = b.mul(b.matmul(q, k, false, true), b.scalar(scale, t));
  if (a.softcap)
    s = b.mul(b.tanh(b.mul(s, b.scalar(1.0 / *a.softcap, t))), b.scalar(*a.softcap, t));
  if (a.mask == ir::MaskKind::bias)
    s = b.add(s, n.inputs[3]);
  NodeId keep;
  if (positional) {
    const std::int64_t sq = qs[2].size(), sk = ks[2].size(), shift = sk - sq;
    ir::Tensor m(ir::Shape::of({sq, sk}, DType::boolean));
    for (std::int64_t i = 0; i < sq; ++i)
      for (std::int64_t j = 0; j < sk; ++j) {
        bool vis = j <= i + shift;
        if (a.mask == ir::MaskKind::sliding_window)
          vis = vis && j > i + shift - a.window;
        m.set_f64(i * sk + j, vis);
      }
    keep = b.constant(m);
  } else if (a.mask == ir::MaskKind::padding) {
    const ir::Shape ms = b.shape(n.inputs[3]);
    NodeId nz = b.compare(ir::CmpOp::ne, n.inputs[3], b.scalar(0, ms.dtype));
    keep = b.reshape(nz, {ms[0], ir::Dim(1), ir::Dim(1), ms[1]});
  }
  // Masked keys score -inf, so softmax gives them exactly 0 in every row that keeps a finite
  // score. A row whose scores are all -inf (no kept key, a bias of -inf, or -inf scores) would
  // give NaN (-inf - -inf); the reference gives 0, so such rows are selected away by their max.
  const double inf = std::numeric_limits<double>::infinity();
  if (keep.valid())
    s = b.where(keep, s, b.scalar(-inf, t));
  NodeId p = b.softmax(s, -1);
  if (!(ks[2].is_static() && ks[2].size() == 0)) { // no keys at all: p is empty, out is 0
    NodeId dead =
        b.compare(ir::CmpOp::eq, b.reduce(ir::ReduceOp::max, s, {-1}, true), b.scalar(-inf, t));
    p = b.where(dead, b.scalar(0, t), p);
  }
  NodeId out = b.matmul(p, v);
  return a.layout == ir::AttnLayout::bshd ? b.transpose(out, {0, 2, 1, 3}) : out;
}

// rope(x): per position p = s + offset and pair k < n_rot / 2 at angle p * theta^(-2k / n_rot),
// (a, b) -> (a cos - b sin, a sin + b cos), with cos / sin tables as constants (so the sequence
// length must be static); features past n_rot pass through.
NodeId rope_by_tables(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  const auto& a = n.attr<ir::RopeAttrs>();
  const DType t = n.shape.dtype;
  NodeId x = n.inputs[0];
  const ir::Shape xs = b.shape(x);
  const std::size_t seq_axis = a.layout == ir::AttnLayout::bshd ? 1 : 2;
  if (!xs[seq_axis].is_static()) {
    why = "the sequence length is symbolic (the cos / sin tables are constants); bind it first";
    return {};
  }
  const std::int64_t seq = xs[seq_axis].size(), d = xs[3].size();
  const std::int64_t rot = a.n_rot == 0 ? d : a.n_rot, half = rot / 2;
  // Tables [S, 1, half] (bshd) or [S, half] (bhsd), broadcasting against [.., S, .., half].
  std::vector<std::int64_t> dims = a.layout == ir::AttnLayout::bshd
                                       ? std::vector<std::int64_t>{seq, 1, half}
                                       : std::vector<std::int64_t>{seq, half};
  ir::Tensor cos_t(ir::Shape::of(dims, t)), sin_t(ir::Shape::of(dims, t));
  for (std::int64_t s = 0; s < seq; ++s)
    for (std::int64_t k = 0; k < half; ++k) {
      const double angle =
          static_cast<double>(s + a.position_offset) *
          std::pow(a.theta, -2.0 * static_cast<double>(k) / static_cast<double>(rot));
      cos_t.set_f64(s * half + k, std::cos(angle));
      sin_t.set_f64(s * half + k, std::sin(angle));
    }
  NodeId cs = b.constant(cos_t), sn = b.constant(sin_t);
  NodeId rotated;
  if (a.style == ir::RopeStyle::half) {
    NodeId x1 = b.narrow(x, 3, 0, half), x2 = b.narrow(x, 3, half, half);
    NodeId y1 = b.sub(b.mul(x1, cs), b.mul(x2, sn));
    NodeId y2 = b.add(b.mul(x1, sn), b.mul(x2, cs));
    rotated = b.concat({y1, y2}, 3);
  } else {
    // Pairs (2k, 2k + 1): view the rotated features as [.., half, 2].
    NodeId xr = rot == d ? x : b.narrow(x, 3, 0, rot);
    NodeId pairs = b.reshape(xr, {xs[0], xs[1], xs[2], ir::Dim(half), ir::Dim(2)});
    std::vector<ir::Dim> tdims(dims.begin(), dims.end());
    tdims.emplace_back(1);
    NodeId c5 = b.reshape(cs, tdims), s5 = b.reshape(sn, tdims);
    NodeId pa = b.narrow(pairs, 4, 0, 1), pb = b.narrow(pairs, 4, 1, 1);
    NodeId ya = b.sub(b.mul(pa, c5), b.mul(pb, s5));
    NodeId yb = b.add(b.mul(pa, s5), b.mul(pb, c5));
    rotated = b.reshape(b.concat({ya, yb}, 4), {xs[0], xs[1], xs[2], ir::Dim(rot)});
  }
  if (rot == d)
    return rotated;
  return b.concat({rotated, b.narrow(x, 3, rot, d - rot)}, 3);
}

// ---- movement -----------------------------------------------------------------------------------

// expand(x) = x * ones(target) (x and true/false selection for bool); static targets only.
NodeId expand_by_broadcast(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  if (!n.shape.is_static()) {
    why = "the target shape is symbolic; bind it first";
    return {};
  }
  NodeId x = n.inputs[0];
  if (n.shape.dtype == DType::boolean)
    return b.where(x, full_constant(b, n.shape, 1), full_constant(b, n.shape, 0));
  return b.mul(x, full_constant(b, n.shape, 1));
}

// ---- quantization -------------------------------------------------------------------------------

// fake_quantize(x) = dequantize(quantize(x)) for f32 x (Dequantize yields f32; for other float
// types the extra rounding through f32 would differ from the reference).
NodeId fake_quantize_by_qdq(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  if (n.shape.dtype != DType::f32) {
    why = "only f32 inputs decompose exactly (dequantize yields f32)";
    return {};
  }
  const auto& q = n.attr<ir::QuantAttrs>();
  return b.dequantize(b.quantize(n.inputs[0], q), q);
}

/// The per-channel (or per-tensor) \p values of \p q as a constant broadcasting against an
/// operand of rank \p rank: [C, 1, ..., 1] from the quantization axis on, or a scalar.
NodeId channel_constant(Builder& b, const ir::QuantAttrs& q, const std::vector<double>& values,
                        std::size_t rank, DType t) {
  if (!q.axis)
    return b.scalar(values.at(0), t);
  const std::int64_t ax = ir::normalize_axis(*q.axis, rank, "dequantize");
  std::vector<std::int64_t> dims(rank - static_cast<std::size_t>(ax), 1);
  dims[0] = static_cast<std::int64_t>(values.size());
  ir::Tensor v(ir::Shape::of(dims, t));
  for (std::size_t i = 0; i < values.size(); ++i)
    v.set_f64(static_cast<std::int64_t>(i), values[i]);
  return b.constant(v);
}

NodeId dequantize_in(Builder& b, NodeId id, DType t) {
  const ir::Node n = node_of(b, id);
  const auto& q = n.attr<ir::QuantAttrs>();
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

// ---- extension and HIR --------------------------------------------------------------------------

// custom_fn(args) = body(args), inlined.
NodeId custom_fn_inline(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  return inline_subgraph(b, *n.attr<ir::CustomFnAttrs>().body, n.inputs,
                         "inline " + ir::describe(b.graph(), id))
      .at(0);
}

// elementwise_region(args) = body(args), inlined (ir::inline_region). The table maps a node to one
// value, so this serves single-result regions; a tuple-typed region is unfused by the
// unfuse-elementwise-regions pass (rlx-fusion) instead.
NodeId region_inline(Builder& b, NodeId id, const Opts&, std::string& why) {
  const ir::Node n = node_of(b, id);
  if (n.shape.is_tuple()) {
    why = "a region with several results is unfused by unfuse-elementwise-regions";
    return ir::NodeId{};
  }
  return ir::inline_region(b, n, n.inputs).at(0);
}

// HIR blocks: their MIR decomposition from rlx-ir.
NodeId hir_decompose(Builder& b, NodeId id, const Opts&, std::string&) {
  const ir::Node n = node_of(b, id);
  return ir::decompose_hir(b, n, n.inputs);
}

using Table = std::array<std::vector<DecomposeFn>, ir::kNumOps>;

Table make_table() {
  Table t;
  auto set = [&](OpKind k, std::vector<DecomposeFn> fns) {
    t[static_cast<std::size_t>(k)] = std::move(fns);
  };
  set(OpKind::Neg, {neg_by_mul, neg_by_sub});
  set(OpKind::Abs, {abs_by_max});
  set(OpKind::Relu, {relu_by_max});
  set(OpKind::Reciprocal, {reciprocal_by_div});
  set(OpKind::Rsqrt, {rsqrt_by_div, rsqrt_by_reciprocal});
  set(OpKind::Sqrt, {sqrt_by_pow});
  set(OpKind::Sigmoid, {sigmoid_by_exp});
  set(OpKind::Silu, {silu_by_sigmoid, silu_by_exp});
  set(OpKind::Gelu, {gelu_by_erf});
  set(OpKind::GeluTanh, {gelu_tanh_by_tanh});
  set(OpKind::Sub, {sub_by_add});
  set(OpKind::Div, {div_by_reciprocal});
  set(OpKind::Maximum, {maximum_by_where});
  set(OpKind::Minimum, {minimum_by_where});
  set(OpKind::Softmax, {softmax_by_exp});
  set(OpKind::LogSoftmax, {log_softmax_by_exp});
  set(OpKind::LayerNorm, {layer_norm_by_reduce});
  set(OpKind::RmsNorm, {rms_norm_by_reduce});
  set(OpKind::SoftmaxCrossEntropy, {softmax_cross_entropy_by_reduce});
  set(OpKind::Expand, {expand_by_broadcast});
  set(OpKind::Attention, {attention_by_matmul});
  set(OpKind::Rope, {rope_by_tables});
  set(OpKind::DotGeneral, {lower_dot_general});
  set(OpKind::If, {lower_if});
  set(OpKind::While, {lower_while});
  set(OpKind::CustomFn, {custom_fn_inline});
  set(OpKind::ElementwiseRegion, {region_inline});
  set(OpKind::FakeQuantize, {fake_quantize_by_qdq});
  set(OpKind::Dequantize, {dequantize_in_f64, dequantize_in_f32});
  ir::for_each_op([&](OpKind k) {
    if (ir::is_hir(k))
      set(k, {hir_decompose});
  });
  return t;
}

} // namespace

std::span<const DecomposeFn> decompositions(ir::OpKind k) {
  static const Table table = make_table();
  return table[static_cast<std::size_t>(k)];
}

} // namespace rlx::compile::detail
