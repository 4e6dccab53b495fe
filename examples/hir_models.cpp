// hir_models.cpp: the main job until `rlx demo` exists. Builds a BERT encoder layer and a LLaMA
// decoder block as HIR graphs with symbolic batch and seq, verifies and prints them, lowers them to
// MIR, binds batch=1 seq=8 and evaluates them with the reference interpreter on seeded random
// inputs and weights.
#include <rlx/ir/builder.hpp>
#include <rlx/ir/hir.hpp>
#include <rlx/ir/module.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/ir/text.hpp>
#include <rlx/ir/verify.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace rlx::ir;

/// Deterministic uniform numbers in [-1, 1) (splitmix64), the same on every platform.
class Rng {
public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  double next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  }

private:
  std::uint64_t s_;
};

/// A tensor of \p type (symbols bound by \p b) filled with uniform numbers in [-scale, scale);
/// LayerNorm / RMSNorm gains are drawn around 1.
Tensor random_tensor(const std::string& name, const Shape& type, const Bindings& b, Rng& rng) {
  Tensor t(type.bind(b));
  const bool gain = name.find("norm") != std::string::npos || name.ends_with("_g");
  const double scale = type.rank() == 2 && !gain ? 0.1 : 0.5;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, (gain ? 1.0 : 0.0) + scale * rng.next());
  return t;
}

const Dim kBatch = Dim::sym("batch");
const Dim kSeq = Dim::sym("seq");

/// One BERT-base layer: hidden 768, 12 heads, FFN 3072, GELU, post-norm, HF parameter names.
Graph bert_layer() {
  const std::int64_t E = 768, F = 3072;
  Graph g("bert_layer");
  Builder b(g);
  std::vector<NodeId> in{b.input("hidden_states", Shape({kBatch, kSeq, Dim(E)}))};
  auto p = [&](const std::string& name, std::vector<std::int64_t> sizes) {
    in.push_back(b.param("layer.0." + name, Shape::of(sizes)));
  };
  p("attention.self.query.weight", {E, E});
  p("attention.self.query.bias", {E});
  p("attention.self.key.weight", {E, E});
  p("attention.self.key.bias", {E});
  p("attention.self.value.weight", {E, E});
  p("attention.self.value.bias", {E});
  p("attention.output.dense.weight", {E, E});
  p("attention.output.dense.bias", {E});
  p("attention.output.LayerNorm_g", {E});
  p("attention.output.LayerNorm_b", {E});
  p("intermediate.dense.weight", {F, E});
  p("intermediate.dense.bias", {F});
  p("output.dense.weight", {E, F});
  p("output.dense.bias", {E});
  p("output.LayerNorm_g", {E});
  p("output.LayerNorm_b", {E});
  BertLayerAttrs a;
  a.num_heads = 12;
  a.eps = 1e-12;
  a.act = Activation::gelu;
  b.output(b.op(OpKind::BertLayer, in, a, "layer.0"));
  return g;
}

/// One LLaMA block: hidden 512, 8 heads, 2 KV heads (GQA), FFN 1376, HF parameter names.
Graph llama_block() {
  const std::int64_t E = 512, H = 8, KVH = 2, D = E / H, F = 1376;
  Graph g("llama_block");
  Builder b(g);
  std::vector<NodeId> in{b.input("hidden_states", Shape({kBatch, kSeq, Dim(E)}))};
  auto p = [&](const std::string& name, std::vector<std::int64_t> sizes) {
    in.push_back(b.param("layers.0." + name, Shape::of(sizes)));
  };
  p("input_layernorm.weight", {E});
  p("self_attn.q_proj.weight", {H * D, E});
  p("self_attn.k_proj.weight", {KVH * D, E});
  p("self_attn.v_proj.weight", {KVH * D, E});
  p("self_attn.o_proj.weight", {E, H * D});
  p("post_attention_layernorm.weight", {E});
  p("mlp.gate_proj.weight", {F, E});
  p("mlp.up_proj.weight", {F, E});
  p("mlp.down_proj.weight", {E, F});
  LlamaBlockAttrs a;
  a.num_heads = H;
  a.num_kv_heads = KVH;
  a.eps = 1e-6;
  a.rope_theta = 10000.0;
  b.output(b.op(OpKind::LlamaBlock, in, a, "layers.0"));
  return g;
}

/// Node count per op kind, "matmul 6, add 7, ...", in op-table order.
std::string op_counts(const Graph& g) {
  std::map<OpKind, int> counts;
  for (const auto& n : g.nodes())
    ++counts[n.op];
  std::string s;
  for (const auto& [op, c] : counts)
    s += (s.empty() ? "" : ", ") + std::string(op_name(op)) + " " + std::to_string(c);
  return s;
}

void run(Graph hir_graph, std::uint64_t seed) {
  const std::string name = hir_graph.name();
  std::printf("=== %s ===\n", name.c_str());
  Module hir = Module::hir(std::move(hir_graph)); // verifies
  std::printf("HIR (%zu nodes, verified):\n%s\n", hir.graph().size(), print(hir.graph()).c_str());

  Module mir = hir.lower(); // verified, no HIR ops left
  std::printf("MIR (%zu nodes: %s):\n%s\n", mir.graph().size(), op_counts(mir.graph()).c_str(),
              print(mir.graph()).c_str());

  const Bindings bind{{"batch", 1}, {"seq", 8}};
  Graph bound = mir.graph().bind(bind);
  verify(bound, VerifyOptions{.allow_hir = false});
  Rng rng(seed);
  reference::TensorMap inputs, params;
  for (NodeId id : bound.inputs()) {
    const auto& leaf = bound.node(id).attr<LeafAttrs>();
    inputs[leaf.name] = random_tensor(leaf.name, leaf.shape, bind, rng);
  }
  for (NodeId id : bound.params()) {
    const auto& leaf = bound.node(id).attr<LeafAttrs>();
    params[leaf.name] = random_tensor(leaf.name, leaf.shape, bind, rng);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto outputs = reference::evaluate(bound, inputs, params);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    double sum = 0, abs_sum = 0;
    for (std::int64_t k = 0; k < t.numel(); ++k) {
      sum += t.get_f64(k);
      abs_sum += std::abs(t.get_f64(k));
    }
    std::printf("output %zu: %s  sum %.6f  sum|x| %.6f  (reference interpreter, %.1f ms)\n", i,
                t.shape().str().c_str(), sum, abs_sum, ms);
  }
  std::printf("\n");
}

} // namespace

int main() {
  try {
    run(bert_layer(), 1);
    run(llama_block(), 2);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx_example_hir_models: %s\n", e.what());
    return 1;
  }
}
