// executable.cpp: CpuExecutable: compile (arena, constants, weights bound in place, kernel list),
// I/O, the run loop.
#include "executable.hpp"

#include "compile_clock.hpp"
#include "kernel_work.hpp"

#include "lower.hpp"
#include "onednn.hpp"
#include "pools.hpp"
#include "rlx/compile/lir_check.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/size.hpp"
#include "weight_concat.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string_view>

namespace rlx::cpu {
namespace {

constexpr std::size_t kArenaAlignment = 64;

/// The kind of the region's copies of GEMM weights in oneDNN's preferred layout.
constexpr const char* kPackedKind = "onednn-packed";

struct FreeAligned {
  void operator()(std::byte* p) const { std::free(p); }
};

/// A weight packed in a oneDNN primitive's preferred layout, with the reorders both ways.
struct PackedWeight {
  std::unique_ptr<std::byte[], FreeAligned> buffer;
  dnnl::memory::desc plain_md, packed_md;
  dnnl::reorder pack, unpack;

  /// Reorders \p from (laid out as \p from_md) into \p to (laid out as \p to_md).
  static void reorder(const dnnl::reorder& r, const dnnl::memory::desc& from_md,
                      const std::byte* from, const dnnl::memory::desc& to_md, std::byte* to) {
    dnnl::stream stream(onednn::engine());
    dnnl::memory src(from_md, onednn::engine(), const_cast<std::byte*>(from));
    dnnl::memory dst(to_md, onednn::engine(), to);
    r.execute(stream, src, dst);
    stream.wait();
  }
};

/// A derived weight copy packed as \p packed_md from plain bytes laid out as \p plain_md.
std::shared_ptr<compile::WeightRegion::Derived> make_packed(const dnnl::memory::desc& plain_md,
                                                            const dnnl::memory::desc& packed_md) {
  auto w = std::make_shared<PackedWeight>();
  auto bytes = static_cast<std::int64_t>(packed_md.get_size());
  w->buffer.reset(static_cast<std::byte*>(
      std::aligned_alloc(kArenaAlignment, static_cast<std::size_t>((bytes + 63) / 64 * 64))));
  if (!w->buffer)
    throw Error("rlx-cpu: cannot allocate " + std::to_string(bytes) + " bytes of packed weights");
  w->plain_md = plain_md;
  w->packed_md = packed_md;
  w->pack = dnnl::reorder(
      dnnl::reorder::primitive_desc(onednn::engine(), plain_md, onednn::engine(), packed_md));
  w->unpack = dnnl::reorder(
      dnnl::reorder::primitive_desc(onednn::engine(), packed_md, onednn::engine(), plain_md));
  auto d = std::make_shared<compile::WeightRegion::Derived>();
  PackedWeight* p = w.get();
  d->kind = kPackedKind;
  d->bytes = bytes;
  d->refresh = [p, bytes](const std::byte* plain) {
    PreparationTimer timer(bytes);
    PackedWeight::reorder(p->pack, p->plain_md, plain, p->packed_md, p->buffer.get());
  };
  d->restore = [p](std::byte* plain) {
    PackedWeight::reorder(p->unpack, p->packed_md, p->buffer.get(), p->plain_md, plain);
  };
  d->state = std::move(w);
  return d;
}

/// The kind of the region's copies in layouts of rlx's own (kind + ":" + the layout's name).
constexpr std::string_view kOwnKind = "rlx-packed:";

/// A weight copy in a layout of rlx's own (the packed GEMM's panels).
struct OwnPacked {
  std::unique_ptr<std::byte[], FreeAligned> buffer;
};

/// A derived weight copy of \p bytes in layout \p layout, converted by \p pack / \p unpack.
std::shared_ptr<compile::WeightRegion::Derived> make_own(const std::string& layout,
                                                         std::int64_t bytes,
                                                         const onednn::OwnPackFn& pack,
                                                         const onednn::OwnPackFn& unpack) {
  auto w = std::make_shared<OwnPacked>();
  w->buffer.reset(static_cast<std::byte*>(
      std::aligned_alloc(kArenaAlignment, static_cast<std::size_t>((bytes + 63) / 64 * 64))));
  if (!w->buffer)
    throw Error("rlx-cpu: cannot allocate " + std::to_string(bytes) + " bytes of packed weights");
  auto d = std::make_shared<compile::WeightRegion::Derived>();
  std::byte* buf = w->buffer.get();
  d->kind = std::string(kOwnKind) + layout;
  d->bytes = bytes;
  d->refresh = [buf, pack, bytes](const std::byte* plain) {
    PreparationTimer timer(bytes);
    pack(plain, buf);
  };
  d->restore = [buf, unpack](std::byte* plain) { unpack(buf, plain); };
  d->state = std::move(w);
  return d;
}

/// The buffer of a derived copy made by make_packed() or make_own().
std::byte* copy_buffer(const compile::WeightRegion::Derived& d) {
  if (std::string_view(d.kind).starts_with(kPackedKind))
    return static_cast<PackedWeight*>(d.state.get())->buffer.get();
  return static_cast<OwnPacked*>(d.state.get())->buffer.get();
}

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

CpuExecutable::CpuExecutable(const ir::Module& lir, const CpuBackend& backend,
                             std::shared_ptr<compile::WeightRegion> weights)
    : weights_(weights ? std::move(weights) : std::make_shared<compile::WeightRegion>()),
      threads_(backend.threads()) {
  try {
    CompileClock clock(breakdown_);
    build(lir, backend);
  } catch (...) {
    weights_->release(this); // no destructor runs: forget what was registered so far
    throw;
  }
}

void CpuExecutable::build(const ir::Module& lir, const CpuBackend& backend) {
  compile::check_compilable(lir, "rlx-cpu", backend.alignment());
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();

  // The arena, allocated once: zero pages committed only where touched, so the Param slots the
  // plan reserves (Params are read from the weight region) cost no memory.
  ir::check_allocation(plan.arena_size, "rlx-cpu: the arena");
  arena_ = compile::HostPages(plan.arena_size);
  arena_bytes_ = plan.arena_size;
  for (const ir::BufferSlot& s : plan.assignments)
    if (s.storage != ir::Storage::none && (s.offset < 0 || s.offset + s.bytes > plan.arena_size))
      throw Error("rlx-cpu: a memory plan slot lies outside the arena");

  // Params are bound by name to the weight region: kernels read them where they live.
  param_addr_.assign(g.size(), nullptr);
  plain_reads_.assign(g.size(), 0);
  for (ir::NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    if (n.op != ir::OpKind::Param)
      continue;
    const std::string& name = n.attr<ir::LeafAttrs>().name;
    param_addr_[id.v] = weights_->storage(name, n.shape);
    params_[name] = Leaf{n.shape, 0, n.shape.bytes(), false};
    if (plan.slot(id).storage != ir::Storage::none)
      arena_bytes_ -= plan.slot(id).bytes;
  }

  // In-place updates (Graph::aliases): the writer's kernel writes the Param's bytes in the region,
  // which this executable therefore reads plainly and makes writable.
  for (ir::NodeId id : g.ids()) {
    const ir::BufferSlot& s = plan.slot(id);
    if (s.storage != ir::Storage::aliased)
      continue;
    const std::string& name = g.node(s.view_of).attr<ir::LeafAttrs>().name;
    param_addr_[id.v] = weights_->storage_for_update(name, g.shape(id));
    param_addr_[s.view_of.v] = param_addr_[id.v];
    ++plain_reads_[s.view_of.v];
    updated_.push_back(name);
  }

  pool_ = std::make_unique<tbb::task_arena>(threads_);
  stream_ = std::make_unique<dnnl::stream>(onednn::engine());
  ctx_ = ExecContext{pool_.get(), stream_.get(), threads_};

  const ir::ClaimSet& claims = backend.claims();
  building_ = &g;
  for (ir::NodeId id : plan.schedule) {
    const ir::Node& n = g.node(id);
    const ir::BufferSlot& slot = plan.slot(id);
    if (n.op == ir::OpKind::Input) {
      inputs_[n.attr<ir::LeafAttrs>().name] = Leaf{n.shape, slot.offset, n.shape.bytes(), false};
      continue;
    }
    if (n.op == ir::OpKind::Param)
      continue;
    if (n.op == ir::OpKind::Constant) {
      const ir::Tensor& v = n.attr<ir::ConstantAttrs>().value;
      if (slot.storage != ir::Storage::none && v.nbytes() > 0)
        std::memcpy(arena_.data() + slot.offset, v.raw(), v.nbytes());
      continue;
    }
    if (slot.storage == ir::Storage::none || n.shape.bytes() == 0)
      continue; // dead, or nothing to compute
    if (!claims.supports(g, id))
      throw Error("rlx-cpu: cannot run " + ir::describe(g, id) + " on " +
                  std::string(ir::dtype_name(n.shape.dtype)) +
                  ": the CPU backend does not claim it (legalise the graph first)");
    std::string label = "%" + std::to_string(id.v) + " " + std::string(ir::op_name(n.op));
    if (is_weight_concat(g, id)) {
      // A Concat of weights (a packed projection weight) lives in the weight region, refreshed
      // when a weight is written: no kernel, and its arena slot is never touched.
      PhaseTimer timer(CompilePhase::weights);
      param_addr_[id.v] = weight_concat(*weights_, g, id, this, packed_bytes_);
      arena_bytes_ -= slot.bytes;
      continue;
    }
    if (compile::is_pure_view(g, id)) {
      if (slot.storage == ir::Storage::view)
        continue; // aliased by the planner: no kernel
      // A view the planner gave its own buffer (e.g. a graph output): copy the viewed bytes.
      LowerContext c{{g, id, backend.options(), threads_},
                     plan,
                     arena_.data(),
                     nullptr,
                     &param_addr_,
                     &plain_reads_};
      Record& r = kernels_.emplace_back();
      r.kernel = std::make_unique<ViewCopy>(c.src(0) + compile::view_byte_offset(g, id), c.dst(),
                                            n.shape.bytes());
      r.label = label + " [view-copy] " + offsets_of(g, plan, id);
      r.provider = "view-copy";
      r.node = id;
      r.op = ir::op_name(n.op);
      r.bytes = 2.0 * static_cast<double>(n.shape.bytes());
      continue;
    }
    LowerContext c{{g, id, backend.options(), threads_},
                   plan,
                   arena_.data(),
                   this,
                   &param_addr_,
                   &plain_reads_};
    const KernelImpl* impl = select_kernel(c);
    if (!impl)
      throw Error("rlx-cpu: no kernel accepts " + ir::describe(g, id) + " (" + n.shape.str() + ")");
    std::unique_ptr<Kernel> kernel = impl->make(c);
    Record& r = kernels_.emplace_back();
    r.note = kernel->note();
    r.label = label + " [" + impl->name + "]" + (r.note.empty() ? "" : " (" + r.note + ")") + " " +
              offsets_of(g, plan, id);
    r.kernel = std::move(kernel);
    r.provider = impl->name;
    r.node = id;
    r.op = ir::op_name(n.op);
    const KernelWork work = kernel_work(g, id);
    r.flops = work.flops;
    r.bytes = work.bytes;
    uses_onednn_ = uses_onednn_ || std::string_view(impl->name) == "onednn";
    uses_openblas_ = uses_openblas_ || std::string_view(impl->name) == "openblas";
  }
  building_ = nullptr;
  for (ir::NodeId o : g.outputs()) {
    // An output that is a weight (or a view of one) is read from the region.
    const ir::BufferSlot& s = plan.slot(o);
    const ir::NodeId root = s.storage == ir::Storage::view ? s.view_of : o;
    const std::byte* at = arena_.data() + s.offset;
    if (root.valid() && param_addr_[root.v]) {
      at = param_addr_[root.v] + (s.offset - plan.slot(root).offset);
      ++plain_reads_[root.v];
    }
    outputs_.push_back({g.shape(o), at});
  }
  // Register what this executable reads plainly; weights only read packed give their plain bytes
  // back (the packed copy replaces them).
  for (ir::NodeId id : g.ids())
    if (g.node(id).op == ir::OpKind::Param && plain_reads_[id.v] > 0)
      weights_->add_plain_reader(g.node(id).attr<ir::LeafAttrs>().name, this);
  plain_reads_.clear();
  weights_->drop_unread();
}

void* CpuExecutable::packed(ir::NodeId source, const std::byte* src,
                            const dnnl::memory::desc& src_md, const dnnl::memory::desc& packed_md) {
  PhaseTimer timer(CompilePhase::weights);
  const ir::Node& n = building_->node(source);
  auto count = [&](const std::shared_ptr<compile::WeightRegion::Derived>& d) {
    return count_copy(d);
  };
  if (n.op == ir::OpKind::Param) {
    // Read through the packed copy, not plainly (the matmul resolved its address all the same).
    --plain_reads_[source.v];
    const std::string& name = n.attr<ir::LeafAttrs>().name;
    for (const auto& d : weights_->derived(name)) {
      if (d->kind != kPackedKind)
        continue;
      auto* w = static_cast<PackedWeight*>(d->state.get());
      if (w->plain_md == src_md && w->packed_md == packed_md) {
        weights_->use_derived(name, d, this);
        return count(d);
      }
    }
    auto d = make_packed(src_md, packed_md);
    weights_->add_derived(name, d, this);
    return count(d);
  }
  if (is_weight_concat(*building_, source))
    return concat_copy(
        source, src,
        [&](const compile::WeightRegion::Derived& d) {
          if (!d.kind.starts_with(kPackedKind))
            return false;
          const auto* w = static_cast<const PackedWeight*>(d.state.get());
          return w->plain_md == src_md && w->packed_md == packed_md;
        },
        [&] { return make_packed(src_md, packed_md); });
  for (const ConstantPack& p : constant_packs_)
    if (p.source == source && p.copy->kind == kPackedKind &&
        static_cast<PackedWeight*>(p.copy->state.get())->packed_md == packed_md)
      return count(p.copy);
  auto d = make_packed(src_md, packed_md);
  d->refresh(src); // a constant: its value is in the arena already
  constant_packs_.push_back({source, d});
  return count(d);
}

std::byte* CpuExecutable::count_copy(const std::shared_ptr<compile::WeightRegion::Derived>& d) {
  if (std::find(used_copies_.begin(), used_copies_.end(), d.get()) == used_copies_.end()) {
    used_copies_.push_back(d.get());
    packed_bytes_ += d->bytes;
  }
  return copy_buffer(*d);
}

void* CpuExecutable::packed_own(ir::NodeId source, const std::byte* src, const std::string& layout,
                                std::int64_t bytes, const onednn::OwnPackFn& pack,
                                const onednn::OwnPackFn& unpack) {
  PhaseTimer timer(CompilePhase::weights);
  const ir::Node& n = building_->node(source);
  const std::string kind = std::string(kOwnKind) + layout;
  if (n.op == ir::OpKind::Param) {
    // Read through the packed copy, not plainly (the matmul resolved its address all the same).
    --plain_reads_[source.v];
    const std::string& name = n.attr<ir::LeafAttrs>().name;
    for (const auto& d : weights_->derived(name))
      if (d->kind == kind) {
        weights_->use_derived(name, d, this);
        return count_copy(d);
      }
    auto d = make_own(layout, bytes, pack, unpack);
    weights_->add_derived(name, d, this);
    return count_copy(d);
  }
  if (is_weight_concat(*building_, source))
    return concat_copy(
        source, src,
        [&](const compile::WeightRegion::Derived& d) { return d.kind.starts_with(kind + " of"); },
        [&] { return make_own(layout, bytes, pack, unpack); });
  for (const ConstantPack& p : constant_packs_)
    if (p.source == source && p.copy->kind == kind)
      return count_copy(p.copy);
  auto d = make_own(layout, bytes, pack, unpack);
  d->refresh(src); // a constant: its value is in the arena already
  constant_packs_.push_back({source, d});
  return count_copy(d);
}

std::byte* CpuExecutable::concat_copy(
    ir::NodeId source, const std::byte* src,
    const std::function<bool(const compile::WeightRegion::Derived&)>& same,
    const std::function<std::shared_ptr<compile::WeightRegion::Derived>()>& make) {
  // The concatenation's own copies (weight_concat(), registered when the Concat node was lowered,
  // before any reader) refresh the buffer at src first whenever an operand is written; each
  // operand's copy here then recomputes the whole packed copy from it. One copy per operand so
  // that writing any of them refreshes the result; all share one buffer (state).
  const ir::Node& n = building_->node(source);
  std::vector<std::string> names;
  std::string of = " of concat ";
  for (ir::NodeId i : n.inputs) {
    names.push_back(building_->node(i).attr<ir::LeafAttrs>().name);
    of += (names.size() > 1 ? "," : "") + names.back();
  }
  for (const auto& d : weights_->derived(names[0])) {
    if (!d->kind.ends_with(of) || !same(*d))
      continue;
    std::shared_ptr<compile::WeightRegion::Derived> first;
    for (const auto& name : names)
      for (const auto& e : weights_->derived(name))
        if (e->kind == d->kind && e->state == d->state) {
          weights_->use_derived(name, e, this);
          first = first ? first : e;
        }
    return count_copy(first);
  }
  const std::shared_ptr<compile::WeightRegion::Derived> made = make();
  std::shared_ptr<compile::WeightRegion::Derived> first;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto d = std::make_shared<compile::WeightRegion::Derived>();
    d->kind = made->kind + of;
    d->state = made->state;
    d->bytes = i == 0 ? made->bytes : 0; // one buffer, counted once
    d->refresh = [refresh = made->refresh, src](const std::byte*) { refresh(src); };
    // No restore: the concatenation's own copies give the plain bytes back.
    weights_->add_derived(names[i], d, this);
    first = first ? first : d;
  }
  return count_copy(first);
}

CpuExecutable::~CpuExecutable() {
  weights_->release(this);
}

namespace {

/// The leaf named \p name of \p leaves, or an Error listing the ones there are.
template <class Leaves>
auto& find_leaf(Leaves& leaves, const char* what, const char* kind, const std::string& name,
                const ir::Shape& given) {
  auto it = leaves.find(name);
  if (it == leaves.end()) {
    std::string known;
    for (const auto& [n, l] : leaves)
      known += (known.empty() ? "" : ", ") + n;
    throw Error(std::string(what) + ": the graph has no " + kind + " named '" + name +
                "' (it has: " + (known.empty() ? "none" : known) + ")");
  }
  if (given != it->second.shape)
    throw Error(std::string(what) + " '" + name + "': expected " + it->second.shape.str() +
                ", got " + given.str());
  return it->second;
}

} // namespace

void CpuExecutable::set_input(const std::string& name, const ir::Tensor& value) {
  auto& leaf = find_leaf(inputs_, "set_input", "input", name, value.shape());
  if (leaf.bytes > 0)
    std::memcpy(arena_.data() + leaf.offset, value.raw(), static_cast<std::size_t>(leaf.bytes));
  leaf.set = true;
}

void CpuExecutable::set_param(const std::string& name, const ir::Tensor& value) {
  find_leaf(params_, "set_param", "param", name, value.shape());
  weights_->write(name, value); // every executable reading the region sees it
}

void CpuExecutable::execute() {
  for (const auto& [name, leaf] : inputs_)
    if (!leaf.set)
      throw Error("execute: input '" + name + "' was never set");
  if (!params_ready_) { // a weight, once set, stays set
    for (const auto& [name, leaf] : params_)
      if (!weights_->is_set(name))
        throw Error("execute: param '" + name + "' was never set");
    params_ready_ = true;
  }
  // Weights do not change while kernels read them (WeightRegion::write waits for this lock).
  std::shared_lock weights_in_use(weights_->use_mutex());
  // Size the libraries' pools for this executable (cheap; they are process-wide, so another
  // executable or the application may have changed them since the last run).
  if (uses_onednn_)
    set_openmp_threads(threads_);
  if (uses_openblas_)
    configure_library_threads(1); // called from our TBB tasks, one thread each (kernels/matmul.cpp)
  // The one execution path: every kernel record in schedule order (timed when profiling).
  for (Record& r : kernels_) {
    if (!profiling_) {
      r.kernel->run(ctx_);
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    r.kernel->run(ctx_);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.ms += ms;
    r.samples.push_back(ms); // profiling only: the plain path allocates nothing
  }
  profiled_runs_ += profiling_ ? 1 : 0;
  // Weights updated in place: their derived copies (packed GEMM layouts) follow.
  for (const std::string& name : updated_)
    weights_->updated_in_place(name);
}

void CpuExecutable::set_profiling(bool on) {
  profiling_ = on;
  profiled_runs_ = 0;
  for (Record& r : kernels_) {
    r.ms = 0;
    r.samples.clear();
    if (on)
      r.samples.reserve(64);
  }
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

compile::KernelTimings CpuExecutable::timings() const {
  compile::KernelTimings t;
  t.runs = profiled_runs_;
  for (const Record& r : kernels_) {
    compile::KernelTiming k;
    k.node = "%" + std::to_string(r.node.v);
    k.op = r.op;
    k.provider = r.provider;
    k.note = r.note;
    k.total_ms = r.ms;
    if (!r.samples.empty()) {
      std::vector<double> s = r.samples;
      const std::size_t mid = s.size() / 2;
      std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid), s.end());
      k.median_ms = s[mid];
      if (s.size() % 2 == 0) {
        const double below =
            *std::max_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid));
        k.median_ms = 0.5 * (k.median_ms + below);
      }
    }
    k.flops = r.flops;
    k.bytes = r.bytes;
    t.kernels.push_back(std::move(k));
  }
  return t;
}

ir::Tensor CpuExecutable::output(std::size_t index) const {
  if (index >= outputs_.size())
    throw Error("output: index " + std::to_string(index) + " is out of range (the graph has " +
                std::to_string(outputs_.size()) + " outputs)");
  const Output& o = outputs_[index];
  ir::Tensor t(o.shape);
  if (t.nbytes() > 0)
    std::memcpy(t.raw(), o.at, t.nbytes());
  return t;
}

void CpuExecutable::write_input(const std::string& name, const std::byte* src) {
  auto it = inputs_.find(name);
  if (it == inputs_.end())
    throw Error("rlx-cpu: a nested executable has no input named '" + name + "'");
  Leaf& leaf = it->second;
  if (leaf.bytes > 0)
    std::memcpy(arena_.data() + leaf.offset, src, static_cast<std::size_t>(leaf.bytes));
  leaf.set = true;
}

void CpuExecutable::read_output(std::size_t index, std::byte* dst) const {
  const Output& o = outputs_.at(index);
  if (o.shape.bytes() > 0)
    std::memcpy(dst, o.at, static_cast<std::size_t>(o.shape.bytes()));
}

std::string CpuExecutable::listing() const {
  std::string s;
  for (const Record& r : kernels_)
    s += r.label + "\n";
  return s;
}

} // namespace rlx::cpu
