// weight_concat.hpp (private): a Concat of weights (Params) along any axis, such as the packed
// Q / K / V weight of fuse-shared-input-matmul, held as a derived copy of each of its weights in
// the weight region: computed when the weights are bound or written, never per run.
#pragma once

#include "rlx/compile/weights.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>

namespace rlx::cpu {

/// Whether node \p id is a Concat of static shape whose operands are all Params.
bool is_weight_concat(const ir::Graph& g, ir::NodeId id);

/// The address of the concatenation computed by Concat node \p id (is_weight_concat), kept current
/// by \p region: every operand weight gets a derived copy that writes its chunk of every row of one
/// shared buffer (and can restore its plain bytes from them). Executables compiling the same
/// concatenation against \p region share the buffer. \p reader is the executable; \p new_bytes is
/// increased by the buffer's size.
std::byte* weight_concat(compile::WeightRegion& region, const ir::Graph& g, ir::NodeId id,
                         const void* reader, std::int64_t& new_bytes);

} // namespace rlx::cpu
