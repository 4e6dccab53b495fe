// onnx_model.cpp: `--onnx model.onnx` for the rlx subcommands: the model's graph, its weights (the
// initializers) and its input / output names, with --batch / --seq bound at import time.
#include "model_args.hpp"

#ifdef RLX_WITH_ONNX
#include "rlx/onnx/import.hpp"
#endif

namespace rlx::cli {

ResolvedModel resolve_onnx(const ModelArgs& a) {
#ifdef RLX_WITH_ONNX
  if (!a.graph_file.empty() || !a.weights.empty() || a.layers || a.hidden || a.heads ||
      a.kv_heads || a.ffn || a.vocab || !a.dims.empty() || a.embeddings || a.padding_mask ||
      a.lm_head)
    throw Error("--onnx takes the graph and weights from the model file; drop --graph, "
                "--weights and the model config flags");
  // Exporters compute reshape targets from Shape, so the dynamic dims are bound at import time
  // (static shapes fold); other symbols stay symbolic.
  onnx::ImportOptions opts;
  opts.float_initializers_as_params = a.onnx_all_params;
  opts.bindings = {{"batch", a.batch.value_or(1)}, {"seq", a.seq.value_or(128)}};
  for (const auto& [sym, v] : opts.bindings)
    if (v <= 0)
      throw Error("--" + sym + " must be positive, got " + std::to_string(v));
  onnx::ImportedModel im = onnx::import_file(a.onnx_file, opts);
  ResolvedModel m;
  m.graph = std::move(im.graph);
  m.params = std::move(im.params);
  m.description = "onnx: " + a.onnx_file + " (opset " + std::to_string(im.opset) +
                  (im.producer.empty() ? "" : ", " + im.producer) + ", " +
                  std::to_string(m.graph.size()) + " nodes)";
  for (const auto& sym : m.graph.symbols())
    throw Error("--onnx: dynamic dim '" + sym + "' has no size option (rlx binds batch and seq)");
  m.notes.push_back("dynamic dims batch = " + std::to_string(opts.bindings["batch"]) +
                    ", seq = " + std::to_string(opts.bindings["seq"]) +
                    " where the model has them (bound at import)");
  return m;
#else
  (void)a;
  throw Error("--onnx: this rlx was built without rlx-onnx (RLX_WITH_ONNX=OFF or libonnx-dev "
              "missing)");
#endif
}

} // namespace rlx::cli
