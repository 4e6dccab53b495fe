// importer.hpp: the import machinery shared by the op converters (internal).
#pragma once

#include "proto.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/onnx/import.hpp"

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace rlx::onnx::detail {

class Importer;

/// One ONNX graph being imported (the main graph or an If branch): its rlx graph, the ONNX value
/// names in scope, and the outer scope it captures from.
struct Scope {
  ir::Graph* graph = nullptr;
  Scope* parent = nullptr;
  std::map<std::string, ir::NodeId> env; ///< ONNX value name -> node
  std::set<std::string> poisoned;        ///< values whose producer failed to import
  std::vector<ir::NodeId> captures;      ///< parent nodes read by this scope, in Input order
  std::map<std::uint32_t, std::optional<ir::Tensor>> values; ///< folded values, by node id
};

/// The view of one ONNX node a converter works with: its operands, attributes and outputs.
class NodeCtx {
public:
  NodeCtx(Importer& imp, Scope& scope, const pb::NodeProto& node, std::int64_t opset);

  const pb::NodeProto& node() const { return node_; }
  /// The default-domain opset of the model.
  std::int64_t opset() const { return opset_; }
  ir::Builder& b() { return b_; }
  ir::Graph& g() { return *scope_.graph; }

  /// Number of input slots (absent optional inputs included).
  std::size_t num_inputs() const { return static_cast<std::size_t>(node_.input_size()); }
  /// Whether optional input \p i is given.
  bool has(std::size_t i) const;
  /// Input \p i; throws Invalid when absent.
  ir::NodeId in(std::size_t i);
  const ir::Shape& shape(std::size_t i) { return g().shape(in(i)); }
  /// The value of input \p i when it is known at import time (a constant, an initializer or
  /// computed from them only), else nullopt.
  std::optional<ir::Tensor> value(std::size_t i);
  /// The value of input \p i, which must be known; throws Unsupported naming \p what otherwise.
  ir::Tensor need_value(std::size_t i, const std::string& what);
  /// need_value read as int64 values.
  std::vector<std::int64_t> need_ints(std::size_t i, const std::string& what);
  /// The value of node \p id when known at import time.
  std::optional<ir::Tensor> value_of(ir::NodeId id);

  bool has_attr(const std::string& name) const;
  std::int64_t attr_i(const std::string& name, std::int64_t def);
  double attr_f(const std::string& name, double def);
  std::string attr_s(const std::string& name, const std::string& def);
  std::optional<std::vector<std::int64_t>> attr_ints(const std::string& name);
  std::optional<std::vector<float>> attr_floats(const std::string& name);
  const pb::TensorProto* attr_t(const std::string& name);
  const pb::GraphProto* attr_g(const std::string& name);
  /// Marks attribute \p name as read (it has no effect on inference).
  void ignore(const std::string& name) { used_.insert(name); }
  /// Attributes the converter never read (reported as unsupported).
  std::vector<std::string> unread_attrs() const;

  std::size_t num_outputs() const { return static_cast<std::size_t>(node_.output_size()); }
  /// Whether output \p i exists and has a name (is read by someone).
  bool output_used(std::size_t i) const;
  /// Binds output \p i to \p id.
  void set(std::size_t i, ir::NodeId id);

  /// A scalar constant \p v of dtype \p t.
  ir::NodeId scalar(double v, ir::DType t) { return b_.scalar(v, t); }
  /// A constant holding \p value.
  ir::NodeId constant(ir::Tensor value) { return b_.constant(std::move(value)); }
  /// Imports \p body as a sub-graph of this scope (If branches); \returns the graph with one
  /// Input per captured outer value and the captured parent nodes.
  std::pair<ir::Graph, std::vector<ir::NodeId>> subgraph(const pb::GraphProto& body);

private:
  Importer& imp_;
  Scope& scope_;
  const pb::NodeProto& node_;
  std::int64_t opset_;
  ir::Builder b_;
  std::set<std::string> used_;
};

/// Converts one ONNX node; throws Unsupported / Invalid / rlx::Error on failure.
using Converter = void (*)(NodeCtx&);

/// The converter of default-domain op \p op_type, or null.
Converter find_converter(const std::string& op_type);
/// Every op name with a converter, sorted.
std::vector<std::string> converter_names();

/// One row of a converter group's table: an ONNX op name and its converter.
struct ConverterEntry {
  const char* name;
  Converter fn;
};

// Converter groups (one file each), each a table of its ops.
/// Elementwise math, comparisons, activations (ops_elementwise.cpp).
std::span<const ConverterEntry> elementwise_converters();
/// Shape and data movement, constants, Shape-driven ops (ops_movement.cpp).
std::span<const ConverterEntry> movement_converters();
/// MatMul, Gemm, Einsum, reductions, softmax, normalisation, conv, pooling (ops_nn.cpp).
std::span<const ConverterEntry> nn_converters();
/// If (ops_control.cpp).
std::span<const ConverterEntry> control_converters();
/// GatherElements, Trilu, CumSum, Hardmax, DepthToSpace, the losses (ops_indexing.cpp).
std::span<const ConverterEntry> indexing_converters();

/// Imports ONNX graphs into rlx graphs, collecting every problem.
class Importer {
public:
  Importer(const ImportOptions& opts, std::int64_t opset) : opts_(opts), opset_(opset) {}

  /// Imports the nodes of \p gp into \p scope (inputs and initializers already bound);
  /// \returns false when some node failed (the problems are recorded).
  bool import_nodes(const pb::GraphProto& gp, Scope& scope);
  /// Declares \p gp's initializers in \p scope (Constants when small, else Params into params()).
  void bind_initializers(const pb::GraphProto& gp, Scope& scope, bool as_params);
  /// Looks up value \p name in \p scope, capturing it from outer scopes; invalid when undefined.
  ir::NodeId lookup(Scope& scope, const std::string& name);

  void problem(std::string msg, bool unsupported);
  void need_input(const std::string& name) { needed_.insert(name); }
  const std::vector<std::string>& problems() const { return problems_; }
  bool all_unsupported() const { return all_unsupported_; }
  std::vector<std::string> needed_inputs() const { return {needed_.begin(), needed_.end()}; }
  const ImportOptions& options() const { return opts_; }
  TensorMap& params() { return params_; }
  std::int64_t opset() const { return opset_; }

private:
  const ImportOptions& opts_;
  std::int64_t opset_;
  std::vector<std::string> problems_;
  bool all_unsupported_ = true;
  std::set<std::string> needed_;
  TensorMap params_;
};

/// "Conv node 'conv1'" (or "Conv node #3 (output 'y')" when the node has no name).
std::string describe_node(const pb::NodeProto& n, int index);

// Shared helpers for converters.
/// Product of dims \p d[from, to): a static size, or the one symbol when it is the only non-1 dim;
/// throws Unsupported otherwise.
ir::Dim dims_product(const std::vector<ir::Dim>& d, std::size_t from, std::size_t to);
/// Reshape \p x to \p dims (skipped when already so).
ir::NodeId reshape_to(NodeCtx& c, ir::NodeId x, std::vector<ir::Dim> dims);
/// Pads axis \p axis of \p x with \p before / \p after cells of value \p v (concat of expanded
/// constants).
ir::NodeId pad_axis(NodeCtx& c, ir::NodeId x, std::int64_t axis, std::int64_t before,
                    std::int64_t after, double v);
/// Largest tensor the importer builds itself (index maps, masks, interpolation matrices, folded
/// ranges): 2^24 elements. A larger one is refused (Unsupported) instead of exhausting memory.
inline constexpr std::int64_t kMaxBuiltElements = std::int64_t{1} << 24;
/// Throws Unsupported naming \p what when \p numel exceeds kMaxBuiltElements.
void check_built_size(std::int64_t numel, const std::string& what);
/// Normalises an ONNX axis against \p rank; throws Invalid when out of range.
std::int64_t norm_axis(std::int64_t axis, std::size_t rank, const char* what);

} // namespace rlx::onnx::detail
