// cmd_export.cpp: `rlx export`: a model's graph as JSON (weights stay outside: Params by name).
#include "commands.hpp"
#include "model_args.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/json.hpp"

#include <fstream>
#include <iostream>
#include <memory>

namespace rlx::cli {

namespace {

struct Export {
  ModelArgs model;
  std::string out;
  bool lowered = false;
  bool bind = false;

  int run() {
    ResolvedModel m = resolve_model(model, /*with_weights=*/false);
    if (model.device != "auto")     // auto measures every device: nothing to check here
      (void)make_session(model, m); // the device and backend flags must name a usable backend
    ir::Graph g = lowered ? ir::lower_hir(m.graph) : m.graph;
    if (bind)
      g = g.bind(m.bindings);
    const std::string text = ir::save_json(g);
    if (out.empty() || out == "-") {
      std::cout << text << "\n";
      return 0;
    }
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!f)
      throw Error("cannot write '" + out + "'");
    f << text << "\n";
    f.close();
    if (!f)
      throw Error("write to '" + out + "' failed");
    std::cerr << "wrote " << m.description << " to " << out << "\n";
    return 0;
  }
};

} // namespace

Command add_export(CLI::App& root) {
  auto e = std::make_shared<Export>();
  CLI::App* app = root.add_subcommand("export", "write a model's graph as JSON");
  add_model_options(*app, e->model, /*with_weights=*/false);
  app->add_option("-o,--out", e->out, "output file (default: stdout)");
  app->add_flag("--lowered", e->lowered, "write the MIR (HIR blocks lowered to primitives)");
  app->add_flag("--static", e->bind, "bind batch and seq to --batch / --seq");
  return {app, [e] { return e->run(); }};
}

} // namespace rlx::cli
