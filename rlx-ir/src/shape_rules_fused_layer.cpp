// shape_rules_fused_layer.cpp: the shape rule of the fused transformer layer (rlx-fusion's
// fuse-transformer-layer). The layer's own conditions (arity, the kind's flags, x [B, S, E]) are
// checked here; each stage then runs the rule of the fused op it stands for (the attention block,
// the residual norms, MatMulBiasAct, SwiGluMatMul) on the stage types, so the layer accepts
// exactly what its decomposition accepts.
#include "rlx/ir/error.hpp"
#include "rlx/ir/fused_layer.hpp"
#include "shape_rules.hpp"

#include <string>
#include <vector>

namespace rlx::ir::rules {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok)
    throw ShapeError("fused_transformer_layer: " + msg);
}

/// Runs a stage's rule, prefixing its message with the layer's name and the stage.
template <class Fn> Shape stage(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const ShapeError& e) {
    throw ShapeError(std::string("fused_transformer_layer: ") + what + ": " + e.what());
  }
}

/// The types of operands \p slots of \p in (absent slots skipped).
std::vector<Shape> pick(In in, std::initializer_list<std::size_t> slots) {
  std::vector<Shape> out;
  for (std::size_t s : slots)
    if (s != LayerSlots::kAbsent)
      out.push_back(in[s]);
  return out;
}

/// The part \p i of tuple type \p t.
Shape part(const Shape& t, std::size_t i) {
  return t.parts.at(i);
}

} // namespace

Shape fused_transformer_layer(In in, const FusedTransformerLayerAttrs& a) {
  const LayerSlots s = layer_slots(a);
  const bool llama = a.kind == LayerKind::llama_pre_norm;
  require(in.size() == s.count, "expects " + std::to_string(s.count) + " operands for its " +
                                    "kind and flags, got " + std::to_string(in.size()));
  require(!llama || !a.norm_beta, "llama_pre_norm's RMSNorms take no beta (norm_beta is set)");
  require(!llama || (!a.up_bias && a.act == Activation::none),
          "llama_pre_norm's gate / up product is SwiGLU: no up bias and no act");
  require(a.eps > 0, "eps must be positive, got " + std::to_string(a.eps));
  const Shape& x = in[s.x];
  require(is_float(x.dtype) && x.rank() == 3, "x must be a float [B, S, E], got " + x.str());
  NormAttrs na;
  na.eps = a.eps;
  Shape block_in = x;
  if (llama)
    block_in = stage("the attention norm", [&] { return rms_norm(pick(in, {s.x, s.g1}), na); });
  std::vector<Shape> bin = pick(in, {s.w_qkv, s.w_o, s.b_qkv, s.b_o, s.mask});
  bin.insert(bin.begin(), block_in);
  const Shape att =
      stage("the attention block", [&] { return fused_attention_block(bin, a.block); });
  Shape h, m; // the residual stream after attention, and the FFN's input
  if (llama) {
    const Shape t = stage("the FFN norm", [&] {
      std::vector<Shape> r{x, att, in[s.g2]};
      return residual_rms_norm(r, na);
    });
    h = part(t, 0);
    m = part(t, 1);
  } else {
    const Shape t = stage("the attention norm", [&] {
      std::vector<Shape> r = pick(in, {s.g1, s.beta1});
      r.insert(r.begin(), {att, x});
      return residual_layer_norm(r, na);
    });
    h = m = part(t, 1);
  }
  Shape u;
  if (llama) {
    u = stage("the SwiGLU product", [&] {
      std::vector<Shape> r{m, in[s.w_gate], in[s.w_up]};
      return swiglu_matmul(r, SwiGluMatMulAttrs{!a.up_transpose_b});
    });
  } else {
    u = stage("the FFN up projection", [&] {
      std::vector<Shape> r = pick(in, {s.w_up, s.b_up});
      r.insert(r.begin(), m);
      return matmul_bias_act(r, MatMulBiasActAttrs{false, a.up_transpose_b, a.act});
    });
  }
  const Shape d = stage("the FFN down projection", [&] {
    std::vector<Shape> r = pick(in, {s.w_down, s.b_down});
    r.insert(r.begin(), u);
    return matmul_bias_act(r, MatMulBiasActAttrs{false, a.down_transpose_b, {}});
  });
  if (llama)
    return stage("the FFN residual", [&] {
      std::vector<Shape> r{h, d};
      return binary(r, NoAttrs{});
    });
  const Shape t = stage("the FFN norm", [&] {
    std::vector<Shape> r = pick(in, {s.g2, s.beta2});
    r.insert(r.begin(), {d, h});
    return residual_layer_norm(r, na);
  });
  return part(t, 1);
}

} // namespace rlx::ir::rules
