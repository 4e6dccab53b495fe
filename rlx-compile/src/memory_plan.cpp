// memory_plan.cpp: the view predicate and plan_memory (pinned regions, heap-placed temporaries).
#include "rlx/compile/memory_plan.hpp"

#include "heap.hpp"
#include "liveness.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/size.hpp"

#include <array>

namespace rlx::compile {
namespace {

using ir::NodeId;
using ir::OpKind;
using ir::Storage;

/// A Narrow selects one contiguous block when every dim before its axis is a static 1 (an axis-0
/// narrow is the common case) or when it keeps the whole axis.
bool narrow_is_contiguous(const ir::Shape& src, const ir::NarrowAttrs& a) {
  auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, src.rank(), "narrow"));
  if (src[ax].is_static() && a.start == 0 && a.length == src[ax].size())
    return true;
  for (std::size_t d = 0; d < ax; ++d)
    if (!src[d].is_static() || src[d].size() != 1)
      return false;
  return true;
}

/// \p bytes rounded up to \p align, the sum checked (sizes come from shapes, which may be huge).
std::int64_t aligned_bytes(std::int64_t bytes, std::int64_t align) {
  ir::checked_add(bytes, align - 1, "plan_memory: buffer size"); // align_up's sum, checked
  return detail::align_up(bytes, align);
}

/// The storage class of a buffer-owning node.
Storage owner_storage(const ir::Graph& g, const detail::Liveness& lv, NodeId id) {
  switch (g.node(id).op) {
  case OpKind::Input:
    return Storage::input;
  case OpKind::Param:
    return Storage::param;
  case OpKind::Constant:
    return Storage::constant;
  default:
    break;
  }
  if (!lv.needed[id.v])
    return Storage::none;
  return lv.output_root[id.v] ? Storage::output : Storage::temp;
}

} // namespace

bool is_pure_view(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.inputs.size() != 1 || !n.inputs[0].valid() || n.inputs[0].v >= g.size())
    return false;
  const ir::Shape& src = g.shape(n.inputs[0]);
  switch (n.op) {
  case OpKind::Reshape:
    return true;
  case OpKind::Cast: {
    const auto* a = std::get_if<ir::CastAttrs>(&n.attrs);
    return a && a->to == src.dtype;
  }
  case OpKind::Narrow: {
    const auto* a = std::get_if<ir::NarrowAttrs>(&n.attrs);
    return a && narrow_is_contiguous(src, *a);
  }
  default:
    return ir::has_flag(n.op, ir::kView);
  }
}

std::int64_t view_byte_offset(const ir::Graph& g, ir::NodeId id) {
  if (!is_pure_view(g, id))
    throw Error("view_byte_offset: " + ir::describe(g, id) + " is not a pure view");
  const ir::Node& n = g.node(id);
  const ir::Shape& src = g.shape(n.inputs[0]);
  if (n.op == OpKind::Get)
    return src.part_offset(n.attr<ir::GetAttrs>().index); // its part of the tuple's buffer
  if (n.op != OpKind::Narrow)
    return 0; // Reshape, same-dtype Cast and table-marked views alias at their operand's start
  const auto& a = n.attr<ir::NarrowAttrs>();
  auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, src.rank(), "narrow"));
  std::int64_t inner = static_cast<std::int64_t>(ir::dtype_size(src.dtype));
  for (std::size_t d = ax + 1; d < src.rank(); ++d)
    inner *= src[d].size();
  return a.start * inner;
}

ir::MemoryPlan plan_memory(const ir::Graph& g, const PlanOptions& opts) {
  detail::require_alignment(opts.alignment, "plan_memory");
  detail::require_static(g, "plan_memory");
  const std::int64_t align = opts.alignment;

  ir::MemoryPlan plan;
  plan.alignment = align;
  plan.schedule = g.ids();
  const detail::Liveness lv = detail::analyze_liveness(g, plan.schedule);
  plan.assignments.resize(g.size());

  // Storage class of every buffer owner (views are filled in last).
  for (NodeId id : plan.schedule) {
    if (lv.view[id.v])
      continue;
    ir::BufferSlot& s = plan.assignments[id.v];
    s.storage = owner_storage(g, lv, id);
    s.bytes = s.storage == Storage::none ? 0 : g.shape(id).bytes();
  }

  // Pinned regions first, one class after another, each slot aligned.
  std::int64_t cursor = 0;
  for (Storage cls : std::array{Storage::param, Storage::constant, Storage::input, Storage::output})
    for (NodeId id : plan.schedule) {
      ir::BufferSlot& s = plan.assignments[id.v];
      if (lv.view[id.v] || s.storage != cls)
        continue;
      s.offset = cursor;
      cursor = ir::checked_add(cursor, aligned_bytes(s.bytes, align), "plan_memory: arena size");
    }
  plan.pinned_bytes = cursor;

  // Temporaries and kernel scratch share the rest by liveness.
  std::vector<detail::HeapBuffer> bufs;
  std::vector<NodeId> owner; // temporaries: the node; scratch: the node, with is_scratch set
  std::vector<bool> is_scratch;
  for (NodeId id : plan.schedule) {
    const ir::BufferSlot& s = plan.assignments[id.v];
    if (lv.view[id.v] || s.storage != Storage::temp)
      continue;
    bufs.push_back({aligned_bytes(s.bytes, align), lv.first[id.v], lv.last[id.v], 0});
    owner.push_back(id);
    is_scratch.push_back(false);
  }
  if (opts.scratch_bytes) {
    for (NodeId id : plan.schedule) {
      // Leaves, views and dead nodes run no kernel, so they need no scratch.
      if (lv.view[id.v] || !lv.needed[id.v] || ir::is_leaf(g.node(id).op))
        continue;
      std::int64_t bytes = opts.scratch_bytes(g, id);
      if (bytes < 0)
        throw Error("plan_memory: scratch_bytes of " + ir::describe(g, id) + " is negative (" +
                    std::to_string(bytes) + ")");
      if (bytes == 0)
        continue;
      plan.scratch.push_back({id, 0, bytes});
      bufs.push_back({aligned_bytes(bytes, align), lv.pos[id.v], lv.pos[id.v], 0});
      owner.push_back(id);
      is_scratch.push_back(true);
    }
  }
  // No placement reaches past the sum of every size: check that sum once, so no offset overflows.
  std::int64_t bound = plan.pinned_bytes;
  for (const auto& b : bufs)
    bound = ir::checked_add(bound, b.size, "plan_memory: arena size");
  const std::int64_t heap = detail::place_buffers(bufs, opts.strategy);
  std::size_t next_scratch = 0;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    std::int64_t offset = plan.pinned_bytes + bufs[i].offset;
    if (is_scratch[i])
      plan.scratch[next_scratch++].offset = offset;
    else
      plan.assignments[owner[i].v].offset = offset;
  }
  plan.arena_size = plan.pinned_bytes + heap;
  plan.lower_bound = plan.pinned_bytes + detail::peak_live_bytes(bufs, lv.steps);

  // Views alias their root's buffer at the accumulated byte offset.
  for (NodeId id : plan.schedule) {
    if (!lv.view[id.v])
      continue;
    ir::BufferSlot& s = plan.assignments[id.v];
    NodeId root = lv.root[id.v];
    const ir::BufferSlot& r = plan.assignments[root.v];
    if (!lv.needed[id.v] || r.storage == Storage::none)
      continue; // a dead view: nothing reads it
    s.storage = Storage::view;
    s.view_of = root;
    s.bytes = g.shape(id).bytes();
    s.offset = r.offset + lv.view_offset[id.v];
  }
#ifndef NDEBUG
  check_memory_plan(g, plan);
#endif
  return plan;
}

} // namespace rlx::compile
