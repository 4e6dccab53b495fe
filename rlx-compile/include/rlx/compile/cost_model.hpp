// cost_model.hpp: a roofline cost model of a compiled (LIR) graph on one device. Each kernel takes
// the longer of its arithmetic at the device's flop rate and its memory traffic at the device's
// bandwidth, plus a fixed cost per kernel. The knobs are measured per device (rlx-runtime's
// measure_device_cost); `--device auto` picks the device with the lowest prediction.
#pragma once

#include "rlx/ir/module.hpp"

#include <string>
#include <vector>

namespace rlx::compile {

/// The measured knobs of one device.
struct DeviceCost {
  double flops_per_s = 0; ///< sustained f32 rate of a large GEMM (2 flops per multiply-add)
  double bytes_per_s = 0; ///< sustained traffic of a large elementwise op (bytes read + written)
  double launch_s = 0;    ///< fixed cost of one kernel (dispatch, launch, synchronisation)
  /// "412.0 GFLOP/s, 9.1 GB/s, 3.2 us per kernel".
  std::string str() const;
};

/// The work of one kernel of a compiled graph.
struct KernelWork {
  ir::NodeId node;
  double flops = 0; ///< 2 per multiply-add of a contraction; 1 per output element otherwise
  double bytes = 0; ///< bytes of every operand read plus the bytes written
};

/// One entry per kernel of \p lir: every scheduled node that is not a leaf and owns its buffer
/// (views such as Reshape and Get run no kernel). Throws Error when a size is symbolic.
std::vector<KernelWork> kernel_work(const ir::Module& lir);

/// Predicted seconds of one run of \p lir on a device with knobs \p cost: the sum over
/// kernel_work of max(flops / flops_per_s, bytes / bytes_per_s) + launch_s. Throws Error when a
/// knob is not positive.
double predict_seconds(const ir::Module& lir, const DeviceCost& cost);

} // namespace rlx::compile
