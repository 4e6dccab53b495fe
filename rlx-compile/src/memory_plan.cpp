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

/// The in-place updates of a graph (Graph::aliases) resolved to nodes: writer[n] is the Param that
/// node n's kernel writes in place (invalid for every other node).
struct Aliases {
  std::vector<NodeId> writes; ///< by node id: the updated Param, or invalid
  bool any = false;
};

/// Whether \p w may write its result over operand \p operand while reading it: an elementwise or
/// broadcasting op reads element i of a same-sized operand only to produce element i.
/// A single-result ElementwiseRegion is such an op too: its body is elementwise / broadcast ops
/// over the region's iteration space (rlx-fusion makes an in-place update a region's only result).
bool elementwise_over(const ir::Graph& g, NodeId w, NodeId operand) {
  const ir::FusionKind k = ir::op_info(g.node(w).op).fusion;
  const bool region = g.node(w).op == ir::OpKind::ElementwiseRegion && !g.shape(w).is_tuple();
  return (region || k == ir::FusionKind::elementwise || k == ir::FusionKind::broadcast) &&
         g.shape(operand).numel() == g.shape(w).numel() &&
         g.shape(operand).dtype == g.shape(w).dtype;
}

/// Resolves Graph::aliases and orders the schedule so each in-place write comes after every other
/// read of the Param it updates: the nodes that do not depend on an updated value run first (in
/// list order), then the writers and what depends on them. Throws Error when no order can work
/// (a node reads a Param's old value but depends on an updated one, the writer is a leaf or a
/// view, or reads the Param other than elementwise).
Aliases resolve_aliases(const ir::Graph& g, std::vector<NodeId>& schedule) {
  Aliases a;
  a.writes.assign(g.size(), NodeId{});
  std::vector<NodeId> param_of; // the aliased Params, for the reader check
  for (const ir::OutputAlias& al : g.aliases()) {
    const std::string what = "plan_memory: output " + std::to_string(al.output) +
                             " updates param '" + al.param + "' in place";
    if (al.output >= g.outputs().size())
      throw Error(what + ", but the graph has " + std::to_string(g.outputs().size()) + " outputs");
    const NodeId p = g.find_leaf(al.param, true);
    if (!p.valid())
      throw Error(what + ", but the graph has no such param");
    const NodeId w = g.outputs()[al.output];
    if (w == p)
      continue; // the param unchanged: nothing to write
    if (ir::is_leaf(g.node(w).op) || is_pure_view(g, w))
      throw Error(what + ", but the output is " + ir::describe(g, w) +
                  " (a leaf or a view runs no kernel that could write the param)");
    if (a.writes[w.v].valid())
      throw Error(what + ", but " + ir::describe(g, w) + " already updates another param");
    a.writes[w.v] = p;
    a.any = true;
  }
  if (!a.any)
    return a;
  // Nodes downstream of a writer (the writers included) run last.
  std::vector<char> late(g.size(), 0);
  for (NodeId id : g.ids()) {
    late[id.v] = a.writes[id.v].valid();
    for (NodeId in : g.node(id).inputs)
      late[id.v] = late[id.v] || late[in.v];
  }
  schedule.clear();
  for (int pass = 0; pass < 2; ++pass)
    for (NodeId id : g.ids())
      if (late[id.v] == pass)
        schedule.push_back(id);
  // The buffer each node's value lives in (views resolve to their root).
  std::vector<NodeId> root(g.size());
  for (NodeId id : g.ids())
    root[id.v] = is_pure_view(g, id) ? root[g.node(id).inputs[0].v] : id;
  std::vector<NodeId> writer_of(g.size()); // by Param id
  for (NodeId id : g.ids())
    if (a.writes[id.v].valid())
      writer_of[a.writes[id.v].v] = id;
  for (NodeId id : g.ids()) {
    if (is_pure_view(g, id))
      continue; // views read nothing themselves; their readers are checked
    for (NodeId in : g.node(id).inputs) {
      const NodeId p = root[in.v];
      const NodeId w = writer_of[p.v];
      if (!w.valid())
        continue;
      if (id == w) {
        if (in != p || !elementwise_over(g, w, p))
          throw Error("plan_memory: " + ir::describe(g, w) + " updates param '" +
                      g.node(p).attr<ir::LeafAttrs>().name +
                      "' in place but reads it other than elementwise");
        continue;
      }
      if (late[id.v])
        throw Error("plan_memory: " + ir::describe(g, id) + " reads param '" +
                    g.node(p).attr<ir::LeafAttrs>().name +
                    "' but depends on an in-place update, so it would run after " +
                    ir::describe(g, w) + " overwrote the param");
    }
  }
  for (std::size_t i = 0; i < g.outputs().size(); ++i) {
    const NodeId p = root[g.outputs()[i].v];
    if (writer_of[p.v].valid())
      throw Error("plan_memory: output " + std::to_string(i) + " is param '" +
                  g.node(p).attr<ir::LeafAttrs>().name +
                  "' (or a view of it), which the graph also updates in place");
  }
  return a;
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
  const Aliases aliases = resolve_aliases(g, plan.schedule);
  const detail::Liveness lv = detail::analyze_liveness(g, plan.schedule);
  plan.assignments.resize(g.size());

  // Storage class of every buffer owner (views are filled in last).
  for (NodeId id : plan.schedule) {
    if (lv.view[id.v])
      continue;
    ir::BufferSlot& s = plan.assignments[id.v];
    s.storage =
        aliases.any && aliases.writes[id.v].valid() ? Storage::aliased : owner_storage(g, lv, id);
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
  // An in-place update's buffer is its Param's.
  for (NodeId id : plan.schedule)
    if (plan.assignments[id.v].storage == Storage::aliased) {
      const NodeId p = aliases.writes[id.v];
      plan.assignments[id.v].offset = plan.assignments[p.v].offset;
      plan.assignments[id.v].view_of = p;
    }

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
