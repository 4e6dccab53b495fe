// kernel_work.hpp (private): the work a kernel record does, for the profile's rates.
#pragma once

#include "rlx/ir/graph.hpp"

namespace rlx::cpu {

/// What one run of node \p id must do at least: its floating-point operations (matrix products,
/// attention, convolution; 0 for every other op) and the bytes of its operands and result.
struct KernelWork {
  double flops = 0; ///< 2 per multiply-add of the products it computes
  double bytes = 0; ///< operand bytes read plus result bytes written, each once
};

/// The work of node \p id of \p g (static shapes).
KernelWork kernel_work(const ir::Graph& g, ir::NodeId id);

} // namespace rlx::cpu
