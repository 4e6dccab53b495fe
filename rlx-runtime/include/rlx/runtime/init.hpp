// init.hpp: seeded random parameters and inputs for any graph.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <cstdint>

namespace rlx::runtime {

/// Seeded random values for every Param of \p g (HIR or MIR), with scales chosen by how the
/// parameter is used (read from the lowered graph):
/// - a MatMul weight: uniform in ±1/sqrt(fan_in), fan_in the contracted dim (PyTorch's Linear);
/// - a bias added to a MatMul result: uniform in ±1/sqrt(fan_in) of that MatMul;
/// - a LayerNorm / RMSNorm gain: 1 + uniform ±0.1; a LayerNorm shift: uniform ±0.1 (near the
///   identity, but not exactly, so tests see gains and shifts);
/// - a Gather table (embedding): normal(0, 1);
/// - a Conv2d weight: uniform ±1/sqrt(C/groups * KH * KW);
/// - anything else: uniform ±0.1.
/// Each parameter's values depend only on \p seed and its name. Params must have static shapes.
TensorMap init_params(const ir::Graph& g, std::uint64_t seed);

/// Seeded random values for every Input of \p g with its symbols bound by \p bindings: floats
/// normal(0, 1); integer indices of a Gather uniform in [0, table rows); other integer and bool
/// inputs (masks) all ones. Throws Error when a dim stays symbolic.
TensorMap random_inputs(const ir::Graph& g, const ir::Bindings& bindings, std::uint64_t seed);

} // namespace rlx::runtime
