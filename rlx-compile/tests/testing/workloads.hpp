// workloads.hpp: the model graphs the rlx-compile tests and benchmarks run on: BERT, LLaMA and MLP
// stacks as HIR (small by default), the planner's acceptance workloads at full size, and seeded
// random DAGs.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rlx::compile::testing {

/// A HIR stack of \p layers BERT post-norm encoder layers on x [batch, seq, hidden] (symbolic
/// batch and seq) with HuggingFace-shaped weights, optionally with a padding mask input
/// [batch, seq]; the output is the last hidden state.
ir::Graph bert_hir(int layers = 1, std::int64_t hidden = 16, std::int64_t heads = 2,
                   std::int64_t ffn = 32, bool padding_mask = false,
                   ir::DType dtype = ir::DType::f32);
/// A HIR stack of \p blocks LLaMA pre-norm decoder blocks (RMSNorm, RoPE, grouped-query causal
/// attention, SwiGLU) on x [batch, seq, hidden] (symbolic batch and seq).
ir::Graph llama_hir(int blocks = 1, std::int64_t hidden = 16, std::int64_t heads = 4,
                    std::int64_t kv_heads = 2, std::int64_t ffn = 24,
                    ir::DType dtype = ir::DType::f32);
/// A HIR MLP: Linear + ReLU between \p sizes, logits last; input [batch, sizes[0]] (symbolic
/// batch).
ir::Graph mlp_hir(const std::vector<std::int64_t>& sizes = {8, 16, 16, 4},
                  ir::DType dtype = ir::DType::f32);

/// One named workload of the memory planner's acceptance bar.
struct Workload {
  std::string name;   ///< "bert-base", "llama" or "mlp"
  ir::Graph hir;      ///< the model as HIR, with symbolic batch (and seq)
  ir::Bindings sizes; ///< the static sizes it is measured at
  ir::Graph mir;      ///< hir bound to sizes, then lowered to MIR
};

/// The three acceptance workloads: BERT-base (12 layers, hidden 768, 12 heads, FFN 3072, seq 128,
/// batch 1), LLaMA (4 blocks, hidden 512, 8 heads, 2 kv heads, FFN 1376, seq 128, batch 1) and an
/// MLP (784-512-512-10, batch 64).
std::vector<Workload> acceptance_workloads();

/// A seeded random DAG of elementwise, broadcast, matmul, reshape, narrow (both kinds), concat,
/// reduce, cast (same and other dtype) and transpose ops over input / param / constant leaves,
/// with 1-3 outputs (sometimes a view, a leaf, or the same node twice). The same seed always
/// gives the same graph.
ir::Graph random_graph(std::uint32_t seed);

} // namespace rlx::compile::testing
