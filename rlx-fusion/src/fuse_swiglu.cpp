// fuse_swiglu.cpp: fuse-swiglu (silu(gate) * up → SwiGlu) and fuse-swiglu-matmul
// (silu(x Wg^T) * (x Wu^T) → SwiGluMatMul; silu(x Wg) * (x Wu) with the [K, N] weights of ONNX
// exports → SwiGluMatMul{weights_kn}).
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// Gate and up must have equal dims: SwiGlu does not broadcast (a broadcast up would need the
/// gate's values repeated, which the fused kernel does not do).
std::optional<Miss> same_dims(const Graph& g, const Match& m) {
  const ir::Shape& gate = g.shape(m["gate"]);
  const ir::Shape& up = g.shape(m["up"]);
  if (gate.dims == up.dims && gate.dims == g.shape(m.root).dims)
    return std::nullopt;
  return Miss{MissReason::shape_mismatch,
              "gate " + gate.str() + " and up " + up.str() + " differ (SwiGlu does not broadcast)"};
}

NodeId emit_swiglu(ir::Builder& b, const Match& m) {
  return b.op(OpKind::SwiGlu, {m["gate"], m["up"]}, ir::NoAttrs{}, b.graph().node(m.root).name);
}

/// Whether a product is x W^T ([N, K] weight, the HF projection spelling) or x W ([K, N] weight,
/// as ONNX exports store it): both fuse, with weights_kn for the second.
bool is_projection(const ir::MatMulAttrs& a) {
  return !a.transpose_a;
}

/// A MatMul x W^T or x W against a 2-D weight, captured as \p mm.
Pat projection(const char* x, const char* w, bool same_x, const char* mm) {
  Pat p = Pat::op(OpKind::MatMul, {same_x ? Pat::same(x) : Pat::any().bind(x), Pat::any().bind(w)});
  p.bind(mm);
  p.attr<ir::MatMulAttrs>(is_projection, "the product transposes x (not x W^T or x W)");
  p.where([](const Graph& g, NodeId id) { return g.shape(g.node(id).inputs[1]).rank() == 2; },
          MissReason::shape_mismatch, "the weight is not 2-D ([N, K] or [K, N])");
  p.one_use();
  return p;
}

/// The gate / up products (the sigmoid spelling captures the gate product as "gate").
NodeId gate_product(const Match& m) {
  return m.has("gate_mm") ? m["gate_mm"] : m["gate"];
}
bool weights_kn(const Graph& g, NodeId product) {
  return !g.node(product).attr<ir::MatMulAttrs>().transpose_b;
}

std::optional<Miss> same_weights(const Graph& g, const Match& m) {
  if (weights_kn(g, gate_product(m)) != weights_kn(g, m["up_mm"]))
    return Miss{MissReason::attribute_mismatch,
                "one product reads a [N, K] weight (x W^T), the other a [K, N] one (x W)"};
  const ir::Shape& wg = g.shape(m["w_gate"]);
  const ir::Shape& wu = g.shape(m["w_up"]);
  if (wg == wu)
    return std::nullopt;
  return Miss{MissReason::shape_mismatch,
              "gate weight " + wg.str() + " and up weight " + wu.str() + " differ"};
}

NodeId emit_swiglu_matmul(ir::Builder& b, const Match& m) {
  ir::SwiGluMatMulAttrs a;
  a.weights_kn = weights_kn(b.graph(), gate_product(m));
  return b.op(OpKind::SwiGluMatMul, {m["x"], m["w_gate"], m["w_up"]}, a,
              b.graph().node(m.root).name);
}

} // namespace

std::vector<Pattern> swiglu_patterns() {
  std::vector<Pattern> out;
  {
    Pattern p;
    p.name = "swiglu";
    p.root = Pat::op(OpKind::Mul, {Pat::op(OpKind::Silu, {Pat::any().bind("gate")}).one_use(),
                                   Pat::any().bind("up")});
    p.root.float_dtype();
    p.benefit = 2;
    p.check = same_dims;
    p.emits = {OpKind::SwiGlu};
    p.rewrite = emit_swiglu;
    out.push_back(std::move(p));
  }
  {
    // gate * sigmoid(gate) * up, as exporters spell SiLU.
    Pattern p;
    p.name = "swiglu_sigmoid";
    Pat silu = Pat::op(OpKind::Mul, {Pat::any().bind("gate"),
                                     Pat::op(OpKind::Sigmoid, {Pat::same("gate")}).one_use()});
    silu.one_use();
    p.root = Pat::op(OpKind::Mul, {std::move(silu), Pat::any().bind("up")});
    p.root.float_dtype();
    p.check = same_dims;
    p.emits = {OpKind::SwiGlu};
    p.rewrite = emit_swiglu;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Pattern> swiglu_matmul_patterns() {
  std::vector<Pattern> out;
  auto add = [&](std::string name, Pat root) {
    Pattern p;
    p.name = std::move(name);
    p.root = std::move(root);
    p.root.float_dtype();
    p.check = same_weights;
    p.emits = {OpKind::SwiGluMatMul};
    p.rewrite = emit_swiglu_matmul;
    out.push_back(std::move(p));
  };
  // silu(x Wg^T) * (x Wu^T), or silu(x Wg) * (x Wu)
  add("swiglu_matmul",
      Pat::op(OpKind::Mul,
              {Pat::op(OpKind::Silu, {projection("x", "w_gate", false, "gate_mm")}).one_use(),
               projection("x", "w_up", true, "up_mm")}));
  // (x Wg^T) * sigmoid(x Wg^T) * (x Wu^T): the gate product is read twice, both times inside
  // the pattern.
  {
    Pat gate = Pat::op(OpKind::MatMul, {Pat::any().bind("x"), Pat::any().bind("w_gate")});
    gate.bind("gate");
    gate.attr<ir::MatMulAttrs>(is_projection, "the product transposes x (not x W^T or x W)");
    gate.where([](const Graph& g, NodeId id) { return g.shape(g.node(id).inputs[1]).rank() == 2; },
               MissReason::shape_mismatch, "the weight is not 2-D ([N, K] or [K, N])");
    gate.where([](const Graph& g, NodeId id) { return g.use_count(id) == 2; },
               MissReason::multiple_consumers, "the gate product has uses besides x * sigmoid(x)");
    Pat silu = Pat::op(OpKind::Mul,
                       {std::move(gate), Pat::op(OpKind::Sigmoid, {Pat::same("gate")}).one_use()});
    silu.one_use();
    add("swiglu_matmul_sigmoid",
        Pat::op(OpKind::Mul, {std::move(silu), projection("x", "w_up", true, "up_mm")}));
  }
  // SwiGlu(x Wg^T, x Wu^T), when fuse-swiglu ran first.
  add("swiglu_matmul_of_swiglu",
      Pat::op(OpKind::SwiGlu, {projection("x", "w_gate", false, "gate_mm"),
                               projection("x", "w_up", true, "up_mm")}));
  return out;
}

} // namespace rlx::fusion
