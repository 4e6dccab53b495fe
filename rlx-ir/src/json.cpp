// json.cpp: JSON save / load of graphs, generic over the attribute field lists (format in
// rlx/ir/json.hpp).
#include "rlx/ir/json.hpp"

#include "attr_visit.hpp"
#include "literals.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace rlx::ir {

namespace {

using nlohmann::json;

constexpr std::string_view kFormat = "rlx.graph";
constexpr std::int64_t kVersion = 1;
/// Deepest nesting of sub-graph attributes the reader accepts.
constexpr int kMaxDepth = 32;

// ---- writing
// -------------------------------------------------------------------------------------

json graph_json(const Graph& g);

json dim_json(const Dim& d) {
  return d.is_symbolic() ? json(d.symbol()) : json(d.size());
}

json shape_json(const Shape& s) {
  if (s.is_tuple()) {
    json parts = json::array();
    for (const Shape& p : s.parts)
      parts.push_back(shape_json(p));
    return json{{"tuple", std::move(parts)}};
  }
  json dims = json::array();
  for (const Dim& d : s.dims)
    dims.push_back(dim_json(d));
  return json{{"dims", std::move(dims)}, {"dtype", dtype_name(s.dtype)}};
}

json double_json(double v) {
  if (std::isfinite(v))
    return json(v);
  return json(detail::format_double(v));
}

json tensor_json(const Tensor& t) {
  if (t.empty())
    return nullptr;
  json out{{"shape", shape_json(t.shape())}};
  if (!detail::decimal_is_exact(t)) {
    out["hex"] = detail::to_hex(t);
    return out;
  }
  json data = json::array();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::boolean)
      data.push_back(t.get_i64(i) != 0);
    else if (is_float(t.dtype()))
      data.push_back(double_json(t.get_f64(i)));
    else
      data.push_back(t.get_i64(i));
  }
  out["data"] = std::move(data);
  return out;
}

template <class F> json field_json(const F& f) {
  if constexpr (std::is_same_v<F, bool> || std::is_same_v<F, std::int64_t> ||
                std::is_same_v<F, std::string>) {
    return json(f);
  } else if constexpr (std::is_same_v<F, double>) {
    return double_json(f);
  } else if constexpr (std::is_same_v<F, DType>) {
    return json(dtype_name(f));
  } else if constexpr (detail::NamedEnum<F>) {
    return json(detail::enum_name(f));
  } else if constexpr (std::is_same_v<F, Dim>) {
    return dim_json(f);
  } else if constexpr (std::is_same_v<F, Shape>) {
    return shape_json(f);
  } else if constexpr (detail::is_vector<F>::value) {
    json a = json::array();
    for (const auto& e : f)
      a.push_back(field_json(e));
    return a;
  } else if constexpr (detail::is_optional<F>::value) {
    return f ? field_json(*f) : json(nullptr);
  } else if constexpr (std::is_same_v<F, Tensor>) {
    return tensor_json(f);
  } else if constexpr (std::is_same_v<F, SubGraph>) {
    return f ? graph_json(*f) : json(nullptr);
  } else {
    static_assert(sizeof(F) == 0, "the JSON writer does not know this attribute field type");
  }
}

json graph_json(const Graph& g) {
  json nodes = json::array();
  for (const Node& n : g.nodes()) {
    json node{{"op", static_cast<int>(n.op) < kNumOps ? std::string(op_name(n.op)) : "?"}};
    if (!n.inputs.empty()) {
      json ins = json::array();
      for (NodeId in : n.inputs)
        ins.push_back(in.v);
      node["inputs"] = std::move(ins);
    }
    json attrs = json::object();
    detail::visit_attr_fields(n.attrs, [&](std::string_view name, const auto& f) {
      attrs[std::string(name)] = field_json(f);
    });
    if (!attrs.empty())
      node["attrs"] = std::move(attrs);
    node["shape"] = shape_json(n.shape);
    if (!n.name.empty())
      node["label"] = n.name;
    nodes.push_back(std::move(node));
  }
  json outs = json::array();
  for (NodeId o : g.outputs())
    outs.push_back(o.v);
  json j{{"name", g.name()}, {"nodes", std::move(nodes)}, {"outputs", std::move(outs)}};
  if (!g.aliases().empty()) { // absent when empty, so graphs without aliases read as before
    json al = json::array();
    for (const OutputAlias& a : g.aliases())
      al.push_back(json{{"output", a.output}, {"param", a.param}});
    j["aliases"] = std::move(al);
  }
  return j;
}

// ---- reading
// -------------------------------------------------------------------------------------

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string at_index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

class Reader {
public:
  Graph graph(const json& j, const std::string& path, int depth) {
    expect_object(j, path, "a graph object");
    check_keys(j, path, {"format", "version", "name", "nodes", "outputs", "aliases"});
    Graph g(j.contains("name") ? string(j["name"], join(path, "name")) : std::string("main"));
    if (!j.contains("nodes"))
      fail(path, "missing key 'nodes'");
    const json& nodes = j["nodes"];
    const std::string npath = join(path, "nodes");
    if (!nodes.is_array())
      fail(npath, "expected an array of node objects");
    for (std::size_t i = 0; i < nodes.size(); ++i)
      node(g, nodes[i], at_index(npath, i), depth);
    std::vector<NodeId> outs;
    if (!j.contains("outputs"))
      fail(path, "missing key 'outputs'");
    const std::string opath = join(path, "outputs");
    if (!j["outputs"].is_array())
      fail(opath, "expected an array of node indices");
    for (std::size_t i = 0; i < j["outputs"].size(); ++i)
      outs.push_back(node_ref(j["outputs"][i], at_index(opath, i), g.size()));
    g.set_outputs(std::move(outs));
    if (j.contains("aliases")) {
      const std::string apath = join(path, "aliases");
      if (!j["aliases"].is_array())
        fail(apath, "expected an array of {output, param} objects");
      for (std::size_t i = 0; i < j["aliases"].size(); ++i) {
        const json& a = j["aliases"][i];
        const std::string ap = at_index(apath, i);
        expect_object(a, ap, "an {output, param} object");
        check_keys(a, ap, {"output", "param"});
        if (!a.contains("output") || !a["output"].is_number_unsigned())
          fail(ap, "expected 'output': a non-negative integer");
        if (!a.contains("param"))
          fail(ap, "missing key 'param'");
        g.add_alias(a["output"].get<std::size_t>(), string(a["param"], join(ap, "param")));
      }
    }
    try {
      verify(g);
    } catch (const VerifyError& e) {
      fail(path.empty() ? "graph" : path, e.what());
    }
    return g;
  }

private:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw ParseError((path.empty() ? std::string("document") : path) + ": " + what);
  }

  static void expect_object(const json& j, const std::string& path, const char* what) {
    if (!j.is_object())
      fail(path, std::string("expected ") + what + ", got " + j.type_name());
  }

  static void check_keys(const json& j, const std::string& path,
                         std::initializer_list<std::string_view> known) {
    for (const auto& [key, value] : j.items()) {
      bool ok = false;
      for (auto k : known)
        ok = ok || k == key;
      if (!ok)
        fail(path, "unknown key '" + key + "'");
    }
  }

  static std::string string(const json& j, const std::string& path) {
    if (!j.is_string())
      fail(path, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }

  static std::int64_t integer(const json& j, const std::string& path) {
    if (j.is_number_unsigned()) {
      auto v = j.get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(path, "integer out of range");
      return static_cast<std::int64_t>(v);
    }
    if (!j.is_number_integer())
      fail(path, std::string("expected an integer, got ") + j.type_name());
    return j.get<std::int64_t>();
  }

  static NodeId node_ref(const json& j, const std::string& path, std::size_t limit) {
    std::int64_t v = integer(j, path);
    if (v < 0 || static_cast<std::uint64_t>(v) >= limit)
      fail(path, "node " + std::to_string(v) + " is not defined before this use (" +
                     std::to_string(limit) + " nodes precede it)");
    return NodeId(static_cast<std::uint32_t>(v));
  }

  static Dim dim(const json& j, const std::string& path) {
    if (j.is_string()) {
      auto s = j.get<std::string>();
      if (s.empty())
        fail(path, "a symbolic dim needs a non-empty name");
      return Dim::sym(std::move(s));
    }
    if (!j.is_number_integer())
      fail(path, std::string("expected a dim (an integer or a symbol name), got ") + j.type_name());
    return Dim(integer(j, path));
  }

  static DType dtype(const json& j, const std::string& path) {
    auto t = parse_dtype(string(j, path));
    if (!t)
      fail(path, "unknown dtype '" + j.get<std::string>() + "'");
    return *t;
  }

  /// A tensor type, or a tuple type {"tuple": [tensor types]}.
  static Shape shape(const json& j, const std::string& path) {
    if (j.is_object() && j.contains("tuple")) {
      check_keys(j, path, {"tuple"});
      const json& parts = j["tuple"];
      const std::string ppath = join(path, "tuple");
      if (!parts.is_array() || parts.empty())
        fail(ppath, "expected a non-empty array of part types");
      std::vector<Shape> out;
      for (std::size_t i = 0; i < parts.size(); ++i)
        out.push_back(tensor_type(parts[i], at_index(ppath, i)));
      return Shape::tuple(std::move(out));
    }
    return tensor_type(j, path);
  }

  static Shape tensor_type(const json& j, const std::string& path) {
    expect_object(j, path, "a shape object {\"dims\": [...], \"dtype\": ...}");
    check_keys(j, path, {"dims", "dtype"});
    if (!j.contains("dims") || !j["dims"].is_array())
      fail(join(path, "dims"), "expected an array of dims");
    if (!j.contains("dtype"))
      fail(path, "missing key 'dtype'");
    Shape s;
    for (std::size_t i = 0; i < j["dims"].size(); ++i)
      s.dims.push_back(dim(j["dims"][i], at_index(join(path, "dims"), i)));
    s.dtype = dtype(j["dtype"], join(path, "dtype"));
    return s;
  }

  static Tensor tensor(const json& j, const std::string& path) {
    if (j.is_null())
      return Tensor();
    expect_object(j, path, "a tensor object {\"shape\": ..., \"data\": [...]}");
    check_keys(j, path, {"shape", "data", "hex"});
    if (!j.contains("shape"))
      fail(path, "missing key 'shape'");
    Shape s = tensor_type(j["shape"], join(path, "shape"));
    std::vector<std::int64_t> sizes;
    for (const Dim& d : s.dims) {
      if (d.is_symbolic())
        fail(join(path, "shape"), "a constant's shape must be static, got " + s.str());
      sizes.push_back(d.size());
    }
    // Elements are listed in the document, so its own size bounds a sane count.
    auto numel = detail::checked_numel(sizes, std::numeric_limits<std::int32_t>::max());
    if (!numel)
      fail(join(path, "shape"), "bad or oversized constant shape " + s.str());
    if (j.contains("hex") == j.contains("data"))
      fail(path, "expected exactly one of 'data' and 'hex'");
    if (j.contains("hex")) {
      std::string hex = string(j["hex"], join(path, "hex"));
      auto want = static_cast<std::size_t>(*numel) * dtype_size(s.dtype) * 2;
      if (hex.size() != want)
        fail(join(path, "hex"), "tensor " + s.str() + " needs " + std::to_string(want) +
                                    " hex digits, got " + std::to_string(hex.size()));
      Tensor t(s);
      if (!detail::from_hex(hex, t))
        fail(join(path, "hex"), "bad hex digit");
      return t;
    }
    const json& data = j["data"];
    const std::string dpath = join(path, "data");
    if (!data.is_array())
      fail(dpath, "expected an array of elements");
    if (static_cast<std::int64_t>(data.size()) != *numel)
      fail(dpath, "tensor " + s.str() + " needs " + std::to_string(*numel) + " elements, got " +
                      std::to_string(data.size()));
    Tensor t(s);
    for (std::size_t i = 0; i < data.size(); ++i) {
      const json& e = data[i];
      std::string token;
      if (e.is_boolean())
        token = e.get<bool>() ? "true" : "false";
      else if (e.is_number())
        token = e.dump();
      else if (e.is_string())
        token = e.get<std::string>();
      else
        fail(at_index(dpath, i), std::string("expected a number, got ") + e.type_name());
      std::string why = detail::set_element_text(t, static_cast<std::int64_t>(i), token);
      if (!why.empty())
        fail(at_index(dpath, i), why);
    }
    return t;
  }

  template <class F> void field(const json& j, F& f, const std::string& path, int depth) {
    if constexpr (std::is_same_v<F, bool>) {
      if (!j.is_boolean())
        fail(path, std::string("expected true or false, got ") + j.type_name());
      f = j.get<bool>();
    } else if constexpr (std::is_same_v<F, std::int64_t>) {
      f = integer(j, path);
    } else if constexpr (std::is_same_v<F, double>) {
      if (j.is_number()) {
        f = j.get<double>();
      } else {
        auto v = j.is_string() ? detail::parse_double(j.get<std::string>()) : std::nullopt;
        if (!v)
          fail(path, std::string("expected a number (or \"nan\", \"inf\", \"-inf\"), got ") +
                         j.type_name());
        f = *v;
      }
    } else if constexpr (std::is_same_v<F, std::string>) {
      f = string(j, path);
    } else if constexpr (std::is_same_v<F, DType>) {
      f = dtype(j, path);
    } else if constexpr (detail::NamedEnum<F>) {
      std::string s = string(j, path);
      if (!detail::parse_enum(s, f)) {
        std::string names;
        for (auto n : enum_names(F{}))
          names += (names.empty() ? "" : ", ") + std::string(n);
        fail(path, "unknown value '" + s + "' (expected one of " + names + ")");
      }
    } else if constexpr (std::is_same_v<F, Dim>) {
      f = dim(j, path);
    } else if constexpr (std::is_same_v<F, Shape>) {
      f = shape(j, path);
    } else if constexpr (detail::is_vector<F>::value) {
      using E = typename F::value_type;
      if (!j.is_array()) {
        const char* what = std::is_same_v<E, std::int64_t> ? "integers"
                           : std::is_same_v<E, double>     ? "numbers"
                           : std::is_same_v<E, Dim>        ? "dims"
                                                           : "values";
        fail(path, std::string("expected array of ") + what + ", got " + j.type_name());
      }
      F out;
      for (std::size_t i = 0; i < j.size(); ++i) {
        E e{};
        field(j[i], e, at_index(path, i), depth);
        out.push_back(std::move(e));
      }
      f = std::move(out);
    } else if constexpr (detail::is_optional<F>::value) {
      if (j.is_null()) {
        f.reset();
      } else {
        typename F::value_type v{};
        field(j, v, path, depth);
        f = std::move(v);
      }
    } else if constexpr (std::is_same_v<F, Tensor>) {
      f = tensor(j, path);
    } else if constexpr (std::is_same_v<F, SubGraph>) {
      if (j.is_null()) {
        f = SubGraph{};
      } else {
        if (depth + 1 > kMaxDepth)
          fail(path, "sub-graphs nest deeper than " + std::to_string(kMaxDepth) + " levels");
        f = SubGraph{std::make_shared<const Graph>(graph(j, path, depth + 1))};
      }
    } else {
      static_assert(sizeof(F) == 0, "the JSON reader does not know this attribute field type");
    }
  }

  void node(Graph& g, const json& j, const std::string& path, int depth) {
    expect_object(j, path, "a node object");
    check_keys(j, path, {"op", "inputs", "attrs", "shape", "label"});
    if (!j.contains("op"))
      fail(path, "missing key 'op'");
    std::string mnemonic = string(j["op"], join(path, "op"));
    auto op = parse_op_name(mnemonic);
    if (!op)
      fail(join(path, "op"), "unknown op '" + mnemonic + "'");
    std::vector<NodeId> inputs;
    if (j.contains("inputs")) {
      const std::string ipath = join(path, "inputs");
      if (!j["inputs"].is_array())
        fail(ipath, "expected an array of node indices");
      for (std::size_t i = 0; i < j["inputs"].size(); ++i)
        inputs.push_back(node_ref(j["inputs"][i], at_index(ipath, i), g.size()));
    }
    Attrs attrs = default_attrs(*op);
    if (j.contains("attrs")) {
      const json& ja = j["attrs"];
      const std::string apath = join(path, "attrs");
      expect_object(ja, apath, "an object of attributes");
      std::set<std::string, std::less<>> used;
      detail::visit_attr_fields(attrs, [&](std::string_view name, auto& f) {
        auto it = ja.find(std::string(name));
        if (it == ja.end())
          return; // absent fields keep their defaults
        used.insert(std::string(name));
        field(*it, f, join(apath, name), depth);
      });
      for (const auto& [key, value] : ja.items())
        if (!used.count(key)) {
          std::string known;
          detail::visit_attr_fields(attrs, [&](std::string_view name, const auto&) {
            known += (known.empty() ? "" : ", ") + std::string(name);
          });
          fail(join(apath, key),
               mnemonic + " has no attribute '" + key + "'" +
                   (known.empty() ? " (it takes none)" : " (attributes: " + known + ")"));
        }
    }
    std::string label = j.contains("label") ? string(j["label"], join(path, "label")) : "";
    if (*op == OpKind::Input || *op == OpKind::Param) {
      const auto& leaf = std::get<LeafAttrs>(attrs);
      if (g.find_leaf(leaf.name, *op == OpKind::Param).valid())
        fail(join(path, "attrs.name"), mnemonic + " name '" + leaf.name + "' is already defined");
    }
    NodeId id;
    try {
      id = g.add(*op, std::move(inputs), std::move(attrs), std::move(label));
    } catch (const ShapeError& e) {
      fail(path, e.what());
    }
    if (j.contains("shape")) {
      Shape declared = shape(j["shape"], join(path, "shape"));
      if (!(declared == g.shape(id)))
        fail(join(path, "shape"), "declared " + declared.str() + " but " + describe(g, id) +
                                      " derives " + g.shape(id).str());
    }
  }
};

} // namespace

nlohmann::json to_json(const Graph& g) {
  json j = graph_json(g);
  j["format"] = kFormat;
  j["version"] = kVersion;
  return j;
}

Graph graph_from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw ParseError(std::string("document: expected a graph object, got ") + j.type_name());
  if (j.contains("format") && !(j["format"].is_string() && j["format"] == kFormat))
    throw ParseError("format: expected \"" + std::string(kFormat) + "\"");
  if (!j.contains("version"))
    throw ParseError("document: missing key 'version'");
  if (!(j["version"].is_number_integer() && j["version"].get<std::int64_t>() == kVersion))
    throw ParseError("version: unsupported version " + j["version"].dump() + " (this build reads " +
                     std::to_string(kVersion) + ")");
  try {
    return Reader().graph(j, "", 0);
  } catch (const json::exception& e) {
    throw ParseError(std::string("malformed graph JSON: ") + e.what());
  }
}

std::string save_json(const Graph& g) {
  try {
    // One node per line: readable, and a diff of two graphs shows the nodes that changed.
    json j = to_json(g);
    std::string out = "{\"format\": " + j["format"].dump() +
                      ", \"version\": " + j["version"].dump() + ", \"name\": " + j["name"].dump() +
                      ",\n\"nodes\": [";
    const json& nodes = j["nodes"];
    for (std::size_t i = 0; i < nodes.size(); ++i)
      out += (i ? ",\n  " : "\n  ") + nodes[i].dump();
    out += "],\n\"outputs\": " + j["outputs"].dump();
    if (j.contains("aliases"))
      out += ",\n\"aliases\": " + j["aliases"].dump();
    out += "}\n";
    return out;
  } catch (const json::exception& e) {
    throw Error(std::string("save_json: ") + e.what() + " (names must be valid UTF-8)");
  }
}

Graph load_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos)
      msg = msg.substr(p + 2);
    throw ParseError("JSON syntax: " + msg);
  }
  return graph_from_json(j);
}

} // namespace rlx::ir
