// session.cpp: Session: backend creation, graph verification, Executable construction.
#include "rlx/runtime/session.hpp"

#include "rlx/ir/verify.hpp"
#include "session_state.hpp"

#include <set>

namespace rlx::runtime {

namespace {

/// Output names: each output node's label, else (or when the label is taken) "output<i>".
std::vector<std::string> output_names_of(const ir::Graph& g) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (std::size_t i = 0; i < g.outputs().size(); ++i) {
    std::string name = g.node(g.outputs()[i]).name;
    if (name.empty() || used.count(name))
      name = "output" + std::to_string(i);
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::pair<std::string, ir::Shape>> leaf_types(const ir::Graph& g,
                                                          const std::vector<ir::NodeId>& ids) {
  std::vector<std::pair<std::string, ir::Shape>> out;
  for (ir::NodeId id : ids) {
    const auto& leaf = g.node(id).attr<ir::LeafAttrs>();
    out.emplace_back(leaf.name, leaf.shape);
  }
  return out;
}

} // namespace

Session::Session(Device device, SessionOptions opts)
    : state_(std::make_shared<detail::SessionState>()) {
  auto& s = *state_;
  s.device = device;
  s.registry = opts.backends.empty() ? builtin_backends(opts.cpu) : std::move(opts.backends);
  s.backend = s.registry.create(device);
  s.cache = opts.cache ? std::move(opts.cache) : std::make_shared<CompileCache>();
  s.device_key = device.str() + " " + s.backend->name();
  const std::string config = s.registry.config(device.kind);
  if (!config.empty())
    s.device_key += " " + config;
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const Device& Session::device() const {
  return state_->device;
}
const compile::Backend& Session::backend() const {
  return *state_->backend;
}
CompileCache& Session::cache() const {
  return *state_->cache;
}

Executable Session::compile(const ir::Module& m, const CompileOptions& opts) const {
  if (m.stage() == ir::Stage::lir)
    throw Error("Session::compile: module '" + m.graph().name() +
                "' is already LIR (compiled); pass its HIR or MIR graph");
  return compile(m.graph(), opts);
}

Executable Session::compile(const ir::Graph& g, const CompileOptions& opts) const {
  ir::verify(g);
  auto st = std::make_unique<detail::ExecutableState>();
  st->session = state_;
  st->graph = g;
  st->options = opts;
  st->options_key =
      std::string("fold=") + (opts.fold_constants ? "1" : "0") + " fuse=" + (opts.fuse ? "1" : "0");
  for (const std::string& pass : opts.fusion.disabled)
    st->options_key += " no-fuse-pass=" + pass;
  for (const std::string& pass : opts.fusion.enabled)
    st->options_key += " fuse-pass=" + pass;
  fusion::check_fusion_options(opts.fusion);
  st->graph_hash = g.hash();
  st->symbols = g.symbols();
  st->output_names = output_names_of(g);
  st->input_types = leaf_types(g, g.inputs());
  st->param_types = leaf_types(g, g.params());
  st->weights = opts.weights ? opts.weights : std::make_shared<compile::WeightRegion>();
  for (const auto& [name, type] : st->param_types)
    if (st->weights->contains(name) && type.is_static() && st->weights->shape(name) != type)
      throw Error("Session::compile: param '" + name + "' is " + type.str() +
                  " but the shared weights hold it as " + st->weights->shape(name).str());
  for (const auto& [sym, size] : opts.bindings) {
    if (std::find(st->symbols.begin(), st->symbols.end(), sym) == st->symbols.end())
      throw Error("Session::compile: bindings name symbol '" + sym + "', which graph '" + g.name() +
                  "' does not use");
    if (size < 0)
      throw Error("Session::compile: symbol '" + sym + "' bound to a negative size");
  }
  Executable exe(std::move(st));
  bool all_bound = true;
  for (const auto& sym : exe.state_->symbols)
    all_bound = all_bound && opts.bindings.count(sym);
  if (all_bound)
    exe.prepare(opts.bindings);
  return exe;
}

} // namespace rlx::runtime
