// cmd_bench.cpp: `rlx bench`: latency over repeated runs, GFLOP/s, memory, compile time.
#include "commands.hpp"
#include "model_args.hpp"
#include "report.hpp"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace rlx::cli {

namespace {

struct Bench {
  ModelArgs model;
  int runs = 20;
  int warmup = 3;
  bool json = false;

  int run() {
    ResolvedModel m = resolve_model(model);
    runtime::Session session = make_session(model, m);
    const auto t0 = std::chrono::steady_clock::now();
    runtime::Executable exe = session.compile(m.graph, compile_options(model, m));
    const runtime::VariantInfo& v = exe.prepare(m.bindings);
    const double compile_ms = ms_since(t0); // verify + pipeline + backend (weights not included)
    load_weights(exe, model, m);
    const runtime::TensorMap inputs = runtime::random_inputs(m.graph, m.bindings, model.seed + 1);

    for (int i = 0; i < warmup; ++i)
      exe.run(inputs);
    std::vector<double> times;
    {
      Progress bar("bench", runs, runs >= 10);
      for (int i = 0; i < runs; ++i) {
        const auto t1 = std::chrono::steady_clock::now();
        exe.run(inputs);
        times.push_back(ms_since(t1));
        bar.update(i + 1);
      }
    }
    const Latency lat = latency_of(times);
    const double flops = runtime::count_flops(m.graph, m.bindings);
    const ir::MemoryPlan& plan = v.compiled->result.lir.plan();
    const double gflops = flops / 1e9 / (lat.median / 1e3);

    if (json) {
      nlohmann::json j;
      j["model"] = m.description;
      j["device"] = session.device().str();
      j["gemm"] = model.gemm;
      j["threads"] = model.threads;
      for (const auto& [sym, val] : m.bindings)
        j[sym] = val;
      j["runs"] = lat.runs;
      j["warmup"] = warmup;
      j["median_ms"] = lat.median;
      j["min_ms"] = lat.min;
      j["max_ms"] = lat.max;
      j["mean_ms"] = lat.mean;
      j["gflop"] = flops / 1e9;
      j["gflop_per_s"] = gflops;
      j["arena_bytes"] = plan.arena_size;
      j["arena_lower_bound_bytes"] = plan.lower_bound;
      j["device_bytes"] = v.device_bytes;
      j["peak_rss_bytes"] = runtime::peak_rss_bytes();
      j["compile_ms"] = compile_ms;
      j["pipeline_ms"] = v.compiled->pipeline_ms;
      j["backend_compile_ms"] = v.backend_ms;
      j["samples_ms"] = times;
      std::cout << j.dump() << "\n";
      return 0;
    }
    std::cout << m.description << " on " << session.device().str() << " (gemm " << model.gemm
              << "), sizes";
    for (const auto& [sym, val] : m.bindings)
      std::cout << " " << sym << "=" << val;
    std::cout << "\n"
              << "latency:  median " << format_ms(lat.median) << ", min " << format_ms(lat.min)
              << ", max " << format_ms(lat.max) << " over " << lat.runs << " runs (" << warmup
              << " warm-up)\n"
              << "compute:  " << flops / 1e9 << " GFLOP per run, " << gflops
              << " GFLOP/s at the median\n"
              << "memory:   arena " << format_bytes(plan.arena_size) << " (lower bound "
              << format_bytes(plan.lower_bound) << "), device " << format_bytes(v.device_bytes)
              << ", peak RSS " << format_bytes(runtime::peak_rss_bytes()) << "\n"
              << "compile:  " << format_ms(compile_ms) << " (pipeline "
              << format_ms(v.compiled->pipeline_ms) << ", backend " << format_ms(v.backend_ms)
              << ")\n";
    return 0;
  }
};

} // namespace

Command add_bench(CLI::App& root) {
  auto b = std::make_shared<Bench>();
  CLI::App* app = root.add_subcommand("bench", "time a model: latency, GFLOP/s, memory, compile");
  add_model_options(*app, b->model);
  app->add_option("--runs", b->runs, "timed runs")
      ->check(CLI::Range(1, CliLimits::runs))
      ->capture_default_str();
  app->add_option("--warmup", b->warmup, "untimed runs first")
      ->check(CLI::Range(0, CliLimits::runs))
      ->capture_default_str();
  app->add_flag("--json", b->json, "one JSON object on stdout");
  return {app, [b] { return b->run(); }};
}

} // namespace rlx::cli
