// export.hpp: rlx MIR graph -> ONNX ModelProto.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/onnx/error.hpp"
#include "rlx/onnx/import.hpp"

#include <filesystem>
#include <string>

namespace rlx::onnx {

/// How a graph is exported.
struct ExportOptions {
  std::int64_t opset = 17;       ///< the default-domain opset written (17: LayerNormalization)
  std::string producer = "rlx";  ///< producer_name
  bool params_as_inputs = false; ///< Params become graph inputs instead of initializers
};

/// Serializes \p g as an ONNX ModelProto. Params become initializers holding \p params' values
/// (graph inputs when ExportOptions::params_as_inputs); symbolic dims become dim_params. Every op
/// maps onto its ONNX spelling; a graph with ops that have none (HIR blocks, Attention, Rope, ...)
/// throws ExportError listing all of them.
std::string export_model(const ir::Graph& g, const TensorMap& params = {},
                         const ExportOptions& opts = {});
/// export_model written to \p path.
void export_file(const ir::Graph& g, const std::filesystem::path& path,
                 const TensorMap& params = {}, const ExportOptions& opts = {});

} // namespace rlx::onnx
