// executable.cpp: Executable: weights in a shared region, variants per binding, runs from any
// number of threads (a backend executable per concurrent run of a variant).
#include "rlx/runtime/executable.hpp"

#include "io/param_match.hpp"
#include "session_state.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

namespace rlx::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Checks \p got against the declared type \p want of \p what and binds its symbols into \p b.
void match_type(const ir::Shape& want, const ir::Shape& got, const std::string& what,
                ir::Bindings& b, std::map<std::string, std::string>& origins) {
  if (got.dtype != want.dtype)
    throw Error("run: " + what + " has dtype " + std::string(ir::dtype_name(got.dtype)) +
                ", expected " + want.str());
  if (got.rank() != want.rank())
    throw Error("run: " + what + " has shape " + got.str() + ", expected rank " +
                std::to_string(want.rank()) + " " + want.str());
  for (std::size_t d = 0; d < want.rank(); ++d) {
    const std::int64_t size = got[d].size();
    const std::string where = what + " dim " + std::to_string(d);
    if (want[d].is_static()) {
      if (size != want[d].size())
        throw Error("run: " + where + " is " + std::to_string(size) + ", expected " + want.str() +
                    " (got " + got.str() + ")");
      continue;
    }
    auto [it, fresh] = b.emplace(want[d].symbol(), size);
    if (fresh)
      origins[want[d].symbol()] = where;
    else if (it->second != size)
      throw Error("run: contradictory sizes for symbol '" + want[d].symbol() + "': " + where +
                  " is " + std::to_string(size) + " but " + origins[want[d].symbol()] +
                  " bound it to " + std::to_string(it->second));
  }
}

/// The symbol sizes of a run on \p inputs (checked against the declared input types, with
/// symbolic weight dims taken from the weights set).
ir::Bindings bind_run(const detail::ExecutableState& st,
                      const std::map<std::string, ir::Tensor>& inputs) {
  ir::Bindings b;
  std::map<std::string, std::string> origins;
  for (const auto& [name, type] : st.input_types) {
    auto it = inputs.find(name);
    if (it == inputs.end())
      throw Error("run: missing input '" + name + "' of type " + type.str());
    if (it->second.empty() && it->second.numel() != 0)
      throw Error("run: input '" + name + "' has no value (an empty Tensor)");
    match_type(type, it->second.shape(), "input '" + name + "'", b, origins);
  }
  for (const auto& [name, type] : st.param_types)
    if (!type.is_static())
      match_type(type, st.weights->shape(name), "param '" + name + "'", b, origins);
  for (const auto& [name, value] : inputs)
    if (std::none_of(st.input_types.begin(), st.input_types.end(),
                     [&](const auto& t) { return t.first == name; })) {
      std::string known;
      for (const auto& [n, t] : st.input_types)
        known += (known.empty() ? "'" : ", '") + n + "'";
      throw Error("run: unknown input '" + name + "'; the graph's inputs are " +
                  (known.empty() ? std::string("none") : known));
    }
  return b;
}

/// A backend executable of \p v reading \p st's weight region.
std::unique_ptr<compile::Executable> new_instance(const detail::ExecutableState& st,
                                                  const detail::Variant& v) {
  return st.session->backend->compile_with_weights(v.info.compiled->result.lir, st.weights);
}

/// The variant of \p st for \p given bindings (restricted to the graph's symbols and merged with
/// the compile-time ones), compiled with one backend executable on first use. The caller holds
/// st.mutex.
detail::Variant& variant_for(detail::ExecutableState& st, const ir::Bindings& given) {
  ir::Bindings b;
  for (const auto& sym : st.symbols) {
    auto fixed = st.options.bindings.find(sym);
    auto it = given.find(sym);
    if (fixed != st.options.bindings.end() && it != given.end() && it->second != fixed->second)
      throw Error("symbol '" + sym + "' is fixed to " + std::to_string(fixed->second) +
                  " at compile time, got " + std::to_string(it->second));
    if (it != given.end())
      b[sym] = it->second;
    else if (fixed != st.options.bindings.end())
      b[sym] = fixed->second;
    else
      throw Error("symbol '" + sym + "' of graph '" + st.graph.name() + "' is not bound");
  }
  if (auto it = st.variants.find(b); it != st.variants.end())
    return *it->second;

  const detail::SessionState& ss = *st.session;
  CacheKey key{st.graph_hash, b, ss.device_key, st.options_key};
  bool hit = true;
  auto compiled = ss.cache->get_or_compile(key, st.graph, [&] {
    hit = false;
    compile::CompileOptions co;
    co.bindings = b;
    co.fold_constants = st.options.fold_constants;
    co.fuse = st.options.fuse;
    co.fusion = st.options.fusion;
    const auto t0 = Clock::now();
    CompiledGraph out{compile::CompilePipeline(*ss.backend, co).run(ir::Module::hir(st.graph)), 0};
    out.pipeline_ms = ms_since(t0);
    return out;
  });

  auto v = std::make_unique<detail::Variant>();
  v->info.bindings = b;
  v->info.compiled = compiled;
  v->info.cache_hit = hit;
  const auto t0 = Clock::now();
  v->instances.push_back(new_instance(st, *v));
  v->info.backend_ms = ms_since(t0);
  v->info.device_bytes = v->instances.front()->device_bytes();
  v->info.executable = v->instances.front().get();
  v->idle.push_back(v->instances.front().get());
  const ir::Graph& lir = compiled->result.lir.graph();
  for (const auto& [name, type] : st.input_types)
    if (lir.find_leaf(name).valid())
      v->lir_inputs.push_back(name);
  for (const auto& [name, type] : st.param_types)
    if (lir.find_leaf(name, /*param=*/true).valid())
      v->lir_params.push_back(name);
  return *st.variants.emplace(b, std::move(v)).first->second;
}

/// Gives weight \p name's value (made by \p value on demand) to every backend executable of \p st
/// that holds weights in memory of its own rather than reading the region in place.
template <class Value>
void update_device_copies(detail::ExecutableState& st, const std::string& name, Value&& value) {
  std::lock_guard lock(st.mutex);
  for (auto& [b, v] : st.variants)
    if (std::find(v->lir_params.begin(), v->lir_params.end(), name) != v->lir_params.end())
      for (auto& exe : v->instances)
        if (!exe->reads_weights_in_place())
          exe->set_param(name, value());
}

/// Returns a backend executable to its variant's idle list when a run ends (or throws).
class CheckedOut {
public:
  CheckedOut(detail::ExecutableState& st, detail::Variant& v, compile::Executable* exe)
      : st_(st), v_(v), exe_(exe) {}
  ~CheckedOut() {
    std::lock_guard lock(st_.mutex);
    v_.idle.push_back(exe_); // capacity reserved when the instance was made: no allocation
  }
  CheckedOut(const CheckedOut&) = delete;
  CheckedOut& operator=(const CheckedOut&) = delete;
  compile::Executable& operator*() const { return *exe_; }

private:
  detail::ExecutableState& st_;
  detail::Variant& v_;
  compile::Executable* exe_;
};

} // namespace

Executable::Executable(std::unique_ptr<detail::ExecutableState> state) : state_(std::move(state)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

const ir::Graph& Executable::graph() const {
  return state_->graph;
}

std::vector<std::pair<std::string, ir::Shape>> Executable::inputs() const {
  return state_->input_types;
}

std::vector<std::pair<std::string, ir::Shape>> Executable::params() const {
  return state_->param_types;
}

const std::vector<std::string>& Executable::output_names() const {
  return state_->output_names;
}

std::shared_ptr<compile::WeightRegion> Executable::weights() const {
  return state_->weights;
}

void Executable::set_param(const std::string& name, const ir::Tensor& value) {
  auto& st = *state_;
  auto it = std::find_if(st.param_types.begin(), st.param_types.end(),
                         [&](const auto& p) { return p.first == name; });
  if (it == st.param_types.end())
    throw Error("set_param: graph '" + st.graph.name() + "' has no param '" + name + "'");
  if (value.empty() && value.shape().numel() != 0) // a default Tensor is empty but rank 0
    throw Error("set_param: param '" + name + "' given an empty tensor");
  if (!detail::fits(it->second, value.shape()))
    throw Error("set_param: param '" + name + "' is " + it->second.str() + ", given " +
                value.shape().str());
  // Every in-place reader (every variant, every executable sharing the region) sees the write,
  // which waits for running executables to finish.
  st.weights->write(name, value);
  update_device_copies(st, name, [&] { return value; }); // memory of its own: a copy
}

void Executable::set_params(const TensorMap& values) {
  for (const auto& [name, value] : values)
    set_param(name, value);
}

std::vector<std::string> Executable::missing_params() const {
  std::vector<std::string> out;
  for (const auto& [name, type] : state_->param_types)
    if (!state_->weights->is_set(name))
      out.push_back(name);
  return out;
}

void Executable::load_params(const std::filesystem::path& path, const LoadOptions& opts) {
  SafetensorsReader file(path);
  const std::vector<std::string> keys = detail::match_params(
      state_->param_types, file.entries(), [&](const std::string& n) { return file.find(n); }, opts,
      file.path());

  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& [name, type] = state_->param_types[i];
    const std::string& key = keys[i];
    const SafetensorsEntry* e = file.find(key);
    if (!e)
      continue;
    // A tensor of the param's dtype, aligned in the file, is read in place from the mapping when
    // no executable holds storage for it yet; anything else is copied.
    if (e->shape.dtype == type.dtype) {
      auto mapped = file.map(key);
      if (mapped && state_->weights->adopt(name, mapped->shape, mapped->data, mapped->mapping)) {
        update_device_copies(*state_, name, [&] { return state_->weights->read(name); });
        continue;
      }
    }
    ir::Tensor t = file.read(key);
    set_param(name, t.dtype() == type.dtype ? t : t.cast(type.dtype));
  }
}

const VariantInfo& Executable::prepare(const ir::Bindings& bindings) {
  std::lock_guard lock(state_->mutex);
  return variant_for(*state_, bindings).info;
}

std::vector<const VariantInfo*> Executable::variants() const {
  std::lock_guard lock(state_->mutex);
  std::vector<const VariantInfo*> out;
  for (const auto& [b, v] : state_->variants)
    out.push_back(&v->info);
  return out;
}

const VariantInfo* Executable::variant(const ir::Bindings& bindings) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->variants.find(bindings);
  return it == state_->variants.end() ? nullptr : &it->second->info;
}

std::size_t Executable::contexts() const {
  std::lock_guard lock(state_->mutex);
  std::size_t n = 0;
  for (const auto& [b, v] : state_->variants)
    n += v->instances.size();
  return n;
}

std::map<std::string, ir::Tensor> Executable::run(const std::map<std::string, ir::Tensor>& inputs) {
  std::vector<std::size_t> all(state_->output_names.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  std::vector<ir::Tensor> values = run_selected(inputs, all);
  std::map<std::string, ir::Tensor> out;
  for (std::size_t i = 0; i < all.size(); ++i)
    out.emplace(state_->output_names[i], std::move(values[i]));
  return out;
}

std::vector<ir::Tensor> Executable::run_selected(const std::map<std::string, ir::Tensor>& inputs,
                                                 const std::vector<std::size_t>& outputs) {
  auto& st = *state_;
  for (std::size_t i : outputs)
    if (i >= st.output_names.size())
      throw Error("run: output index " + std::to_string(i) + " is out of range (the graph has " +
                  std::to_string(st.output_names.size()) + " outputs)");
  if (auto missing = missing_params(); !missing.empty())
    throw Error("run: " + std::to_string(missing.size()) + " params never set: " +
                detail::name_list(missing) + " (use set_param or load_params)");
  const ir::Bindings b = bind_run(st, inputs);
  // Take an idle backend executable of the variant, or make one more (its own arena, the same
  // weights) when every one is running on another thread.
  detail::Variant* v = nullptr;
  compile::Executable* exe = nullptr;
  {
    std::lock_guard lock(st.mutex);
    v = &variant_for(st, b);
    if (!v->idle.empty()) {
      exe = v->idle.back();
      v->idle.pop_back();
    }
  }
  if (!exe) {
    auto fresh = new_instance(st, *v);
    std::lock_guard lock(st.mutex);
    v->instances.push_back(std::move(fresh));
    v->idle.reserve(v->instances.size());
    exe = v->instances.back().get();
  }
  CheckedOut held(st, *v, exe);
  for (const auto& name : v->lir_inputs)
    (*held).set_input(name, inputs.at(name));
  (*held).execute();
  std::vector<ir::Tensor> out;
  out.reserve(outputs.size());
  for (std::size_t i : outputs)
    out.push_back((*held).output(i));
  return out;
}

} // namespace rlx::runtime
