// activation.hpp: the activation functions a fused product or HIR block applies to its result.
//
// Its own header with nothing but <cstdint>, so that code compiled for several instruction sets
// (rlx-cpu's per-ISA GEMM tile) can name it without including the rest of the IR (attrs.hpp gives
// it its printable names).
#pragma once

#include <cstdint>

namespace rlx::ir {

/// Activation applied by the HIR Linear block, BERT's FFN and a fused product's epilogue.
enum class Activation : std::uint8_t { none, relu, gelu, gelu_tanh, silu, sigmoid, tanh };

} // namespace rlx::ir
