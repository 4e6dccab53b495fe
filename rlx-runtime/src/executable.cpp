// executable.cpp: Executable: parameters on the host, variants per binding, runs.
#include "rlx/runtime/executable.hpp"

#include "rlx/ir/reference.hpp"
#include "session_state.hpp"

#include <chrono>
#include <cstring>
#include <set>

namespace rlx::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// "a, b, c and 4 more".
std::string name_list(const std::vector<std::string>& names, std::size_t max = 5) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i)
    s += (i ? ", " : "") + names[i];
  if (names.size() > max)
    s += " and " + std::to_string(names.size() - max) + " more";
  return s;
}

/// Whether \p value fits declared type \p want: same dtype and rank, equal static dims.
bool fits(const ir::Shape& want, const ir::Shape& value) {
  if (want.dtype != value.dtype || want.rank() != value.rank())
    return false;
  for (std::size_t i = 0; i < want.rank(); ++i)
    if (want[i].is_static() && want[i].size() != value[i].size())
      return false;
  return true;
}

/// The variant of \p st for \p given bindings (restricted to the graph's symbols and merged with
/// the compile-time ones), compiled and loaded with every param set so far on first use.
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
    const auto t0 = Clock::now();
    CompiledGraph out{compile::CompilePipeline(*ss.backend, co).run(ir::Module::hir(st.graph)), 0};
    out.pipeline_ms = ms_since(t0);
    return out;
  });

  auto v = std::make_unique<detail::Variant>();
  const auto t0 = Clock::now();
  v->exe = ss.backend->compile(compiled->result.lir);
  v->info.backend_ms = ms_since(t0);
  v->info.bindings = b;
  v->info.compiled = compiled;
  v->info.cache_hit = hit;
  v->info.device_bytes = v->exe->device_bytes();
  v->info.executable = v->exe.get();
  const ir::Graph& lir = compiled->result.lir.graph();
  for (const auto& [name, type] : st.input_types)
    if (lir.find_leaf(name).valid())
      v->lir_inputs.push_back(name);
  for (const auto& [name, value] : st.params)
    if (lir.find_leaf(name, /*param=*/true).valid())
      v->exe->set_param(name, value);
  return *st.variants.emplace(b, std::move(v)).first->second;
}

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

void Executable::set_param(const std::string& name, const ir::Tensor& value) {
  auto& st = *state_;
  auto it = std::find_if(st.param_types.begin(), st.param_types.end(),
                         [&](const auto& p) { return p.first == name; });
  if (it == st.param_types.end())
    throw Error("set_param: graph '" + st.graph.name() + "' has no param '" + name + "'");
  if (value.empty() && value.shape().numel() != 0) // a default Tensor is empty but rank 0
    throw Error("set_param: param '" + name + "' given an empty tensor");
  if (!fits(it->second, value.shape()))
    throw Error("set_param: param '" + name + "' is " + it->second.str() + ", given " +
                value.shape().str());
  st.params[name] = value;
  for (auto& [b, v] : st.variants)
    if (v->info.compiled->result.lir.graph().find_leaf(name, /*param=*/true).valid())
      v->exe->set_param(name, value);
}

void Executable::set_params(const TensorMap& values) {
  for (const auto& [name, value] : values)
    set_param(name, value);
}

std::vector<std::string> Executable::missing_params() const {
  std::vector<std::string> out;
  for (const auto& [name, type] : state_->param_types)
    if (!state_->params.count(name))
      out.push_back(name);
  return out;
}

void Executable::load_params(const std::filesystem::path& path, const LoadOptions& opts) {
  SafetensorsReader file(path);
  // The file's name for a param: prefix + name, else the bare name (HF keeps lm_head.weight
  // outside "model."), each also in the legacy TF spelling LayerNorm.gamma / .beta that older
  // BERT checkpoints (bert-base-uncased) still use.
  auto key_of = [&](const std::string& name) {
    std::vector<std::string> names{name};
    for (auto [modern, legacy] : {std::pair{".LayerNorm.weight", ".LayerNorm.gamma"},
                                  std::pair{".LayerNorm.bias", ".LayerNorm.beta"}})
      if (name.ends_with(modern))
        names.push_back(name.substr(0, name.size() - std::strlen(modern)) + legacy);
    for (const auto& n : names) {
      if (file.find(opts.prefix + n))
        return opts.prefix + n;
      if (!opts.prefix.empty() && file.find(n))
        return n;
    }
    return opts.prefix + name;
  };
  std::vector<std::string> missing, extra, mistyped;
  std::set<std::string> wanted;
  for (const auto& [name, type] : state_->param_types) {
    const std::string key = key_of(name);
    wanted.insert(key);
    const SafetensorsEntry* e = file.find(key);
    if (!e) {
      missing.push_back(key);
      continue;
    }
    const bool float_ok =
        opts.convert_floats && ir::is_float(type.dtype) && ir::is_float(e->shape.dtype);
    if (!fits(type.with_dtype(float_ok ? e->shape.dtype : type.dtype), e->shape))
      mistyped.push_back(key + " is " + e->shape.str() + ", expected " + type.str());
  }
  for (const auto& e : file.entries())
    if (!wanted.count(e.name))
      extra.push_back(e.name);

  std::string problems;
  auto add = [&](const std::string& part) { problems += (problems.empty() ? "" : "; ") + part; };
  if (!missing.empty() && !opts.allow_missing) {
    std::string hint;
    // A checkpoint whose names carry a prefix the graph lacks ("bert.", "model.").
    const std::string& first = missing.front();
    for (const auto& e : file.entries())
      if (e.name.size() > first.size() && e.name.ends_with("." + first)) {
        hint = " (the file names it '" + e.name + "': load with prefix '" +
               e.name.substr(0, e.name.size() - first.size()) + "')";
        break;
      }
    add(std::to_string(missing.size()) + " missing: " + name_list(missing) + hint);
  }
  if (!extra.empty() && !opts.allow_extra)
    add(std::to_string(extra.size()) + " unexpected: " + name_list(extra));
  if (!mistyped.empty())
    add(std::to_string(mistyped.size()) + " mistyped: " + name_list(mistyped, 3));
  if (!problems.empty())
    throw Error("load_params '" + file.path() + "': " + problems);

  for (const auto& [name, type] : state_->param_types) {
    const std::string key = key_of(name);
    if (!file.find(key))
      continue;
    ir::Tensor t = file.read(key);
    set_param(name, t.dtype() == type.dtype ? t : t.cast(type.dtype));
  }
}

const VariantInfo& Executable::prepare(const ir::Bindings& bindings) {
  return variant_for(*state_, bindings).info;
}

std::vector<const VariantInfo*> Executable::variants() const {
  std::vector<const VariantInfo*> out;
  for (const auto& [b, v] : state_->variants)
    out.push_back(&v->info);
  return out;
}

const VariantInfo* Executable::variant(const ir::Bindings& bindings) const {
  auto it = state_->variants.find(bindings);
  return it == state_->variants.end() ? nullptr : &it->second->info;
}

std::map<std::string, ir::Tensor> Executable::run(const std::map<std::string, ir::Tensor>& inputs) {
  auto& st = *state_;
  if (auto missing = missing_params(); !missing.empty())
    throw Error("run: " + std::to_string(missing.size()) +
                " params never set: " + name_list(missing) + " (use set_param or load_params)");
  ir::Bindings b;
  try {
    b = ir::reference::bind_inputs(st.graph, inputs, st.params);
  } catch (const ir::EvalError& e) {
    throw Error(std::string("run: ") + e.what());
  }
  detail::Variant& v = variant_for(st, b);
  for (const auto& name : v.lir_inputs)
    v.exe->set_input(name, inputs.at(name));
  v.exe->execute();
  std::map<std::string, ir::Tensor> out;
  for (std::size_t i = 0; i < st.output_names.size(); ++i)
    out.emplace(st.output_names[i], v.exe->output(i));
  return out;
}

} // namespace rlx::runtime
