// cmd_bench.cpp: `rlx bench`: latency over repeated runs, GFLOP/s, memory, compile time.
#include "commands.hpp"
#include "model_args.hpp"
#include "report.hpp"

#include "rlx/compile/kernel_timing.hpp"
#include "rlx/cpu/backend.hpp"
#ifdef RLX_HAS_OPENCL
#include "rlx/opencl/backend.hpp"
#endif

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace rlx::cli {

namespace {

/// The rate of a kernel: GFLOP/s for a product (flops > 0), else GB/s of its operands and result.
std::string rate_of(const compile::KernelTiming& k) {
  char buf[32];
  if (k.median_ms <= 0)
    return "-";
  if (k.flops > 0)
    std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", k.flops / 1e6 / k.median_ms);
  else
    std::snprintf(buf, sizeof buf, "%.2f GB/s", k.bytes / 1e6 / k.median_ms);
  return buf;
}

double sum_of_medians(const compile::KernelTimings& kt) {
  double total = 0;
  for (const auto& k : kt.kernels)
    total += k.median_ms;
  return total;
}

/// The per-kernel table, slowest first: median ms, share of the summed medians, rate, provider
/// (on OpenCL: the node's first kernel; its column widens to the longest name).
void print_profile(std::ostream& out, const compile::KernelTimings& kt) {
  const double total = sum_of_medians(kt);
  std::vector<const compile::KernelTiming*> order;
  int width = 10;
  for (const auto& k : kt.kernels) {
    order.push_back(&k);
    width = std::max(width, static_cast<int>(k.provider.size()));
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->median_ms > b->median_ms; });
  char line[256];
  std::snprintf(line, sizeof line, "kernels:  %zu records over %d runs, summed medians %.3f ms\n",
                kt.kernels.size(), kt.runs, total);
  out << line;
  std::snprintf(line, sizeof line, "  %-6s %-22s %-*s %9s %6s %16s\n", "node", "op", width,
                "provider", "median ms", "%", "rate");
  out << line;
  for (const auto* k : order) {
    std::snprintf(line, sizeof line, "  %-6s %-22s %-*s %9.4f %6.1f %16s", k->node.c_str(),
                  k->op.c_str(), width, k->provider.c_str(), k->median_ms,
                  total > 0 ? 100 * k->median_ms / total : 0.0, rate_of(*k).c_str());
    out << line << (k->note.empty() ? "" : "  (" + k->note + ")") << "\n";
  }
}

nlohmann::json profile_json(const compile::KernelTimings& kt) {
  const double total = sum_of_medians(kt);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& k : kt.kernels) {
    nlohmann::json e;
    e["node"] = k.node;
    e["op"] = k.op;
    e["provider"] = k.provider;
    if (!k.note.empty())
      e["note"] = k.note;
    e["median_ms"] = k.median_ms;
    e["total_ms"] = k.total_ms;
    e["share"] = total > 0 ? k.median_ms / total : 0.0;
    e["flops"] = k.flops;
    e["bytes"] = k.bytes;
    if (k.median_ms > 0) {
      if (k.flops > 0)
        e["gflop_per_s"] = k.flops / 1e6 / k.median_ms;
      else
        e["gbyte_per_s"] = k.bytes / 1e6 / k.median_ms;
    }
    arr.push_back(std::move(e));
  }
  return arr;
}

struct Bench {
  ModelArgs model;
  int runs = 20;
  int warmup = 3;
  bool json = false;
  bool profile = false;

  int run() {
    ResolvedModel m = resolve_model(model);
    runtime::Session session = make_session(model, m);
    const auto t0 = std::chrono::steady_clock::now();
    runtime::Executable exe = session.compile(m.graph, compile_options(model, m));
    const runtime::VariantInfo& v = exe.prepare(m.bindings);
    const double compile_ms = ms_since(t0); // verify + pipeline + backend (weights not included)
    const bool on_cpu = session.device().kind == runtime::DeviceKind::cpu;
    const cpu::CompileBreakdown cb =
        on_cpu ? cpu::compile_breakdown(*v.executable) : cpu::CompileBreakdown{};
    const cpu::WeightPreparation prep0 = cpu::weight_preparation();
    const auto t_load = std::chrono::steady_clock::now();
    load_weights(exe, model, m);
    const double load_ms = ms_since(t_load);
    const cpu::WeightPreparation prep1 = cpu::weight_preparation();
    const double load_prep_ms = prep1.ms - prep0.ms;
    const std::int64_t load_prep_bytes = prep1.bytes - prep0.bytes;
    const runtime::TensorMap inputs = runtime::random_inputs(m.graph, m.bindings, model.seed + 1);

    // --profile: the backend times each kernel of the timed runs themselves (the one execution
    // loop, timed), not a second loop: the CPU with a clock around each kernel record, OpenCL
    // with one profiling event per step on the device's profiling queue (device time).
    compile::Executable* backend_exe = nullptr;
    const bool on_opencl = session.device().kind == runtime::DeviceKind::opencl;
    if (profile) {
#ifdef RLX_HAS_OPENCL
      const bool profilable = on_cpu || on_opencl;
#else
      const bool profilable = on_cpu;
#endif
      if (!profilable)
        throw Error("--profile times the kernels of the cpu or opencl device, not " +
                    session.device().str());
      // The Executable owns its backend executable; profiling only counts time in it.
      backend_exe = const_cast<compile::Executable*>(v.executable);
    }
    for (int i = 0; i < warmup; ++i)
      exe.run(inputs);
    const auto set_profiling = [&](bool on) {
#ifdef RLX_HAS_OPENCL
      if (on_opencl) {
        opencl::set_kernel_profiling(*backend_exe, on);
        return;
      }
#endif
      cpu::set_kernel_profiling(*backend_exe, on);
    };
    if (backend_exe != nullptr)
      set_profiling(true);
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
    compile::KernelTimings kt;
    if (backend_exe != nullptr) {
#ifdef RLX_HAS_OPENCL
      kt = on_opencl ? opencl::kernel_timings(*backend_exe) : cpu::kernel_timings(*backend_exe);
#else
      kt = cpu::kernel_timings(*backend_exe);
#endif
      set_profiling(false);
    }
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
      if (on_cpu) {
        j["backend_lower_ms"] = cb.lower_ms;
        j["backend_primitives_ms"] = cb.primitives_ms;
        j["backend_weights_ms"] = cb.weights_ms;
        j["backend_weight_bytes"] = cb.weight_bytes;
        j["backend_measure_ms"] = cb.measure_ms;
      }
      j["load_weights_ms"] = load_ms;
      j["load_weight_preparation_ms"] = load_prep_ms;
      j["load_weight_preparation_bytes"] = load_prep_bytes;
      j["samples_ms"] = times;
      if (profile)
        j["kernels"] = profile_json(kt);
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
    if (on_cpu)
      std::cout << "backend:  lower " << format_ms(cb.lower_ms) << ", primitives "
                << format_ms(cb.primitives_ms) << ", weight preparation "
                << format_ms(cb.weights_ms) << " (" << format_bytes(cb.weight_bytes)
                << "), gemm measuring " << format_ms(cb.measure_ms) << "\n";
    std::cout << "weights:  set in " << format_ms(load_ms) << ", of which preparation "
              << format_ms(load_prep_ms) << " (" << format_bytes(load_prep_bytes)
              << " of copies)\n";
    if (profile)
      print_profile(std::cout, kt);
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
  app->add_flag("--profile", b->profile,
                "time every kernel of the timed runs and print a table (median ms, share, GFLOP/s "
                "or GB/s, provider; on opencl device time per node, provider its kernel); with "
                "--json, a \"kernels\" array");
  return {app, [b] { return b->run(); }};
}

} // namespace rlx::cli
