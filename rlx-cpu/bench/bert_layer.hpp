// bert_layer.hpp: a BERT encoder stack (HIR BertLayer blocks) with seeded random weights, shared
// by the CPU benchmarks.
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <cstdint>
#include <random>
#include <string>

namespace rlx::cpu::bench {

/// A BERT encoder of \p layers post-norm layers on [batch, seq, hidden] hidden states.
struct BertConfig {
  std::int64_t layers = 1, batch = 1, seq = 128, hidden = 768, heads = 12, ffn = 3072;
};

/// The graph (input "x", params "l<i>.<name>") and seeded random weights for it.
inline ir::Graph bert_graph(const BertConfig& c, ir::reference::TensorMap& params) {
  ir::Graph g("bert");
  ir::Builder b(g);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto param = [&](const std::string& name, std::vector<std::int64_t> dims, float fill = -1) {
    ir::Tensor t(ir::Shape::of(dims));
    auto d = t.data<float>();
    for (auto& v : d)
      v = fill >= 0 ? fill : normal(rng);
    params[name] = t;
    return b.param(name, ir::Shape::of(dims));
  };
  auto x = b.input("x", ir::Shape::of({c.batch, c.seq, c.hidden}));
  for (std::int64_t l = 0; l < c.layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    std::vector<ir::NodeId> in{x};
    for (const char* n : {"q", "k", "v", "o"}) {
      in.push_back(param(p + "w" + n, {c.hidden, c.hidden}));
      in.push_back(param(p + "b" + n, {c.hidden}));
    }
    in.push_back(param(p + "ln1_g", {c.hidden}, 1.0f));
    in.push_back(param(p + "ln1_b", {c.hidden}, 0.0f));
    in.push_back(param(p + "w1", {c.ffn, c.hidden}));
    in.push_back(param(p + "b1", {c.ffn}));
    in.push_back(param(p + "w2", {c.hidden, c.ffn}));
    in.push_back(param(p + "b2", {c.hidden}));
    in.push_back(param(p + "ln2_g", {c.hidden}, 1.0f));
    in.push_back(param(p + "ln2_b", {c.hidden}, 0.0f));
    ir::BertLayerAttrs a;
    a.num_heads = c.heads;
    x = b.bert_layer(in, a);
  }
  b.output(x);
  return g;
}

/// Multiply-adds × 2 of the encoder's matrix products and attention.
inline double bert_flops(const BertConfig& c) {
  double t = static_cast<double>(c.batch * c.seq);
  double h = static_cast<double>(c.hidden), f = static_cast<double>(c.ffn);
  double s = static_cast<double>(c.seq);
  double per_layer = 2 * t * (4 * h * h + 2 * h * f) + 4 * t * s * h;
  return per_layer * static_cast<double>(c.layers);
}

} // namespace rlx::cpu::bench
