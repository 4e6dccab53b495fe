// decompose.hpp: the decomposition table legalisation and the lowering passes use (private).
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/ir/builder.hpp"

#include <span>
#include <string>

namespace rlx::compile::detail {

/// One decomposition: emits into \p b's graph nodes computing the value of node \p id from other
/// ops, and \returns the node holding it (same type as \p id). When it does not apply to this node
/// (a dtype it cannot express, sizes it cannot compute), it emits nothing useful, sets \p why and
/// \returns an invalid id. Implementations copy what they read from the node before emitting:
/// emitting may reallocate the node list.
using DecomposeFn = ir::NodeId (*)(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                                   std::string& why);

/// The decompositions of op \p k, preferred first (empty when there is none).
std::span<const DecomposeFn> decompositions(ir::OpKind k);

/// If -> Where(pred, then, else) with both branches inlined on the captures.
ir::NodeId lower_if(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                    std::string& why);
/// While -> max_iterations guarded copies of cond and body.
ir::NodeId lower_while(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                       std::string& why);
/// DotGeneral -> Transpose / Reshape / MatMul.
ir::NodeId lower_dot_general(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                             std::string& why);

// fused ops: transformer (decompositions_fused_xf.cpp)
/// SwiGlu -> Mul(Silu(gate), up).
ir::NodeId swiglu_by_silu(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                          std::string& why);
/// SwiGluMatMul -> two MatMuls (transpose_b) and SwiGlu.
ir::NodeId swiglu_matmul_by_matmul(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                                   std::string& why);
/// SwiGluMatMul -> two MatMuls (transpose_b), Silu and Mul.
ir::NodeId swiglu_matmul_by_primitives(ir::Builder& b, ir::NodeId id,
                                       const fusion::PassOptions& opts, std::string& why);

} // namespace rlx::compile::detail
