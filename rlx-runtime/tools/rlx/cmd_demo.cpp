// cmd_demo.cpp: `rlx demo`, the main job: a BERT encoder with seeded weights compiled, run and
// checked against the reference interpreter.
#include "commands.hpp"
#include "model_args.hpp"
#include "report.hpp"
#include "rlx/ir/reference.hpp"

#include <cmath>
#include <iostream>
#include <memory>

namespace rlx::cli {

namespace {

struct Demo {
  ModelArgs model;
  int runs = 10;
  double tolerance = 1e-4;

  int run() {
    ResolvedModel m = resolve_model(model, /*with_weights=*/false);
    runtime::Session session = make_session(model, m);
    std::cout << "rlx demo: a " << m.description << "\n"
              << "          seeded random weights (seed " << model.seed << "), "
              << param_count(m.graph) << " parameters, on " << session.device().str() << "\n";

    runtime::Executable exe = session.compile(m.graph, compile_options(model, m));
    const runtime::TensorMap params = runtime::init_params(m.graph, model.seed);
    exe.set_params(params);
    const runtime::VariantInfo& v = exe.prepare(m.bindings);
    print_pipeline_summary(std::cout, v);

    const runtime::TensorMap inputs = runtime::random_inputs(m.graph, m.bindings, model.seed + 1);
    for (const auto& [name, t] : inputs)
      std::cout << "input:    " << name << " " << t.shape().str() << "\n";
    std::map<std::string, ir::Tensor> out = exe.run(inputs); // warm-up
    std::vector<double> times;
    Progress bar("running", runs);
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      out = exe.run(inputs);
      times.push_back(ms_since(t0));
      bar.update(i + 1);
    }
    const Latency lat = latency_of(times);
    const double gflop = runtime::count_flops(m.graph, m.bindings) / 1e9;
    std::cout << "run:      median " << format_ms(lat.median) << ", min " << format_ms(lat.min)
              << ", max " << format_ms(lat.max) << " over " << lat.runs << " runs ("
              << static_cast<int>(gflop / (lat.median / 1e3)) << " GFLOP/s)\n";

    std::cout << "check:    evaluating the same graph with the reference interpreter...\n";
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<ir::Tensor> ref = ir::reference::evaluate(m.graph, inputs, params);
    const double ref_ms = ms_since(t0);
    bool ok = true;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const std::string& name = exe.output_names()[i];
      const double err = ir::max_abs_diff(out.at(name), ref[i]);
      const bool pass = err <= tolerance;
      ok = ok && pass;
      std::cout << "          " << name << " " << ref[i].shape().str()
                << ": max |rlx - reference| = " << err << " (tolerance " << tolerance
                << ", reference took " << format_ms(ref_ms) << ") " << (pass ? "OK" : "FAILED")
                << "\n";
    }
    if (!ok)
      throw Error("demo: rlx's output differs from the reference interpreter beyond tolerance");
    std::cout << "rlx demo: OK\n";
    return 0;
  }
};

} // namespace

Command add_demo(CLI::App& root) {
  auto d = std::make_shared<Demo>();
  CLI::App* app = root.add_subcommand(
      "demo", "compile and run a BERT encoder (bert-mini sized, seeded weights), show the "
              "pipeline, check against the reference interpreter, print latency");
  add_model_options(*app, d->model, /*with_weights=*/false);
  app->add_option("--runs", d->runs, "timed runs after one warm-up")
      ->check(CLI::Range(1, CliLimits::runs))
      ->capture_default_str();
  app->add_option("--tolerance", d->tolerance, "max abs error allowed against the reference")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(s, v) || !std::isfinite(v) || v < 0)
              return "must be a finite number >= 0, got " + s;
            return {};
          },
          "TOLERANCE"))
      ->capture_default_str();
  return {app, [d] { return d->run(); }};
}

} // namespace rlx::cli
