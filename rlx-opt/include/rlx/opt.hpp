// opt.hpp: the rlx-opt umbrella header, re-exporting the optimisation packages under rlx::opt
// (fusion, autodiff, compile).
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/autodiff/jvp.hpp"
#include "rlx/autodiff/transforms.hpp"
#include "rlx/autodiff/vjp_rules.hpp"
#include "rlx/autodiff/vmap.hpp"
#include "rlx/compile/backend.hpp"
#include "rlx/compile/cost_model.hpp"
#include "rlx/compile/inspect.hpp"
#include "rlx/compile/legalize.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/compile/svg.hpp"
#include "rlx/compile/training.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/node_key.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/fusion/pattern.hpp"
#include "rlx/fusion/report.hpp"

namespace rlx::opt {

/// Pass infrastructure, pattern rewriting and the fusion report (rlx-fusion).
namespace fusion = ::rlx::fusion;
/// The compile pipeline, passes, legalisation, memory planner and inspection (rlx-compile).
namespace compile = ::rlx::compile;
/// Differentiation and batching (rlx-autodiff): grad_with_loss, jvp, hvp, nth_order_grad, vmap,
/// promote_params_to_inputs, prepare_graph_for_ad, their module forms, and the VJP / JVP /
/// batching rule tables.
namespace autodiff = ::rlx::autodiff;

} // namespace rlx::opt
