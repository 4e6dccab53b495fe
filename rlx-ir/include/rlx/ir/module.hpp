// module.hpp: the compile stages HIR → MIR → LIR and the memory plan LIR carries.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlx::ir {

/// Which compile stage a module is in.
enum class Stage : std::uint8_t {
  hir, ///< may hold HIR block ops
  mir, ///< primitive (and fused) ops only
  lir, ///< MIR plus a memory plan and a schedule
};
std::string_view stage_name(Stage s);

/// Where a node's value lives at run time.
enum class Storage : std::uint8_t {
  none,     ///< not materialised (dead, or a value nobody reads)
  input,    ///< a graph input: an arena region of its own, never shared
  param,    ///< a weight: an arena region of its own, never shared
  constant, ///< a constant: an arena region of its own, filled once at compile time
  output,   ///< a graph output: an arena region of its own, never shared
  temp,     ///< a temporary: an arena region shared with temporaries whose lifetimes don't overlap
  view,     ///< aliases another node's buffer at a byte offset (is_pure_view)
  /// A graph output that updates a Param in place (Graph::aliases): its kernel writes the Param's
  /// buffer (view_of names the Param; offset and bytes are the Param's slot).
  aliased,
};
std::string_view storage_name(Storage s);

/// The buffer of one node.
struct BufferSlot {
  Storage storage = Storage::none;
  std::int64_t offset = 0; ///< byte offset in the arena (for views: root offset + view offset)
  std::int64_t bytes = 0;
  /// For views: the node owning the aliased buffer (chains resolve to the root); for an aliased
  /// output: the Param it updates.
  NodeId view_of;
};

/// Kernel scratch memory of one node, planned like a temporary live only during that node.
struct ScratchSlot {
  NodeId node;
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
};

/// The output of the memory planner: one arena of arena_size bytes, allocated once.
struct MemoryPlan {
  std::int64_t arena_size = 0;
  std::int64_t lower_bound = 0; ///< peak bytes live at once: the best any placement could do
  /// The arena's first pinned_bytes hold the regions of their own (params, constants, inputs,
  /// outputs); temporaries and scratch share [pinned_bytes, arena_size). Both arena_size and
  /// lower_bound include pinned_bytes, so the temporaries' figures are the differences.
  std::int64_t pinned_bytes = 0;
  std::int64_t alignment = 64;
  std::vector<NodeId> schedule;        ///< execution order
  std::vector<BufferSlot> assignments; ///< indexed by NodeId::v
  std::vector<ScratchSlot> scratch;    ///< kernel scratch buffers
  const BufferSlot& slot(NodeId id) const { return assignments.at(id.v); }
};

/// A graph and the stage it is in. HIR → lower() → MIR; the compile pipeline produces LIR.
class Module {
public:
  /// A HIR module (HIR block ops allowed).
  static Module hir(Graph g);
  /// A MIR module; throws VerifyError when \p g holds HIR ops.
  static Module mir(Graph g);
  /// An LIR module: MIR plus its memory plan.
  static Module lir(Graph g, MemoryPlan plan);

  Stage stage() const { return stage_; }
  const Graph& graph() const { return graph_; }
  Graph& graph() { return graph_; }
  /// The memory plan; throws Error before the LIR stage.
  const MemoryPlan& plan() const;
  /// HIR → MIR by lower_hir (MIR and LIR modules are returned unchanged).
  Module lower() const;

private:
  Stage stage_ = Stage::mir;
  Graph graph_;
  std::shared_ptr<const MemoryPlan> plan_;
};

} // namespace rlx::ir
