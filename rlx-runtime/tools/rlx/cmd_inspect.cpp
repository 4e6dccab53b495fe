// cmd_inspect.cpp: `rlx inspect`: every pipeline stage, the fusion and dispatch reports, the memory
// plan, the backend's kernel list, and optionally an SVG picture of the compiled graph.
#include "commands.hpp"
#ifdef RLX_HAS_OPENCL
#include "rlx/opencl/backend.hpp"
#endif
#include "model_args.hpp"
#include "report.hpp"
#include "rlx/compile/inspect.hpp"
#include "rlx/compile/svg.hpp"

#include <fstream>
#include <iostream>
#include <memory>

namespace rlx::cli {

namespace {

/// One line per materialised node of the LIR: where its value lives in the arena.
void print_buffers(const ir::Module& lir) {
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();
  std::cout << "==== buffers (node, storage, arena bytes [offset, end))\n";
  for (ir::NodeId id : plan.schedule) {
    const ir::BufferSlot& slot = plan.slot(id);
    if (slot.storage == ir::Storage::none)
      continue;
    std::cout << "  " << ir::describe(g, id) << "  " << ir::storage_name(slot.storage) << " ["
              << slot.offset << ", " << slot.offset + slot.bytes << ")";
    if (slot.storage == ir::Storage::view)
      std::cout << " view of %" << slot.view_of.v;
    std::cout << "\n";
  }
}

struct Inspect {
  ModelArgs model;
  std::string svg;
  bool summary = false;
  bool kernels = true;

  int run() {
    ResolvedModel m = resolve_model(model, /*with_weights=*/false);
    // Open the picture's file first: an unwritable path fails before anything is printed.
    std::ofstream picture;
    if (!svg.empty()) {
      picture.open(svg, std::ios::binary | std::ios::trunc);
      if (!picture)
        throw Error("cannot write '" + svg + "'");
    }
    runtime::Session session = make_session(model, m);
    compile::CompileOptions co;
    co.bindings = m.bindings;
    co.fuse = !model.no_fuse;
    co.fusion.disabled.insert(model.no_fuse_passes.begin(), model.no_fuse_passes.end());
    compile::PipelineInspection insp = compile::inspect_pipeline(session.backend(), m.graph, co);
    std::cout << "# " << m.description << " on " << session.device().str() << ", sizes";
    for (const auto& [sym, v] : m.bindings)
      std::cout << " " << sym << "=" << v;
    std::cout << "\n";
    if (summary) {
      std::cout << compile::format_compile_summary(insp.result) << "\n"
                << compile::format_memory_plan(insp.result.lir.plan()) << "\n";
    } else {
      std::cout << insp.str() << "\n";
      print_buffers(insp.result.lir);
    }
    if (kernels && session.device().kind == runtime::DeviceKind::cpu) {
      auto exe = session.backend().compile(insp.result.lir);
      std::cout << "# kernels (" << session.backend().name() << ")\n"
                << cpu::kernel_listing(*exe) << "\n";
    }
#ifdef RLX_HAS_OPENCL
    if (kernels && session.device().kind == runtime::DeviceKind::opencl) {
      auto exe = session.backend().compile(insp.result.lir);
      std::cout << "# kernels (" << session.backend().name() << ")\n"
                << opencl::kernel_listing(*exe) << "\n";
    }
#endif
    if (!svg.empty()) {
      const ir::Module& lir = insp.result.lir;
      picture << compile::to_svg(lir.graph(), &lir.plan());
      picture.close();
      if (!picture)
        throw Error("write to '" + svg + "' failed");
      std::cout << "# picture of the compiled graph and its memory plan: " << svg << "\n";
    }
    return 0;
  }
};

} // namespace

Command add_inspect(CLI::App& root) {
  auto c = std::make_shared<Inspect>();
  CLI::App* app = root.add_subcommand(
      "inspect", "show every pipeline stage, fusion and dispatch reports, the memory plan");
  add_model_options(*app, c->model, /*with_weights=*/false);
  app->add_option("--svg", c->svg, "write the compiled graph with its memory plan as SVG");
  app->add_flag("--summary", c->summary, "reports only, without the text of every stage");
  app->add_flag("!--no-kernels", c->kernels, "omit the backend's kernel list");
  return {app, [c] { return c->run(); }};
}

} // namespace rlx::cli
