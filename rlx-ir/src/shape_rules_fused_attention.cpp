// shape_rules_fused_attention.cpp: the shape rule of the fused attention block (rlx-fusion's
// fuse-attention-block). The operands specific to the block (arity, x, the packed weight's width)
// are checked here; the stages reuse the rules of MatMul, Rope and Attention on the stage types,
// so the block accepts exactly what its decomposition accepts.
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"

#include <string>

namespace rlx::ir::rules {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok)
    throw ShapeError("fused_attention_block: " + msg);
}

/// Runs a stage's rule, prefixing its message with the block's name.
template <class Fn> Shape stage(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const ShapeError& e) {
    throw ShapeError(std::string("fused_attention_block: ") + what + ": " + e.what());
  }
}

} // namespace

std::size_t fused_attention_block_arity(const FusedAttentionBlockAttrs& a) {
  const bool takes_mask = a.mask == MaskKind::padding || a.mask == MaskKind::bias;
  return 3 + (a.qkv_bias ? 1u : 0u) + (a.out_bias ? 1u : 0u) + (takes_mask ? 1u : 0u);
}

Shape fused_attention_block(In in, const FusedAttentionBlockAttrs& a) {
  const bool takes_mask = a.mask == MaskKind::padding || a.mask == MaskKind::bias;
  require(in.size() == fused_attention_block_arity(a),
          "expects " + std::to_string(fused_attention_block_arity(a)) + " operands (x, w_qkv, w_o" +
              (a.qkv_bias ? ", b_qkv" : "") + (a.out_bias ? ", b_o" : "") +
              (takes_mask ? ", mask" : "") + "), got " + std::to_string(in.size()));
  const Shape& x = in[0];
  const Shape& wqkv = in[1];
  const Shape& wo = in[2];
  require(is_float(x.dtype), "x must be a float type, got " + x.str());
  require(x.rank() == 3, "x must be [B, S, E], got " + x.str());
  require(wqkv.rank() == 2 && wo.rank() == 2,
          "w_qkv and w_o must be 2-D, got " + wqkv.str() + " and " + wo.str());
  require(a.num_heads >= 1 && a.num_kv_heads >= 1 && a.num_heads % a.num_kv_heads == 0,
          "num_heads (" + std::to_string(a.num_heads) + ") must be a positive multiple of " +
              "num_kv_heads (" + std::to_string(a.num_kv_heads) + ")");
  const Dim width = wqkv[a.qkv_transpose_b ? 0 : 1];
  const std::int64_t parts = a.num_heads + 2 * a.num_kv_heads;
  require(width.is_static() && width.size() % parts == 0 && width.size() > 0,
          "the packed projection's width " + width.str() + " is not (num_heads + 2 num_kv_heads) " +
              "= " + std::to_string(parts) + " heads of one head_dim");
  const std::int64_t d = width.size() / parts;
  std::size_t next = 3;
  std::vector<Shape> proj_in{x, wqkv};
  if (a.qkv_bias)
    proj_in.push_back(in[next++]);
  const Shape p = stage("the QKV projection", [&] {
    return matmul_bias_act(proj_in, MatMulBiasActAttrs{false, a.qkv_transpose_b, {}});
  });
  auto heads = [&](std::int64_t h) {
    Shape s = p;
    s.dims = {p[0], p[1], Dim(h), Dim(d)};
    return s;
  };
  const Shape q = heads(a.num_heads), kv = heads(a.num_kv_heads);
  if (a.rope) {
    RopeAttrs r;
    r.style = a.rope_style;
    r.n_rot = a.rope_n_rot;
    r.position_offset = a.rope_position_offset;
    r.theta = a.rope_theta;
    stage("rope", [&] { return rope(std::span<const Shape>(&q, 1), r); });
  }
  std::vector<Shape> attn_in{q, kv, kv};
  const std::size_t bias_o = a.out_bias ? next++ : 0;
  if (next < in.size())
    attn_in.push_back(in[next]);
  AttentionAttrs at;
  at.num_heads = a.num_heads;
  at.num_kv_heads = a.num_kv_heads;
  at.mask = a.mask;
  at.window = a.window;
  at.scale = a.scale;
  at.softcap = a.softcap;
  const Shape o = stage("attention", [&] { return attention(attn_in, at); });
  Shape merged = o;
  merged.dims = {o[0], o[1], Dim(a.num_heads * d)};
  std::vector<Shape> out_in{merged, wo};
  if (a.out_bias)
    out_in.push_back(in[bias_o]);
  return stage("the output projection", [&] {
    return matmul_bias_act(out_in, MatMulBiasActAttrs{false, a.out_transpose_b, {}});
  });
}

} // namespace rlx::ir::rules
