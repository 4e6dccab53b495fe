// transformer_layer.cpp: FusedTransformerLayer (rlx-fusion's fuse-transformer-layer) as one kernel
// record that runs its stages' own kernels in sequence.
//
// The stages are the op's decomposition (rlx-ir: the attention block, the residual norms, the FFN
// products, LLaMA's first RMSNorm and last residual Add), appended to a private copy of the graph
// so every stage reads the layer's operands by their own node ids: a weight stays the Param it
// is, and the GEMMs pack it once through the executable exactly as the unfused ops would. Each
// stage gets the kernel implementation select_kernel() gives the op on its own (the oneDNN or
// packed GEMMs, the attention block's online softmax, the residual norms), built through its
// KernelImpl with a LowerContext whose memory plan places the stage values in the layer's planned
// scratch: a first-fit placement over the stages' lifetimes, so the FFN's wide intermediate reuses
// the attention block's bytes and the stages' own scratch overlaps values already dead. The last
// stage writes the layer's result (LLaMA's residual Add) or is copied there (BERT's norm reads
// part 1 of a residual_layer_norm tuple whose part 0 must not land outside the scratch). What
// the record saves over the unfused list: the handoffs between records and the intermediates'
// round trips through arena slots shared with the rest of the graph (they stay in one compact,
// cache-warm scratch region).
#include "../lower.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cstring>

namespace rlx::cpu {
namespace {

constexpr std::int64_t kAlign = 64;
std::int64_t aligned(std::int64_t b) {
  return (b + kAlign - 1) / kAlign * kAlign;
}

/// Where an appended stage value lives: a view of another (root and byte offset), the layer's
/// result (its own slot), or scratch at a relative offset.
struct StageSlot {
  bool view = false, result = false;
  ir::NodeId root; ///< the viewed root (views)
  std::int64_t offset = 0, bytes = 0;
};

/// The layer's stages: a copy of the graph with the layer's decomposition appended, the
/// placement of every appended value and stage scratch, and the total scratch bytes.
struct Stages {
  ir::Graph g;
  std::uint32_t first = 0;      ///< the first appended node id
  ir::NodeId result;            ///< the decomposition's value
  std::vector<ir::NodeId> runs; ///< appended nodes that run a kernel, in order
  std::vector<StageSlot> slots; ///< by appended id - first
  std::vector<std::int64_t> scratch_at, scratch_bytes; ///< per runs[i]: its kernel scratch
  std::int64_t total = 0;
};

/// Placement of blocks live over stage ranges: the lowest 64-byte aligned offset free of every
/// block still live.
class FirstFit {
public:
  std::int64_t place(std::int64_t bytes, std::size_t from, std::size_t until) {
    std::erase_if(live_, [&](const Block& b) { return b.until < from; });
    std::sort(live_.begin(), live_.end(),
              [](const Block& a, const Block& b) { return a.at < b.at; });
    std::int64_t at = 0;
    for (const Block& b : live_) {
      if (at + bytes <= b.at)
        break;
      at = std::max(at, aligned(b.at + b.bytes));
    }
    live_.push_back({at, bytes, until});
    top_ = std::max(top_, at + bytes);
    return at;
  }
  std::int64_t top() const { return aligned(top_); }

private:
  struct Block {
    std::int64_t at, bytes;
    std::size_t until;
  };
  std::vector<Block> live_;
  std::int64_t top_ = 0;
};

Stages build_stages(const NodeView& n) {
  Stages s{n.graph, static_cast<std::uint32_t>(n.graph.size()), {}, {}, {}, {}, {}, 0};
  ir::Builder b(s.g);
  std::string why;
  const std::vector<ir::NodeId> v = ir::decompose_values(b, n.id, ir::DecomposeOptions{}, why);
  if (v.size() != 1)
    throw Error("rlx-cpu: " + ir::describe(n.graph, n.id) + ": no stages: " + why);
  s.result = v[0];
  const std::uint32_t end = static_cast<std::uint32_t>(s.g.size());
  s.slots.resize(end - s.first);
  auto appended = [&](ir::NodeId id) { return id.v >= s.first; };
  auto slot = [&](ir::NodeId id) -> StageSlot& { return s.slots[id.v - s.first]; };
  // Stage index of each kernel node; a value is live from its stage to its last reader's (a view
  // is read when its readers are).
  std::vector<std::size_t> stage_of(end - s.first, 0);
  for (std::uint32_t i = s.first; i < end; ++i) {
    const ir::NodeId id{i};
    if (compile::is_pure_view(s.g, id)) {
      stage_of[i - s.first] = s.runs.empty() ? 0 : s.runs.size() - 1;
      continue;
    }
    stage_of[i - s.first] = s.runs.size();
    s.runs.push_back(id);
  }
  std::vector<std::size_t> last(end - s.first, 0);
  for (std::uint32_t i = end; i-- > s.first;) {
    const ir::NodeId id{i};
    std::size_t until = stage_of[i - s.first];
    for (ir::NodeId u : s.g.users(id))
      if (appended(u))
        until = std::max(until, compile::is_pure_view(s.g, u) ? last[u.v - s.first]
                                                              : stage_of[u.v - s.first]);
    last[i - s.first] = until;
  }
  FirstFit fit;
  const NodeView parent = n;
  for (std::uint32_t i = s.first; i < end; ++i) {
    const ir::NodeId id{i};
    StageSlot& sl = slot(id);
    sl.bytes = s.g.shape(id).bytes();
    if (compile::is_pure_view(s.g, id)) {
      const ir::NodeId src = s.g.node(id).inputs.at(0);
      if (!appended(src))
        throw Error("rlx-cpu: " + ir::describe(n.graph, n.id) + ": a stage views an operand");
      const StageSlot& from = slot(src);
      sl.view = true;
      sl.root = from.view ? from.root : src;
      sl.offset = from.offset + compile::view_byte_offset(s.g, id);
      continue;
    }
    const std::size_t t = stage_of[i - s.first];
    if (id == s.result)
      sl.result = true;
    else
      sl.offset = fit.place(sl.bytes, t, last[i - s.first]);
    const NodeView stage{s.g, id, parent.opts, parent.threads};
    const KernelImpl* impl = select_kernel(stage);
    if (!impl)
      throw Error("rlx-cpu: " + ir::describe(n.graph, n.id) + ": no kernel accepts its stage " +
                  ir::describe(s.g, id));
    const std::int64_t bytes = impl->scratch ? impl->scratch(stage) : 0;
    s.scratch_bytes.push_back(bytes);
    s.scratch_at.push_back(bytes > 0 ? fit.place(bytes, t, t) : 0);
  }
  s.total = fit.top();
  return s;
}

std::int64_t layer_scratch(const NodeView& n) {
  return build_stages(n).total;
}

class TransformerLayerKernel final : public Kernel {
public:
  void run(ExecContext& ctx) override {
    for (const auto& k : stages_)
      k->run(ctx);
    if (copy_bytes_ > 0)
      std::memcpy(copy_to_, copy_from_, copy_bytes_);
  }

  std::vector<std::unique_ptr<Kernel>> stages_;
  const std::byte* copy_from_ = nullptr;
  std::byte* copy_to_ = nullptr;
  std::size_t copy_bytes_ = 0;
};

std::unique_ptr<Kernel> make_layer(const LowerContext& c) {
  const Stages s = build_stages(c);
  std::byte* scratch = c.scratch(s.total);
  const std::int64_t base = scratch == nullptr ? 0 : scratch - c.arena;
  // The plan of the graph copy: the parent's slots, the stage values in the scratch (the result
  // in the layer's own slot), and each stage's kernel scratch.
  ir::MemoryPlan plan = c.plan;
  plan.assignments.resize(s.g.size());
  for (std::uint32_t i = s.first; i < s.g.size(); ++i) {
    const StageSlot& sl = s.slots[i - s.first];
    ir::BufferSlot& b = plan.assignments[i];
    b.bytes = sl.bytes;
    if (sl.result) {
      b = c.plan.slot(c.id);
    } else if (sl.view) {
      b.storage = ir::Storage::view;
      b.view_of = sl.root;
      b.offset = s.slots[sl.root.v - s.first].result ? c.plan.slot(c.id).offset + sl.offset
                                                     : base + sl.offset;
    } else {
      b.storage = ir::Storage::temp;
      b.offset = base + sl.offset;
    }
  }
  for (std::size_t k = 0; k < s.runs.size(); ++k)
    if (s.scratch_bytes[k] > 0)
      plan.scratch.push_back({s.runs[k], base + s.scratch_at[k], s.scratch_bytes[k]});
  std::vector<std::byte*> weights;
  if (c.weights) {
    weights = *c.weights;
    weights.resize(s.g.size(), nullptr);
  }
  auto k = std::make_unique<TransformerLayerKernel>();
  std::string note;
  for (ir::NodeId id : s.runs) {
    const LowerContext sc{{s.g, id, c.opts, c.threads},   plan,         c.arena, c.packer,
                          c.weights ? &weights : nullptr, c.plain_reads};
    const KernelImpl* impl = select_kernel(sc);
    k->stages_.push_back(impl->make(sc));
    note += (note.empty() ? "" : ", ") + std::string(ir::op_name(s.g.node(id).op)) + " [" +
            impl->name + "]";
  }
  if (!s.slots[s.result.v - s.first].result) { // the result is a view into a stage's tuple
    const LowerContext sc{{s.g, s.result, c.opts, c.threads}, plan,         c.arena, c.packer,
                          c.weights ? &weights : nullptr,     c.plain_reads};
    k->copy_from_ = sc.addr(s.result);
    k->copy_to_ = c.dst();
    k->copy_bytes_ = static_cast<std::size_t>(c.out().bytes());
    note += ", copy";
  }
  k->set_note(std::move(note));
  return k;
}

/// f32 (the backend claims the layer for f32; other dtypes get its decomposition).
bool accepts_layer(const NodeView& n) {
  return n.out().dtype == ir::DType::f32;
}

constexpr KernelImpl kTransformerLayer[] = {
    {"stages", accepts_layer, layer_scratch, make_layer},
};

} // namespace

std::span<const KernelImpl> transformer_layer_impls() {
  return kTransformerLayer;
}

} // namespace rlx::cpu
