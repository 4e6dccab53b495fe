// families.hpp: the decomposition table's registration point and helpers shared by the family files
// (private to rlx-ir).
//
// Adding decompositions for a new family of ops: write src/decompose/<family>.cpp defining
// add_<family>_decompositions(), declare it below, and call it once in table.cpp. An op may be set
// by one family only (a second set() throws, so two helpers cannot silently override each other).
#pragma once

#include "rlx/ir/decompose.hpp"

#include <array>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace rlx::ir::decompose_detail {

using Opts = DecomposeOptions;

/// The decompositions of every op kind, preferred first.
class DecompositionTable {
public:
  /// Sets the forms of op \p k, preferred first. Throws rlx::Error when \p k already has forms.
  void set(OpKind k, std::initializer_list<Decomposition> forms);
  /// The forms of op \p k (empty when it has none).
  std::span<const Decomposition> get(OpKind k) const { return forms_[static_cast<std::size_t>(k)]; }

private:
  std::array<std::vector<Decomposition>, kNumOps> forms_;
};

/// A scalar Constant \p v of \p like's element type.
NodeId scalar_like(Builder& b, NodeId like, double v);
/// A copy of node \p id (emitting may reallocate the node list, so never hold a reference).
Node node_copy(Builder& b, NodeId id);
/// True when \p id is of a float type; otherwise sets \p why.
bool float_node(Builder& b, NodeId id, std::string& why);

/// Attention's forward probabilities in [B, H, S, D] form (src/decompose/attention.cpp), shared
/// by attention's decomposition and attention_grad's.
struct AttentionProbs {
  NodeId q, k, v;         ///< [B, H, S, D]; k and v with their heads repeated for GQA
  NodeId p;               ///< softmax probabilities [B, H, Sq, Sk] (invalid: not decomposable)
  NodeId tanh;            ///< tanh(scale q k^T / softcap) when there is a softcap
  double scale = 1.0;     ///< the scores' scale
  std::int64_t group = 1; ///< query heads per KV head
};
/// Sets \p why and \returns an invalid p when the form does not apply.
AttentionProbs attention_probs(Builder& b, const AttentionAttrs& a, NodeId q, NodeId k, NodeId v,
                               NodeId mask, std::string& why);

// One function per family, each in src/decompose/<family>.cpp.
void add_elementwise_decompositions(DecompositionTable& t);
void add_normalization_decompositions(DecompositionTable& t);
void add_attention_decompositions(DecompositionTable& t);
void add_movement_decompositions(DecompositionTable& t);
void add_quantization_decompositions(DecompositionTable& t);
void add_linalg_decompositions(DecompositionTable& t);
void add_control_flow_decompositions(DecompositionTable& t);
void add_fused_decompositions(DecompositionTable& t);             // the fused ops of rlx-fusion
void add_fused_transformer_decompositions(DecompositionTable& t); // fused ops: transformer
void add_region_decompositions(DecompositionTable& t);            ///< fused ops: regions
void add_fused_norm_decompositions(DecompositionTable& t);        ///< fused ops: residual + norm
void add_backward_decompositions(DecompositionTable& t);          ///< backward ops
void add_fused_attention_decompositions(DecompositionTable& t);   ///< fused ops: attention block
void add_conv_backward_decompositions(DecompositionTable& t);     ///< conv / pool backward
void add_fused_layer_decompositions(DecompositionTable& t);       ///< fused ops: transformer layer

} // namespace rlx::ir::decompose_detail
