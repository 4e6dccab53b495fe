// device_choice.hpp: `--device auto`: measure each device's cost knobs, predict a graph's run time
// on each with the roofline model (rlx/compile/cost_model.hpp), pick the fastest.
#pragma once

#include "rlx/compile/cost_model.hpp"
#include "rlx/runtime/session.hpp"

#include <string>
#include <vector>

namespace rlx::runtime {

/// Measures the cost knobs of \p session's device by timing three calibration graphs on it (the
/// median of 7 runs after a warm-up): a one-element Add (the per-kernel cost), an f32 Add of 2^22
/// elements (bandwidth) and a 512 x 512 x 512 f32 MatMul (flop rate). Memoised per device for the
/// life of the process.
compile::DeviceCost measure_device_cost(const Session& session);

/// One device's prediction for a graph.
struct DevicePrediction {
  Device device;
  std::string name;         ///< the device's own name
  compile::DeviceCost cost; ///< its measured knobs (zeros when it could not be measured)
  double seconds = 0;       ///< predicted time of one run; infinity when the device cannot run it
  int kernels = 0;          ///< kernels of the graph compiled for it
  std::string why_not;      ///< why it cannot run the graph (empty when it can)
};

/// Compiles \p g with \p bindings (which must bind every symbol) for every available device,
/// measures each device and predicts one run; \returns the predictions, fastest first. A device
/// whose backend cannot compile \p g, or which cannot be measured, comes last with why_not set.
/// Throws Error when no device can run \p g.
std::vector<DevicePrediction> rank_devices(const ir::Graph& g, const ir::Bindings& bindings,
                                           const CompileOptions& opts,
                                           const SessionOptions& session_opts = {});

} // namespace rlx::runtime
