// executable.cpp: CpuExecutable: compile (arena, constants, kernel list), I/O, the run loop.
#include "executable.hpp"

#include "lower.hpp"
#include "onednn.hpp"
#include "pools.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

namespace rlx::cpu {
namespace {

constexpr std::size_t kArenaAlignment = 64;

/// Copies \p bytes from an operand's buffer at a byte offset: a pure view whose own buffer was not
/// aliased to its operand (a view that is also a graph output).
class ViewCopy final : public Kernel {
public:
  ViewCopy(const std::byte* src, std::byte* dst, std::int64_t bytes)
      : src_(src), dst_(dst), bytes_(bytes) {}
  void run(ExecContext&) override { std::memcpy(dst_, src_, static_cast<std::size_t>(bytes_)); }

private:
  const std::byte* src_;
  std::byte* dst_;
  std::int64_t bytes_;
};

std::string offsets_of(const ir::Graph& g, const ir::MemoryPlan& plan, ir::NodeId id) {
  std::ostringstream os;
  os << "dst@" << plan.slot(id).offset;
  const auto& ins = g.node(id).inputs;
  for (std::size_t i = 0; i < ins.size(); ++i)
    os << (i == 0 ? " <- " : ", ") << '%' << ins[i].v << '@' << plan.slot(ins[i]).offset;
  return os.str();
}

} // namespace

void CpuExecutable::FreeAligned::operator()(std::byte* p) const {
  std::free(p);
}

CpuExecutable::CpuExecutable(const ir::Module& lir, const CpuBackend& backend)
    : threads_(backend.threads()) {
  if (lir.stage() != ir::Stage::lir)
    throw Error("rlx-cpu: compile needs an LIR module (MIR + memory plan), got " +
                std::string(ir::stage_name(lir.stage())));
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();
  if (plan.assignments.size() != g.size())
    throw Error("rlx-cpu: the memory plan has " + std::to_string(plan.assignments.size()) +
                " slots for " + std::to_string(g.size()) + " nodes");
  if (plan.alignment % backend.alignment() != 0)
    throw Error("rlx-cpu: the memory plan's alignment " + std::to_string(plan.alignment) +
                " is not a multiple of the backend's " + std::to_string(backend.alignment()));
  for (ir::NodeId id : g.ids())
    if (!g.shape(id).is_static())
      throw Error("rlx-cpu: " + ir::describe(g, id) + " has symbolic type " + g.shape(id).str() +
                  "; bind the symbols before compiling");

  // The arena, allocated once and zeroed.
  arena_bytes_ = plan.arena_size;
  auto alloc =
      static_cast<std::size_t>((std::max<std::int64_t>(plan.arena_size, 1) + 63) / 64 * 64);
  arena_.reset(static_cast<std::byte*>(std::aligned_alloc(kArenaAlignment, alloc)));
  if (!arena_)
    throw Error("rlx-cpu: cannot allocate an arena of " + std::to_string(alloc) + " bytes");
  std::memset(arena_.get(), 0, alloc);
  for (const ir::BufferSlot& s : plan.assignments)
    if (s.storage != ir::Storage::none && (s.offset < 0 || s.offset + s.bytes > plan.arena_size))
      throw Error("rlx-cpu: a memory plan slot lies outside the arena");

  pool_ = std::make_unique<tbb::task_arena>(threads_);
  stream_ = std::make_unique<dnnl::stream>(onednn::engine());
  ctx_ = ExecContext{pool_.get(), stream_.get(), threads_};

  const ir::ClaimSet& claims = backend.claims();
  building_ = &g;
  for (ir::NodeId id : plan.schedule) {
    const ir::Node& n = g.node(id);
    const ir::BufferSlot& slot = plan.slot(id);
    if (n.op == ir::OpKind::Input || n.op == ir::OpKind::Param) {
      auto& leaves = n.op == ir::OpKind::Input ? inputs_ : params_;
      leaves[n.attr<ir::LeafAttrs>().name] = Leaf{n.shape, slot.offset, n.shape.bytes(), false};
      continue;
    }
    if (n.op == ir::OpKind::Constant) {
      const ir::Tensor& v = n.attr<ir::ConstantAttrs>().value;
      if (slot.storage != ir::Storage::none && v.nbytes() > 0)
        std::memcpy(arena_.get() + slot.offset, v.raw(), v.nbytes());
      continue;
    }
    if (slot.storage == ir::Storage::none || n.shape.bytes() == 0)
      continue; // dead, or nothing to compute
    if (!claims.supports(g, id))
      throw Error("rlx-cpu: cannot run " + ir::describe(g, id) + " on " +
                  std::string(ir::dtype_name(n.shape.dtype)) +
                  ": the CPU backend does not claim it (legalise the graph first)");
    std::string label = "%" + std::to_string(id.v) + " " + std::string(ir::op_name(n.op));
    if (compile::is_pure_view(g, id)) {
      if (slot.storage == ir::Storage::view)
        continue; // aliased by the planner: no kernel
      // A view the planner gave its own buffer (e.g. a graph output): copy the viewed bytes.
      LowerContext c{{g, id, backend.options(), threads_}, plan, arena_.get()};
      kernels_.push_back({std::make_unique<ViewCopy>(c.src(0) + compile::view_byte_offset(g, id),
                                                     c.dst(), n.shape.bytes()),
                          label + " [view-copy] " + offsets_of(g, plan, id)});
      continue;
    }
    LowerContext c{{g, id, backend.options(), threads_}, plan, arena_.get(), this};
    const KernelImpl* impl = select_kernel(c);
    if (!impl)
      throw Error("rlx-cpu: no kernel accepts " + ir::describe(g, id) + " (" + n.shape.str() + ")");
    kernels_.push_back({impl->make(c), label + " [" + impl->name + "] " + offsets_of(g, plan, id)});
    uses_onednn_ = uses_onednn_ || std::string_view(impl->name) == "onednn";
    uses_openblas_ = uses_openblas_ || std::string_view(impl->name) == "openblas";
  }
  building_ = nullptr;
  for (ir::NodeId o : g.outputs())
    outputs_.push_back({g.shape(o), plan.slot(o).offset});
}

void* CpuExecutable::packed(ir::NodeId source, const std::byte* src,
                            const dnnl::memory::desc& src_md, const dnnl::memory::desc& packed_md) {
  for (Pack& p : packs_)
    if (p.source == source && p.dst.get_desc() == packed_md)
      return p.buffer.get();
  const ir::Node& n = building_->node(source);
  Pack p;
  p.source = source;
  auto bytes = static_cast<std::int64_t>(packed_md.get_size());
  p.buffer.reset(static_cast<std::byte*>(
      std::aligned_alloc(kArenaAlignment, static_cast<std::size_t>((bytes + 63) / 64 * 64))));
  if (!p.buffer)
    throw Error("rlx-cpu: cannot allocate " + std::to_string(bytes) + " bytes of packed weights");
  p.src = dnnl::memory(src_md, onednn::engine(), const_cast<std::byte*>(src));
  p.dst = dnnl::memory(packed_md, onednn::engine(), p.buffer.get());
  p.reorder = dnnl::reorder(p.src, p.dst);
  packed_bytes_ += bytes;
  if (n.op == ir::OpKind::Param)
    p.param = n.attr<ir::LeafAttrs>().name;
  else
    p.reorder.execute(*stream_, p.src, p.dst); // a constant: its value is in the arena already
  packs_.push_back(std::move(p));
  return packs_.back().buffer.get();
}

CpuExecutable::~CpuExecutable() = default;

void CpuExecutable::upload(std::map<std::string, Leaf>& leaves, const char* what,
                           const std::string& name, const ir::Tensor& value) {
  auto it = leaves.find(name);
  if (it == leaves.end()) {
    std::string known;
    for (const auto& [n, l] : leaves)
      known += (known.empty() ? "" : ", ") + n;
    throw Error(std::string(what) + ": the graph has no " +
                (std::string(what) == "set_input" ? "input" : "param") + " named '" + name +
                "' (it has: " + (known.empty() ? "none" : known) + ")");
  }
  Leaf& leaf = it->second;
  if (value.shape() != leaf.shape)
    throw Error(std::string(what) + " '" + name + "': expected " + leaf.shape.str() + ", got " +
                value.shape().str());
  if (leaf.bytes > 0)
    std::memcpy(arena_.get() + leaf.offset, value.raw(), static_cast<std::size_t>(leaf.bytes));
  leaf.set = true;
  for (Pack& p : packs_) // weights kept packed for oneDNN follow their param
    if (!p.param.empty() && p.param == name && &leaves == &params_)
      p.reorder.execute(*stream_, p.src, p.dst);
}

void CpuExecutable::set_input(const std::string& name, const ir::Tensor& value) {
  upload(inputs_, "set_input", name, value);
}

void CpuExecutable::set_param(const std::string& name, const ir::Tensor& value) {
  upload(params_, "set_param", name, value);
}

void CpuExecutable::execute() {
  for (const auto* leaves : {&inputs_, &params_})
    for (const auto& [name, leaf] : *leaves)
      if (!leaf.set)
        throw Error(std::string("execute: ") + (leaves == &inputs_ ? "input" : "param") + " '" +
                    name + "' was never set");
  // Size the libraries' pools for this executable (cheap; they are process-wide, so another
  // executable or the application may have changed them since the last run).
  if (uses_onednn_)
    set_openmp_threads(threads_);
  if (uses_openblas_)
    configure_library_threads(threads_);
  // The one execution path: every kernel record in schedule order (timed when profiling).
  for (Record& r : kernels_) {
    if (!profiling_) {
      r.kernel->run(ctx_);
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    r.kernel->run(ctx_);
    r.ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  profiled_runs_ += profiling_ ? 1 : 0;
}

void CpuExecutable::set_profiling(bool on) {
  profiling_ = on;
  profiled_runs_ = 0;
  for (Record& r : kernels_)
    r.ms = 0;
}

std::string CpuExecutable::profile() const {
  std::vector<const Record*> order;
  double total = 0;
  for (const Record& r : kernels_) {
    order.push_back(&r);
    total += r.ms;
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Record* a, const Record* b) { return a->ms > b->ms; });
  std::ostringstream os;
  int runs = std::max(profiled_runs_, 1);
  os << "kernel profile over " << profiled_runs_ << " runs: " << total / runs << " ms per run\n";
  for (const Record* r : order) {
    char line[64];
    std::snprintf(line, sizeof line, "%9.3f ms %5.1f%%  ", r->ms / runs,
                  total > 0 ? 100.0 * r->ms / total : 0.0);
    os << line << r->label << "\n";
  }
  return os.str();
}

ir::Tensor CpuExecutable::output(std::size_t index) const {
  if (index >= outputs_.size())
    throw Error("output: index " + std::to_string(index) + " is out of range (the graph has " +
                std::to_string(outputs_.size()) + " outputs)");
  const Output& o = outputs_[index];
  ir::Tensor t(o.shape);
  if (t.nbytes() > 0)
    std::memcpy(t.raw(), arena_.get() + o.offset, t.nbytes());
  return t;
}

std::string CpuExecutable::listing() const {
  std::string s;
  for (const Record& r : kernels_)
    s += r.label + "\n";
  return s;
}

} // namespace rlx::cpu
