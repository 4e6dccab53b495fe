// memory_plan.hpp: the memory planner (liveness + best-fit heap placement + view aliasing).
//
// The plan lays out one arena, allocated once per executable:
//
//   [0, pinned_bytes)            regions of their own, in this order: params, constants, inputs,
//                                outputs (each slot aligned). Never shared, so weights, inputs and
//                                results survive every run and nothing overwrites them.
//   [pinned_bytes, arena_size)   temporaries and kernel scratch, placed by best-fit over buffers
//                                sorted by decreasing size (XLA's heap simulator), sharing bytes
//                                whenever their live ranges do not meet.
//
// Liveness runs over the schedule (the node list): a buffer lives from the step of the node that
// writes it to the last step of a node that reads it or any view of it (closed ranges: a kernel's
// result never shares bytes with its operands). Views (is_pure_view) own no bytes: they alias their
// root's buffer at view_byte_offset, chains of views resolving to the root.
//
// Decisions:
// - A tuple-typed node (an op with several results) owns one buffer of Shape::bytes() holding
//   every part at Shape::part_offset(i) (each part 64-byte aligned inside it). Its Gets are pure
//   views of their parts, so the buffer lives from the tuple node's step to the last reader of
//   any of its Gets; a Get that is a graph output pins the whole tuple buffer as an output.
// - A node with effects (ir::has_effects) is needed even when nothing reads it, so it gets
//   storage and its kernel runs.
// - A graph output that is a view keeps Storage::view; its root is promoted to Storage::output (a
//   pinned region), so the output is never a copy and never clobbered. A view of an input, param
//   or constant stays inside that region (those are never written while the graph runs).
// - A node whose value nobody observes (not an output, read by no needed node) gets
//   Storage::none: backends run no kernel for it. Inputs and params always get regions (they are
//   set by name), constants too (they are filled once at compile time).
// - lower_bound = pinned_bytes + the peak, over steps, of the aligned sizes of the temporaries and
//   scratch live at that step. No placement can do better, so arena_size - lower_bound is the
//   waste; the temporaries-only ratio (arena_size - pinned_bytes) / (lower_bound - pinned_bytes)
//   is the planner's quality figure (pinned regions would otherwise dominate it).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <cstdint>
#include <functional>

namespace rlx::compile {

/// Options of plan_memory().
struct PlanOptions {
  std::int64_t alignment = 64; ///< every slot offset is a multiple of this (power of two)
  /// Scratch bytes node \p id's kernel needs while it runs (planned as a temporary live only
  /// during that node); empty = none. Not asked for leaves, views and dead nodes (no kernel).
  std::function<std::int64_t(const ir::Graph&, ir::NodeId)> scratch_bytes;
  /// Placement strategy: best_fit is the default; first_fit is kept for comparison only.
  enum class Strategy { best_fit, first_fit } strategy = Strategy::best_fit;
};

/// True iff node \p id's value is its operand's buffer at a byte offset (Reshape, same-dtype Cast,
/// a Narrow that selects a contiguous block, and any op the table marks is-view), so backends emit
/// no kernel for it. The one predicate backends and the planner share.
///
/// A Narrow is contiguous when every dim before its axis is a static 1 (an axis-0 narrow always
/// is) or when it keeps the whole axis; a Narrow of an inner axis of a larger tensor is a strided
/// slice and is not a view.
bool is_pure_view(const ir::Graph& g, ir::NodeId id);
/// For a pure view: its byte offset into the operand's buffer (Narrow: start x the bytes of one
/// slice along the axis; Get: its part's Shape::part_offset in the tuple's buffer; every other
/// view: 0). Throws Error when \p id is not a pure view.
std::int64_t view_byte_offset(const ir::Graph& g, ir::NodeId id);

/// Plans every buffer of the static graph \p g (symbols bound) in schedule order (the node list).
/// Inputs, params, constants and outputs get regions of their own; temporaries share by liveness.
/// Throws Error on a symbolic graph, a bad alignment, a dangling or cyclic edge, or a negative
/// scratch size.
ir::MemoryPlan plan_memory(const ir::Graph& g, const PlanOptions& opts = {});

/// Checks a plan against its graph: every live pair of buffers disjoint, views inside their
/// roots, alignment respected. Throws Error naming the two nodes on a violation.
///
/// Also checked: the schedule runs every node once with operands first; storage kinds match the
/// nodes (leaves, outputs pinned, views only for pure views, no needed node without storage);
/// every slot has its value's size and lies in the arena; scratch belongs to nodes that run.
void check_memory_plan(const ir::Graph& g, const ir::MemoryPlan& plan);

} // namespace rlx::compile
