// import.hpp: ONNX ModelProto -> rlx MIR graph.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"
#include "rlx/onnx/error.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::onnx {

/// Tensors by name (weights, inputs, outputs).
using TensorMap = std::map<std::string, ir::Tensor>;

/// How a model is imported.
struct ImportOptions {
  /// Initializers with at most this many elements become Constants (so shape operands and small
  /// scalars fold); larger ones become Params whose values are returned in ImportedModel::params.
  std::int64_t max_constant_elements = 64;
  /// Every floating-point initializer becomes a Param, whatever its size: the initializers are the
  /// model's parameters (`rlx grad --onnx` asks for the gradient of each). Integer and bool
  /// initializers still follow max_constant_elements, and every initializer still folds.
  bool float_initializers_as_params = false;
  /// Sizes for symbolic dims (ONNX dim_param names, or "<input>_<axis>" for unnamed dynamic dims).
  /// A bound dim imports as a static size, so Shape-driven subgraphs over it fold.
  ir::Bindings bindings;
  /// Graph inputs fixed to these values at import time: they become Constants (their shapes and
  /// values fold into what reads them). Used for inputs that feed shapes or axes.
  TensorMap input_values;
};

/// The result of an import.
struct ImportedModel {
  ir::Graph graph;                  ///< the MIR graph (Inputs / Params keep the ONNX names)
  TensorMap params;                 ///< the value of every Param, by name (from the initializers)
  std::vector<std::string> inputs;  ///< ONNX graph input names, in order (initializers excluded)
  std::vector<std::string> outputs; ///< ONNX graph output names, in graph-output order
  std::int64_t opset = 0;           ///< the default-domain opset the model imports
  std::string producer;             ///< producer_name + version, for messages
};

/// Imports a serialized ModelProto. Throws ImportError listing every problem found.
ImportedModel import_model(std::string_view bytes, const ImportOptions& opts = {});
/// Imports the .onnx file at \p path (external data is not supported).
ImportedModel import_file(const std::filesystem::path& path, const ImportOptions& opts = {});

/// Reads a serialized TensorProto (the .pb files of the ONNX test data); \returns its value and
/// sets \p name to its name when given. Throws ImportError on an unreadable or unsupported tensor.
ir::Tensor read_tensor(std::string_view bytes, std::string* name = nullptr);
/// read_tensor of the file at \p path.
ir::Tensor read_tensor_file(const std::filesystem::path& path, std::string* name = nullptr);

/// The ONNX ops the importer converts (default domain), sorted.
std::vector<std::string> supported_ops();

} // namespace rlx::onnx
