// importer.cpp: ModelProto -> rlx graph: scopes, values, attribute access and error collection.
#include "importer.hpp"

#include "rlx/ir/reference.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

namespace rlx::onnx {

namespace {
std::string join_problems(const std::string& model, const std::vector<std::string>& problems) {
  std::string msg = "cannot import ONNX model" + (model.empty() ? "" : " '" + model + "'") + ": ";
  if (problems.size() > 1)
    msg += std::to_string(problems.size()) + " problems: ";
  for (std::size_t i = 0; i < problems.size(); ++i)
    msg += (i ? "; " : "") + problems[i];
  return msg;
}
} // namespace

ImportError::ImportError(const std::string& model, std::vector<std::string> problems,
                         std::vector<std::string> needed_inputs, bool unsupported)
    : Error(join_problems(model, problems)), problems_(std::move(problems)),
      needed_inputs_(std::move(needed_inputs)), unsupported_(unsupported) {}

namespace detail {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

namespace {

/// Largest value folded at import time (shape computations are tiny; this keeps a hostile model
/// from making the importer materialise a huge tensor).
constexpr std::int64_t kMaxFoldElements = std::int64_t{1} << 22;

/// A node whose problems were already recorded (a failing sub-graph): poison without a message.
class AlreadyReported : public Error {
public:
  AlreadyReported() : Error("already reported") {}
};

std::string sanitize_symbol(const std::string& s) {
  std::string out;
  for (char ch : s)
    out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "d_" + out;
  return out;
}

bool is_default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

} // namespace

std::string describe_node(const pb::NodeProto& n, int index) {
  std::string s = n.op_type() + " node ";
  if (!n.name().empty())
    return s + "'" + n.name() + "'";
  s += "#" + std::to_string(index);
  if (n.output_size() > 0)
    s += " (output '" + n.output(0) + "')";
  return s;
}

void check_built_size(std::int64_t numel, const std::string& what) {
  if (numel < 0 || numel > kMaxBuiltElements)
    throw Unsupported(what + " of " + std::to_string(numel) +
                      " elements is too large to build at import time (limit 2^24)");
}

std::int64_t norm_axis(std::int64_t axis, std::size_t rank, const char* what) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw Invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

Dim dims_product(const std::vector<Dim>& d, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  const Dim* sym = nullptr;
  for (std::size_t i = from; i < to; ++i) {
    if (d[i].is_symbolic()) {
      if (sym)
        throw Unsupported("a product of symbolic dims (" + sym->str() + " * " + d[i].str() +
                          ") is not supported; bind the symbols");
      sym = &d[i];
    } else {
      p *= d[i].size();
    }
  }
  if (sym) {
    if (p != 1)
      throw Unsupported("a product of symbolic and static dims (" + sym->str() + " * " +
                        std::to_string(p) + ") is not supported; bind the symbols");
    return *sym;
  }
  return Dim(p);
}

NodeId reshape_to(NodeCtx& c, NodeId x, std::vector<Dim> dims) {
  if (c.g().shape(x).dims == dims)
    return x;
  return c.b().reshape(x, std::move(dims));
}

NodeId pad_axis(NodeCtx& c, NodeId x, std::int64_t axis, std::int64_t before, std::int64_t after,
                double v) {
  if (before == 0 && after == 0)
    return x;
  if (before < 0 || after < 0)
    throw Unsupported("negative padding is not supported");
  const ir::Shape s = c.g().shape(x); // a copy: adding nodes moves the node list
  auto block = [&](std::int64_t n) {
    std::vector<Dim> d = s.dims;
    d[static_cast<std::size_t>(axis)] = Dim(n);
    return c.b().expand(c.scalar(v, s.dtype), std::move(d));
  };
  std::vector<NodeId> parts;
  if (before > 0)
    parts.push_back(block(before));
  parts.push_back(x);
  if (after > 0)
    parts.push_back(block(after));
  return c.b().concat(std::move(parts), axis);
}

// ---- NodeCtx -----------------------------------------------------------------------------------

NodeCtx::NodeCtx(Importer& imp, Scope& scope, const pb::NodeProto& node, std::int64_t opset)
    : imp_(imp), scope_(scope), node_(node), opset_(opset), b_(*scope.graph) {}

bool NodeCtx::has(std::size_t i) const {
  return i < num_inputs() && !node_.input(static_cast<int>(i)).empty();
}

NodeId NodeCtx::in(std::size_t i) {
  if (!has(i))
    throw Invalid("input " + std::to_string(i) + " is missing");
  NodeId id = imp_.lookup(scope_, node_.input(static_cast<int>(i)));
  if (!id.valid())
    throw Invalid("reads undefined value '" + node_.input(static_cast<int>(i)) + "'");
  return id;
}

std::optional<ir::Tensor> NodeCtx::value_of(NodeId id) {
  auto it = scope_.values.find(id.v);
  if (it != scope_.values.end())
    return it->second;
  const ir::Node& n = g().node(id);
  std::optional<ir::Tensor> v;
  if (n.op == OpKind::Constant) {
    v = n.attr<ir::ConstantAttrs>().value;
  } else if (n.op == OpKind::Param) {
    auto p = imp_.params().find(n.attr<ir::LeafAttrs>().name);
    if (p != imp_.params().end())
      v = p->second;
  } else if (n.op != OpKind::Input && !ir::has_flag(n.op, ir::kSubgraphs) && n.shape.is_static() &&
             n.shape.numel() <= kMaxFoldElements) {
    std::vector<ir::Tensor> args;
    bool known = true;
    for (NodeId a : n.inputs) {
      auto av = value_of(a);
      if (!av) {
        known = false;
        break;
      }
      args.push_back(std::move(*av));
    }
    if (known)
      v = ir::reference::evaluate_node(n, args);
  }
  scope_.values[id.v] = v;
  return v;
}

std::optional<ir::Tensor> NodeCtx::value(std::size_t i) {
  return value_of(in(i));
}

ir::Tensor NodeCtx::need_value(std::size_t i, const std::string& what) {
  NodeId id = in(i);
  if (auto v = value_of(id))
    return *v;
  // Name the graph inputs the value depends on, so a caller can fix them.
  std::vector<NodeId> stack{id};
  std::set<std::uint32_t> seen;
  while (!stack.empty()) {
    NodeId x = stack.back();
    stack.pop_back();
    if (!seen.insert(x.v).second)
      continue;
    const ir::Node& n = g().node(x);
    if (n.op == OpKind::Input && scope_.parent == nullptr)
      imp_.need_input(n.attr<ir::LeafAttrs>().name);
    for (NodeId a : n.inputs)
      stack.push_back(a);
  }
  throw Unsupported(what + " (input '" + node_.input(static_cast<int>(i)) +
                    "') must be known at import time (a constant, an initializer or computed "
                    "from them)");
}

std::vector<std::int64_t> NodeCtx::need_ints(std::size_t i, const std::string& what) {
  ir::Tensor t = need_value(i, what);
  if (!ir::is_int(t.dtype()))
    throw Invalid(what + " must be an integer tensor, got " + t.shape().str());
  std::vector<std::int64_t> out(static_cast<std::size_t>(t.numel()));
  for (std::int64_t k = 0; k < t.numel(); ++k)
    out[static_cast<std::size_t>(k)] = t.get_i64(k);
  return out;
}

namespace {
const pb::AttributeProto* find_attr(const pb::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
void expect_attr_type(const pb::AttributeProto& a, pb::AttributeProto::AttributeType t) {
  // Older exporters leave `type` unset; accept that when the payload is there.
  if (a.type() != t && a.type() != pb::AttributeProto::UNDEFINED)
    throw Invalid("attribute '" + a.name() + "' has type " +
                  pb::AttributeProto::AttributeType_Name(a.type()) + ", expected " +
                  pb::AttributeProto::AttributeType_Name(t));
  if (!a.ref_attr_name().empty())
    throw Unsupported("attribute references (ref_attr_name) are not supported");
}
} // namespace

bool NodeCtx::has_attr(const std::string& name) const {
  return find_attr(node_, name) != nullptr;
}

std::int64_t NodeCtx::attr_i(const std::string& name, std::int64_t def) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return def;
  expect_attr_type(*a, pb::AttributeProto::INT);
  return a->i();
}

double NodeCtx::attr_f(const std::string& name, double def) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return def;
  expect_attr_type(*a, pb::AttributeProto::FLOAT);
  return a->f();
}

std::string NodeCtx::attr_s(const std::string& name, const std::string& def) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return def;
  expect_attr_type(*a, pb::AttributeProto::STRING);
  return a->s();
}

std::optional<std::vector<std::int64_t>> NodeCtx::attr_ints(const std::string& name) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return std::nullopt;
  expect_attr_type(*a, pb::AttributeProto::INTS);
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<float>> NodeCtx::attr_floats(const std::string& name) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return std::nullopt;
  expect_attr_type(*a, pb::AttributeProto::FLOATS);
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

const pb::TensorProto* NodeCtx::attr_t(const std::string& name) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return nullptr;
  expect_attr_type(*a, pb::AttributeProto::TENSOR);
  return &a->t();
}

const pb::GraphProto* NodeCtx::attr_g(const std::string& name) {
  used_.insert(name);
  auto* a = find_attr(node_, name);
  if (!a)
    return nullptr;
  expect_attr_type(*a, pb::AttributeProto::GRAPH);
  return &a->g();
}

std::vector<std::string> NodeCtx::unread_attrs() const {
  std::vector<std::string> out;
  for (const auto& a : node_.attribute())
    if (!used_.count(a.name()))
      out.push_back(a.name());
  return out;
}

bool NodeCtx::output_used(std::size_t i) const {
  return i < num_outputs() && !node_.output(static_cast<int>(i)).empty();
}

void NodeCtx::set(std::size_t i, NodeId id) {
  if (!output_used(i))
    return;
  const std::string& name = node_.output(static_cast<int>(i));
  if (scope_.env.count(name))
    throw Invalid("value '" + name + "' is defined twice");
  scope_.env[name] = id;
}

std::pair<ir::Graph, std::vector<NodeId>> NodeCtx::subgraph(const pb::GraphProto& body) {
  ir::Graph sub(body.name().empty() ? "branch" : body.name());
  Scope s;
  s.graph = &sub;
  s.parent = &scope_;
  if (body.input_size() != 0)
    throw Invalid("a branch sub-graph must have no inputs");
  imp_.bind_initializers(body, s, /*as_params=*/false);
  if (!imp_.import_nodes(body, s))
    throw AlreadyReported();
  std::vector<NodeId> outs;
  for (const auto& o : body.output()) {
    NodeId id = imp_.lookup(s, o.name());
    if (!id.valid())
      throw Invalid("sub-graph output '" + o.name() + "' is undefined");
    outs.push_back(id);
  }
  sub.set_outputs(outs);
  return {std::move(sub), std::move(s.captures)};
}

// ---- Importer ----------------------------------------------------------------------------------

void Importer::problem(std::string msg, bool unsupported) {
  problems_.push_back(std::move(msg));
  if (!unsupported)
    all_unsupported_ = false;
}

NodeId Importer::lookup(Scope& scope, const std::string& name) {
  auto it = scope.env.find(name);
  if (it != scope.env.end())
    return it->second;
  if (!scope.parent)
    return {};
  NodeId pid = lookup(*scope.parent, name);
  if (!pid.valid())
    return {};
  const ir::Node& pn = scope.parent->graph->node(pid);
  ir::Builder b(*scope.graph);
  NodeId id;
  if (pn.op == OpKind::Constant) {
    id = b.constant(pn.attr<ir::ConstantAttrs>().value);
  } else {
    id = b.input(name, pn.shape);
    scope.captures.push_back(pid);
  }
  scope.env[name] = id;
  return id;
}

void Importer::bind_initializers(const pb::GraphProto& gp, Scope& scope, bool as_params) {
  ir::Builder b(*scope.graph);
  if (gp.sparse_initializer_size() > 0)
    problem("sparse initializers are not supported", true);
  for (const auto& init : gp.initializer()) {
    try {
      if (init.name().empty())
        throw Invalid("an initializer has no name");
      if (scope.env.count(init.name()))
        throw Invalid("initializer '" + init.name() + "' is defined twice");
      ir::Tensor v = tensor_from_proto(init);
      NodeId id;
      const bool param = v.numel() > opts_.max_constant_elements ||
                         (opts_.float_initializers_as_params && ir::is_float(v.dtype()));
      if (!as_params || !param) {
        id = b.constant(v);
      } else {
        id = b.param(init.name(), v.shape());
        params_[init.name()] = v;
      }
      scope.env[init.name()] = id;
    } catch (const Unsupported& e) {
      problem("initializer '" + init.name() + "': " + e.what(), true);
      scope.poisoned.insert(init.name());
    } catch (const Error& e) {
      problem("initializer '" + init.name() + "': " + e.what(), false);
      scope.poisoned.insert(init.name());
    }
  }
}

namespace {
bool poisoned(const Scope& s, const std::string& name) {
  for (const Scope* p = &s; p; p = p->parent) {
    if (p->env.count(name))
      return false;
    if (p->poisoned.count(name))
      return true;
  }
  return false;
}
} // namespace

bool Importer::import_nodes(const pb::GraphProto& gp, Scope& scope) {
  bool ok = true;
  for (int k = 0; k < gp.node_size(); ++k) {
    const pb::NodeProto& n = gp.node(k);
    std::string desc = describe_node(n, k);
    auto poison = [&] {
      ok = false;
      for (const auto& o : n.output())
        if (!o.empty())
          scope.poisoned.insert(o);
    };
    if (!is_default_domain(n.domain())) {
      problem(desc + ": op " + n.domain() + "::" + n.op_type() + " is not supported", true);
      poison();
      continue;
    }
    Converter conv = find_converter(n.op_type());
    if (!conv) {
      problem(desc + ": op " + n.op_type() + " is not supported", true);
      poison();
      continue;
    }
    bool skip = false;
    for (const auto& in : n.input()) {
      if (in.empty())
        continue;
      if (poisoned(scope, in)) {
        skip = true; // its producer's problem is reported already
      } else if (!lookup(scope, in).valid()) {
        problem(desc + ": reads undefined value '" + in +
                    "' (graph inputs, initializers and earlier nodes only; cycles and unsorted "
                    "nodes are invalid)",
                false);
        skip = true;
      }
    }
    if (skip) {
      poison();
      continue;
    }
    try {
      NodeCtx c(*this, scope, n, opset_);
      conv(c);
      auto unread = c.unread_attrs();
      if (!unread.empty()) {
        std::string names;
        for (const auto& a : unread)
          names += (names.empty() ? "" : ", ") + a;
        throw Unsupported("attribute" + std::string(unread.size() > 1 ? "s " : " ") + names +
                          " not supported");
      }
      for (int o = 0; o < n.output_size(); ++o)
        if (!n.output(o).empty() && !scope.env.count(n.output(o)))
          throw Unsupported("output " + std::to_string(o) + " ('" + n.output(o) +
                            "') is not supported");
    } catch (const AlreadyReported&) {
      poison();
    } catch (const Unsupported& e) {
      problem(desc + ": " + e.what(), true);
      poison();
    } catch (const std::exception& e) {
      problem(desc + ": " + e.what(), false);
      poison();
    }
  }
  return ok;
}

// ---- converter table ---------------------------------------------------------------------------

namespace {
constexpr std::span<const ConverterEntry> (*kGroups[])() = {
    &elementwise_converters, &movement_converters, &nn_converters, &indexing_converters,
    &control_converters};
} // namespace

Converter find_converter(const std::string& op) {
  for (auto* group : kGroups)
    for (const ConverterEntry& e : group())
      if (op == e.name)
        return e.fn;
  return nullptr;
}

std::vector<std::string> converter_names() {
  std::vector<std::string> all;
  for (auto* group : kGroups)
    for (const ConverterEntry& e : group())
      all.emplace_back(e.name);
  std::sort(all.begin(), all.end());
  return all;
}

} // namespace detail

// ---- public entry points ---------------------------------------------------------------------

namespace {

using detail::Invalid;
namespace pb = ::onnx;
using detail::Unsupported;

ir::Shape input_type(const pb::ValueInfoProto& vi, const ImportOptions& opts) {
  if (!vi.has_type() || !vi.type().has_tensor_type())
    throw Unsupported("input '" + vi.name() + "' is not a tensor (sequences, maps and optionals " +
                      "are not supported)");
  const auto& tt = vi.type().tensor_type();
  ir::DType dt = detail::require_dtype(tt.elem_type(), "input '" + vi.name() + "'");
  if (!tt.has_shape())
    throw Unsupported("input '" + vi.name() + "' has no shape (unknown rank)");
  std::vector<ir::Dim> dims;
  std::int64_t prod = 1;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    std::string sym;
    if (d.has_dim_value()) {
      std::int64_t v = d.dim_value();
      if (v < 0 || v > detail::kMaxElements)
        throw Invalid("input '" + vi.name() + "' has dim " + std::to_string(v) + " at axis " +
                      std::to_string(i));
      if (v > 0 && prod > detail::kMaxElements / v)
        throw Invalid("input '" + vi.name() + "' is too large (over 2^40 elements)");
      prod *= v;
      dims.emplace_back(v);
      continue;
    }
    sym = d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                      : vi.name() + "_" + std::to_string(i);
    sym = detail::sanitize_symbol(sym);
    auto b = opts.bindings.find(sym);
    if (b != opts.bindings.end()) {
      if (b->second < 0 || b->second > detail::kMaxElements)
        throw Invalid("binding " + sym + " = " + std::to_string(b->second) + " is out of range");
      dims.emplace_back(b->second);
    } else {
      dims.push_back(ir::Dim::sym(sym));
    }
  }
  return ir::Shape(std::move(dims), dt);
}

std::int64_t default_opset(const pb::ModelProto& m) {
  std::int64_t v = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      v = o.version();
  return v;
}

} // namespace

ImportedModel import_model(std::string_view bytes, const ImportOptions& opts) {
  pb::ModelProto m;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX) ||
      !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError("", {"the bytes are not a valid ONNX ModelProto (protobuf parse failed)"});
  std::string model_name = m.graph().name();
  std::int64_t opset = default_opset(m);
  if (opset < 0) {
    // Only nodes of other domains can be imported then (and they are all unsupported).
    for (const auto& n : m.graph().node())
      if (n.domain().empty() || n.domain() == "ai.onnx")
        throw ImportError(model_name, {"the model imports no default-domain (ai.onnx) opset but "
                                       "has " +
                                       n.op_type() + " nodes"});
  }
  if (opset > 17)
    throw ImportError(model_name,
                      {"opset " + std::to_string(opset) +
                       " is newer than the opsets 1-17 rlx "
                       "imports"},
                      {}, true);

  ImportedModel out;
  out.opset = opset;
  out.producer =
      m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  out.graph = ir::Graph(model_name.empty() ? "onnx" : model_name);
  detail::Importer imp(opts, opset);
  detail::Scope scope;
  scope.graph = &out.graph;
  const pb::GraphProto& gp = m.graph();

  std::set<std::string> init_names;
  for (const auto& i : gp.initializer())
    init_names.insert(i.name());
  ir::Builder b(out.graph);
  for (const auto& vi : gp.input()) {
    if (init_names.count(vi.name()))
      continue; // an initializer with a (legacy) input declaration: the initializer's value
    try {
      if (vi.name().empty())
        throw Invalid("a graph input has no name");
      if (scope.env.count(vi.name()))
        throw Invalid("graph input '" + vi.name() + "' is declared twice");
      ir::Shape t = input_type(vi, opts);
      auto fixed = opts.input_values.find(vi.name());
      if (fixed != opts.input_values.end()) {
        const ir::Tensor& v = fixed->second;
        if (v.dtype() != t.dtype || v.shape().rank() != t.rank())
          throw Invalid("the value given for input '" + vi.name() + "' is " + v.shape().str() +
                        ", the model declares " + t.str());
        scope.env[vi.name()] = b.constant(v);
      } else {
        scope.env[vi.name()] = b.input(vi.name(), t);
      }
      out.inputs.push_back(vi.name());
    } catch (const Unsupported& e) {
      imp.problem(e.what(), true);
      scope.poisoned.insert(vi.name());
    } catch (const Error& e) {
      imp.problem(e.what(), false);
      scope.poisoned.insert(vi.name());
    }
  }
  imp.bind_initializers(gp, scope, /*as_params=*/true);
  imp.import_nodes(gp, scope);

  std::vector<ir::NodeId> outs;
  for (const auto& o : gp.output()) {
    out.outputs.push_back(o.name());
    if (detail::poisoned(scope, o.name()))
      continue;
    ir::NodeId id = imp.lookup(scope, o.name());
    if (!id.valid()) {
      imp.problem("graph output '" + o.name() + "' is never computed", false);
      continue;
    }
    outs.push_back(id);
  }
  if (gp.output_size() == 0)
    imp.problem("the graph has no outputs", false);
  if (!imp.problems().empty())
    throw ImportError(model_name, imp.problems(), imp.needed_inputs(), imp.all_unsupported());
  // Label every node with its ONNX value name (graph outputs win), so messages, `rlx inspect`
  // and Executable::output_names() speak the model's names.
  std::map<std::uint32_t, std::string> labels;
  for (const auto& [name, id] : scope.env)
    labels[id.v] = name;
  for (std::size_t i = 0; i < outs.size(); ++i)
    labels[outs[i].v] = gp.output(static_cast<int>(i)).name();
  ir::Graph labelled(out.graph.name());
  for (ir::NodeId id : out.graph.ids()) {
    ir::Node n = out.graph.node(id);
    if (auto it = labels.find(id.v); it != labels.end() && n.name.empty())
      n.name = it->second;
    labelled.add_unchecked(std::move(n));
  }
  labelled.set_outputs(outs);
  out.graph = std::move(labelled);
  out.graph.compact();
  out.params = std::move(imp.params());
  return out;
}

namespace {
std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw ImportError(path.string(), {"cannot open " + path.string()});
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
} // namespace

ImportedModel import_file(const std::filesystem::path& path, const ImportOptions& opts) {
  std::string bytes = read_file(path);
  try {
    return import_model(bytes, opts);
  } catch (const ImportError& e) {
    std::vector<std::string> probs;
    for (const auto& p : e.problems())
      probs.push_back(p);
    throw ImportError(path.string(), std::move(probs), e.needed_inputs(), e.unsupported());
  }
}

ir::Tensor read_tensor(std::string_view bytes, std::string* name) {
  pb::TensorProto t;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError("", {"the bytes are not a valid ONNX TensorProto"});
  try {
    if (name)
      *name = t.name();
    return detail::tensor_from_proto(t);
  } catch (const Unsupported& e) {
    throw ImportError("", {e.what()}, {}, true);
  } catch (const Error& e) {
    throw ImportError("", {e.what()});
  }
}

ir::Tensor read_tensor_file(const std::filesystem::path& path, std::string* name) {
  return read_tensor(read_file(path), name);
}

std::vector<std::string> supported_ops() {
  return detail::converter_names();
}

} // namespace rlx::onnx
