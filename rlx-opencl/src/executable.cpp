// executable.cpp: OpenClExecutable: the arena (split when it exceeds the largest allocation),
// constants and metadata uploaded once, the step list, I/O and the run.
#include "executable.hpp"

#include "lower.hpp"
#include "rlx/compile/cost_model.hpp"
#include "rlx/compile/lir_check.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/opencl/claims.hpp"

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <sstream>

namespace rlx::opencl {

std::vector<std::pair<std::int64_t, std::int64_t>>
split_arena(std::vector<std::pair<std::int64_t, std::int64_t>> extents, std::int64_t max_chunk) {
  std::sort(extents.begin(), extents.end());
  // Groups of overlapping extents: a chunk boundary may only fall between groups.
  std::vector<std::pair<std::int64_t, std::int64_t>> groups;
  for (const auto& [b, e] : extents) {
    if (e <= b)
      continue;
    if (!groups.empty() && b < groups.back().second)
      groups.back().second = std::max(groups.back().second, e);
    else
      groups.emplace_back(b, e);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> chunks;
  for (const auto& [b, e] : groups) {
    if (e - b > max_chunk)
      throw Error("rlx-opencl: buffers overlapping at arena bytes [" + std::to_string(b) + ", " +
                  std::to_string(e) + ") need " + std::to_string(e - b) +
                  " bytes in one allocation; the device allows at most " +
                  std::to_string(max_chunk));
    if (!chunks.empty() && e - chunks.back().first <= max_chunk)
      chunks.back().second = e;
    else
      chunks.emplace_back(b, e);
  }
  return chunks;
}

namespace {

/// A weight's device copy: one buffer on one device, shared through the weight region.
struct DeviceWeight {
  std::shared_ptr<DeviceRuntime> rt; ///< keeps the context and queue alive
  Mem mem;
  std::int64_t bytes = 0;
};

} // namespace

void OpenClExecutable::bind_weight(const ir::Graph& g, ir::NodeId id, int device) {
  const ir::Node& n = g.node(id);
  const std::string& name = n.attr<ir::LeafAttrs>().name;
  const std::string kind = "opencl:" + std::to_string(device);
  weights_->storage(name, n.shape); // creates the weight (zero, unset) when new; checks its type
  for (const auto& d : weights_->derived(name))
    if (d->kind == kind) {
      weights_->use_derived(name, d, this);
      weight_mem_[id.v] = static_cast<DeviceWeight*>(d->state.get())->mem.get();
      weight_by_name_[name] = weight_mem_[id.v];
      return;
    }
  auto w = std::make_shared<DeviceWeight>();
  w->rt = rt_;
  w->bytes = std::max<std::int64_t>(n.shape.bytes(), 4);
  cl_int err = CL_SUCCESS;
  w->mem = Mem(clCreateBuffer(rt_->context.get(), CL_MEM_READ_WRITE,
                              static_cast<std::size_t>(w->bytes), nullptr, &err));
  check(err, "clCreateBuffer of weight '" + name + "'");
  auto d = std::make_shared<compile::WeightRegion::Derived>();
  d->kind = kind;
  d->bytes = w->bytes;
  DeviceWeight* raw = w.get();
  const std::int64_t bytes = n.shape.bytes();
  d->refresh = [raw, bytes, name](const std::byte* plain) {
    if (bytes > 0)
      check(clEnqueueWriteBuffer(raw->rt->queue.get(), raw->mem.get(), CL_TRUE, 0,
                                 static_cast<std::size_t>(bytes), plain, 0, nullptr, nullptr),
            "uploading weight '" + name + "'");
  };
  d->restore = [raw, bytes, name](std::byte* plain) {
    if (bytes > 0)
      check(clEnqueueReadBuffer(raw->rt->queue.get(), raw->mem.get(), CL_TRUE, 0,
                                static_cast<std::size_t>(bytes), plain, 0, nullptr, nullptr),
            "reading weight '" + name + "' back");
  };
  d->state = w;
  weight_mem_[id.v] = raw->mem.get();
  weight_by_name_[name] = raw->mem.get();
  weights_->add_derived(name, d, this); // uploads the current value once
}

cl_mem OpenClExecutable::weight_buffer(const std::string& name) const {
  auto it = weight_by_name_.find(name);
  return it == weight_by_name_.end() ? nullptr : it->second;
}

OpenClExecutable::OpenClExecutable(const ir::Module& lir, std::shared_ptr<DeviceRuntime> rt,
                                   std::int64_t alignment, std::int64_t max_chunk,
                                   KernelChoices choices,
                                   std::shared_ptr<compile::WeightRegion> weights, int device)
    : rt_(std::move(rt)), weights_(std::move(weights)) {
  // alignment: the device's base-address alignment (the backend's alignment()).
  compile::check_compilable(lir, "rlx-opencl", alignment);
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();
  cl_context ctx = rt_->context.get();
  cl_command_queue q = rt_->queue.get();

  // Weights from the region: each Param reads its device copy, not an arena slot. If the
  // constructor throws, no destructor runs: the guard forgets what was registered so far.
  struct ReleaseOnThrow {
    compile::WeightRegion* region;
    const void* reader;
    bool armed = true;
    ~ReleaseOnThrow() {
      if (armed && region)
        region->release(reader);
    }
  } guard{weights_.get(), this};
  if (weights_) {
    for (ir::NodeId id : g.params())
      if (g.shape(id).bytes() > max_chunk)
        throw Error("rlx-opencl: weight " + ir::describe(g, id) + " needs " +
                    std::to_string(g.shape(id).bytes()) +
                    " bytes in one buffer; the device allows at most " + std::to_string(max_chunk));
    for (ir::NodeId id : g.params())
      bind_weight(g, id, device);
    for (const ir::BufferSlot& s : plan.assignments)
      if (s.storage == ir::Storage::aliased)
        updated_.push_back(g.node(s.view_of).attr<ir::LeafAttrs>().name);
    for (const auto& [name, mem] : weight_by_name_)
      device_bytes_ += weights_->shape(name).bytes();
  }
  // The arena: one buffer, or several split between buffers no slot crosses.
  std::vector<std::pair<std::int64_t, std::int64_t>> extents;
  for (std::size_t i = 0; i < plan.assignments.size(); ++i) {
    const ir::BufferSlot& s = plan.assignments[i];
    if (s.storage == ir::Storage::none || s.storage == ir::Storage::view || s.bytes == 0 ||
        weight_mem_.count(static_cast<std::uint32_t>(i)) ||
        (weights_ && s.storage == ir::Storage::aliased))
      continue;
    if (s.offset < 0 || s.offset + s.bytes > plan.arena_size)
      throw Error("rlx-opencl: a memory plan slot lies outside the arena");
    extents.emplace_back(s.offset, s.offset + s.bytes);
  }
  for (const ir::ScratchSlot& s : plan.scratch)
    extents.emplace_back(s.offset, s.offset + s.bytes);
  for (const auto& [b, e] : split_arena(extents, max_chunk)) {
    cl_int err = CL_SUCCESS;
    Chunk c{b, e,
            Mem(clCreateBuffer(ctx, CL_MEM_READ_WRITE, static_cast<std::size_t>(e - b), nullptr,
                               &err))};
    check(err, "clCreateBuffer of " + std::to_string(e - b) + " arena bytes");
    device_bytes_ += e - b;
    chunks_.push_back(std::move(c));
  }
  cl_int err = CL_SUCCESS;
  status_ = Mem(clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * sizeof(cl_int), nullptr, &err));
  check(err, "clCreateBuffer (status)");
  const cl_int zero[2] = {0, 0};
  check(clEnqueueWriteBuffer(q, status_.get(), CL_TRUE, 0, sizeof zero, zero, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer (status)");

  plan_ = &plan;
  const ir::ClaimSet& claims = opencl_claims();
  Lowerer lower(g, *this, *rt_, status_.get(), steps_, status_labels_, choices);
  for (ir::NodeId id : plan.schedule) {
    const ir::Node& n = g.node(id);
    const ir::BufferSlot& slot = plan.slot(id);
    if (n.op == ir::OpKind::Input || n.op == ir::OpKind::Param) {
      auto& leaves = n.op == ir::OpKind::Input ? inputs_ : params_;
      leaves[n.attr<ir::LeafAttrs>().name] =
          Leaf{n.shape, n.shape.bytes() > 0 ? loc(g, id) : Loc{}, false};
      continue;
    }
    if (n.op == ir::OpKind::Constant) {
      const ir::Tensor& v = n.attr<ir::ConstantAttrs>().value;
      if (slot.storage != ir::Storage::none && v.nbytes() > 0) {
        const Loc l = loc(g, id);
        check(clEnqueueWriteBuffer(q, l.mem, CL_TRUE, static_cast<std::size_t>(l.offset),
                                   v.nbytes(), v.raw(), 0, nullptr, nullptr),
              "uploading " + ir::describe(g, id));
      }
      continue;
    }
    if (slot.storage == ir::Storage::none || (!n.shape.is_tuple() && n.shape.numel() == 0))
      continue;
    if (!claims.supports(g, id))
      throw Error("rlx-opencl: cannot run " + ir::describe(g, id) + " on " +
                  std::string(ir::dtype_name(n.shape.dtype)) +
                  ": the OpenCL backend does not claim it (legalise the graph first)");
    if (compile::is_pure_view(g, id)) {
      if (slot.storage == ir::Storage::view)
        continue; // aliased by the planner: nothing to run
      Step s;     // a view with a buffer of its own: copy the viewed bytes
      s.copy_src = loc(g, n.inputs[0]);
      s.copy_src.offset += compile::view_byte_offset(g, id);
      s.copy_dst = loc(g, id);
      s.copy_bytes = n.shape.bytes();
      s.label = "%" + std::to_string(id.v) + " " + std::string(ir::op_name(n.op)) + " [copy]";
      s.node = id.v;
      s.what = "copy";
      steps_.push_back(std::move(s));
      continue;
    }
    lower.lower(id);
  }

  const auto& words = lower.aux();
  const std::size_t aux_bytes = std::max<std::size_t>(words.size(), 1) * sizeof(std::int64_t);
  aux_ = Mem(clCreateBuffer(ctx, CL_MEM_READ_ONLY, aux_bytes, nullptr, &err));
  check(err, "clCreateBuffer (kernel metadata)");
  if (!words.empty())
    check(clEnqueueWriteBuffer(q, aux_.get(), CL_TRUE, 0, words.size() * sizeof(std::int64_t),
                               words.data(), 0, nullptr, nullptr),
          "uploading the kernel metadata");
  device_bytes_ += static_cast<std::int64_t>(aux_bytes);
  lower.bind_aux(aux_.get());

  for (ir::NodeId o : g.outputs())
    outputs_.push_back({g.shape(o), g.shape(o).bytes() > 0 ? loc(g, o) : Loc{}});
  // The profile's rates, as the CPU's table gives them: GFLOP/s for the products and attention,
  // GB/s of operands and result for the rest (a copy moves its bytes twice: read and write).
  for (const compile::KernelWork& w : compile::kernel_work(lir)) {
    const ir::OpKind op = g.node(w.node).op;
    const bool product = op == ir::OpKind::MatMul || op == ir::OpKind::MatMulBiasAct ||
                         op == ir::OpKind::SwiGluMatMul || op == ir::OpKind::Attention;
    work_[w.node.v] = {product ? w.flops : 0.0, w.bytes};
  }
  for (const Step& s : steps_) {
    op_names_[s.node] = std::string(ir::op_name(g.node(ir::NodeId{s.node}).op));
    if (!s.kernel && !s.call)
      work_[s.node] = {0.0, 2.0 * static_cast<double>(s.copy_bytes)};
  }
  plan_ = nullptr;
  guard.armed = false;
}

OpenClExecutable::~OpenClExecutable() {
  if (weights_)
    weights_->release(this);
}

std::pair<Loc, std::int64_t> OpenClExecutable::scratch_loc(ir::NodeId id) const {
  if (plan_ != nullptr)
    for (const ir::ScratchSlot& s : plan_->scratch)
      if (s.node == id)
        for (const Chunk& c : chunks_)
          if (s.offset >= c.begin && s.offset + s.bytes <= c.end)
            return {Loc{c.mem.get(), s.offset - c.begin}, s.bytes};
  return {Loc{}, 0};
}

Loc OpenClExecutable::loc(const ir::Graph& g, ir::NodeId id) const {
  const ir::BufferSlot& s = plan_ ? plan_->slot(id) : ir::BufferSlot{};
  if (s.storage == ir::Storage::none)
    throw Error("rlx-opencl: " + ir::describe(g, id) + " has no buffer in the memory plan");
  // A weight read from the region, or a view of one: its device copy at the view's offset.
  // An aliased output (an in-place update, Graph::aliases) writes its Param's own buffer.
  if (s.storage == ir::Storage::aliased)
    return loc(g, s.view_of);
  const ir::NodeId root = s.storage == ir::Storage::view ? s.view_of : id;
  if (auto w = weight_mem_.find(root.v); w != weight_mem_.end())
    return {w->second, s.offset - plan_->slot(root).offset};
  for (const Chunk& c : chunks_)
    if (s.offset >= c.begin && s.offset + s.bytes <= c.end)
      return {c.mem.get(), s.offset - c.begin};
  throw Error("rlx-opencl: the buffer of " + ir::describe(g, id) + " lies in no arena chunk");
}

void OpenClExecutable::upload(std::map<std::string, Leaf>& leaves, const char* what,
                              const std::string& name, const ir::Tensor& value) {
  auto it = leaves.find(name);
  if (it == leaves.end()) {
    std::string known;
    for (const auto& [n, l] : leaves)
      known += (known.empty() ? "" : ", ") + n;
    throw Error(std::string(what) + ": the graph has no " +
                (&leaves == &inputs_ ? "input" : "param") + " named '" + name +
                "' (it has: " + (known.empty() ? "none" : known) + ")");
  }
  Leaf& leaf = it->second;
  if (value.shape() != leaf.shape)
    throw Error(std::string(what) + " '" + name + "': expected " + leaf.shape.str() + ", got " +
                value.shape().str());
  if (value.nbytes() > 0)
    check(clEnqueueWriteBuffer(rt_->queue.get(), leaf.loc.mem, CL_TRUE,
                               static_cast<std::size_t>(leaf.loc.offset), value.nbytes(),
                               value.raw(), 0, nullptr, nullptr),
          std::string(what) + " '" + name + "'");
  leaf.set = true;
}

void OpenClExecutable::set_input(const std::string& name, const ir::Tensor& value) {
  upload(inputs_, "set_input", name, value);
}

void OpenClExecutable::set_param(const std::string& name, const ir::Tensor& value) {
  if (weights_ && weight_by_name_.count(name)) {
    auto it = params_.find(name);
    if (value.shape() != it->second.shape)
      throw Error("set_param '" + name + "': expected " + it->second.shape.str() + ", got " +
                  value.shape().str());
    weights_->write(name, value); // refreshes the device copy every executable reads
    it->second.set = true;
    return;
  }
  upload(params_, "set_param", name, value);
}

void OpenClExecutable::execute() {
  std::shared_lock<std::shared_mutex> weights_in_use;
  if (weights_)
    weights_in_use = std::shared_lock<std::shared_mutex>(weights_->use_mutex());
  for (const auto* leaves : {&inputs_, &params_})
    for (const auto& [name, leaf] : *leaves)
      if (!leaf.set && !(leaves == &params_ && weights_ && weights_->is_set(name)))
        throw Error(std::string("execute: ") + (leaves == &inputs_ ? "input" : "param") + " '" +
                    name + "' was never set");
  // The one execution path: every step, in schedule order, on the in-order queue (the device's
  // profiling queue while profiled, with one event per step).
  cl_command_queue q = profiling_ ? profiling_queue(*rt_) : rt_->queue.get();
  struct Events { // released however execute() leaves (a failed enqueue or status included)
    std::vector<cl_event> v;
    ~Events() {
      for (cl_event e : v)
        if (e)
          clReleaseEvent(e);
    }
  } events;
  enqueue_steps(q, profiling_ ? &events.v : nullptr);
  if (status_labels_.empty())
    check(clFinish(q), "clFinish");
  else
    check_status(q);
  if (profiling_)
    record_run(events.v);
  // Weights updated in place on the device: where the region also holds their plain bytes (a
  // host executable reads them), those are refreshed from the device, then the other copies.
  for (const std::string& name : updated_)
    if (weights_->plain_held(name)) {
      const ir::Shape shape = weights_->shape(name);
      std::byte* plain = weights_->storage_for_update(name, shape);
      check(clEnqueueReadBuffer(q, weight_by_name_.at(name), CL_TRUE, 0,
                                static_cast<std::size_t>(shape.bytes()), plain, 0, nullptr,
                                nullptr),
            "reading updated weight '" + name + "'");
      weights_->updated_in_place(name);
    }
}

void OpenClExecutable::check_status(cl_command_queue q) {
  // Kernels that can fail report through the status word: one small read, which also waits.
  cl_int status[2] = {0, 0};
  check(
      clEnqueueReadBuffer(q, status_.get(), CL_TRUE, 0, sizeof status, status, 0, nullptr, nullptr),
      "reading the status word");
  if (status[0] != 0) {
    const cl_int zero[2] = {0, 0};
    check(
        clEnqueueWriteBuffer(q, status_.get(), CL_TRUE, 0, sizeof zero, zero, 0, nullptr, nullptr),
        "clearing the status word");
    const std::string who =
        status[1] >= 1 && static_cast<std::size_t>(status[1]) <= status_labels_.size()
            ? status_labels_[static_cast<std::size_t>(status[1] - 1)]
            : std::string("a kernel");
    throw Error("execute: " + who + ": an index is out of range");
  }
}

void OpenClExecutable::enqueue_steps(cl_command_queue q, std::vector<cl_event>* events) {
  const auto ev = [&]() -> cl_event* {
    if (!events)
      return nullptr;
    events->push_back(nullptr);
    return &events->back();
  };
  for (const Step& s : steps_) {
    if (s.call) {
      if (events)
        check(clEnqueueMarkerWithWaitList(q, 0, nullptr, ev()), "clEnqueueMarkerWithWaitList");
      s.call(q);
      if (events)
        check(clEnqueueMarkerWithWaitList(q, 0, nullptr, ev()), "clEnqueueMarkerWithWaitList");
      continue;
    }
    if (!s.kernel) {
      check(clEnqueueCopyBuffer(q, s.copy_src.mem, s.copy_dst.mem,
                                static_cast<std::size_t>(s.copy_src.offset),
                                static_cast<std::size_t>(s.copy_dst.offset),
                                static_cast<std::size_t>(s.copy_bytes), 0, nullptr, ev()),
            s.label);
      continue;
    }
    const bool local = s.local[0] != 0;
    check(clEnqueueNDRangeKernel(q, s.kernel.get(), s.dims, nullptr, s.global,
                                 local ? s.local : nullptr, 0, nullptr, ev()),
          s.label);
  }
}

namespace {
/// A profiling timestamp (ns) of event \p e.
double stamp(cl_event e, cl_profiling_info what) {
  cl_ulong t = 0;
  check(clGetEventProfilingInfo(e, what, sizeof t, &t, nullptr), "clGetEventProfilingInfo");
  return static_cast<double>(t);
}
} // namespace

void OpenClExecutable::record_run(const std::vector<cl_event>& events) {
  step_ms_.resize(steps_.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    double ns = 0;
    if (steps_[i].call) { // between the markers' ends: the library's commands in between
      ns = stamp(events[at + 1], CL_PROFILING_COMMAND_END) -
           stamp(events[at], CL_PROFILING_COMMAND_END);
      at += 2;
    } else {
      ns = stamp(events[at], CL_PROFILING_COMMAND_END) -
           stamp(events[at], CL_PROFILING_COMMAND_START);
      at += 1;
    }
    step_ms_[i].push_back(std::max(ns, 0.0) * 1e-6);
  }
  ++profiled_runs_;
}

void OpenClExecutable::set_profiling(bool on) {
  if (on)
    profiling_queue(*rt_); // created now, not inside the first timed run
  profiling_ = on;
  profiled_runs_ = 0;
  step_ms_.clear();
}

compile::KernelTimings OpenClExecutable::timings() const {
  compile::KernelTimings out;
  out.runs = profiled_runs_;
  if (profiled_runs_ == 0)
    return out;
  // A node's steps are consecutive (lowered together): one row per node, its steps' times
  // summed per run, then the median over the runs.
  for (std::size_t i = 0; i < steps_.size();) {
    std::size_t e = i + 1;
    while (e < steps_.size() && steps_[e].node == steps_[i].node)
      ++e;
    compile::KernelTiming k;
    k.node = "%" + std::to_string(steps_[i].node);
    k.op = op_names_.at(steps_[i].node);
    k.provider = steps_[i].what;
    for (std::size_t j = i + 1; j < e; ++j)
      k.note += (j == i + 1 ? "+ " : ", ") + steps_[j].what;
    std::vector<double> per_run(static_cast<std::size_t>(profiled_runs_), 0.0);
    for (std::size_t j = i; j < e; ++j)
      for (std::size_t r = 0; r < per_run.size(); ++r)
        per_run[r] += step_ms_[j][r];
    for (double t : per_run)
      k.total_ms += t;
    std::sort(per_run.begin(), per_run.end());
    const std::size_t n = per_run.size();
    k.median_ms = n % 2 ? per_run[n / 2] : 0.5 * (per_run[n / 2 - 1] + per_run[n / 2]);
    if (auto w = work_.find(steps_[i].node); w != work_.end()) {
      k.flops = w->second.first;
      k.bytes = w->second.second;
    }
    out.kernels.push_back(std::move(k));
    i = e;
  }
  return out;
}

ir::Tensor OpenClExecutable::output(std::size_t index) const {
  if (index >= outputs_.size())
    throw Error("output: index " + std::to_string(index) + " is out of range (the graph has " +
                std::to_string(outputs_.size()) + " outputs)");
  const Output& o = outputs_[index];
  ir::Tensor t(o.shape);
  if (t.nbytes() > 0)
    check(clEnqueueReadBuffer(rt_->queue.get(), o.loc.mem, CL_TRUE,
                              static_cast<std::size_t>(o.loc.offset), t.nbytes(), t.raw(), 0,
                              nullptr, nullptr),
          "reading output " + std::to_string(index));
  return t;
}

std::string OpenClExecutable::listing() const {
  std::ostringstream os;
  for (const Step& s : steps_)
    os << s.label << "\n";
  return os.str();
}

} // namespace rlx::opencl
