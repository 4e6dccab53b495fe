// commands.hpp: the rlx subcommands. Each registers its options on the root app and returns the
// function that runs it once the command line has parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace rlx::cli {

/// A registered subcommand: its CLI11 app and what runs it (returning the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// `rlx demo`: compile, run and check a built-in BERT model with seeded weights.
Command add_demo(CLI::App& root);
/// `rlx run`: run a model on .npy inputs, writing .npy outputs.
Command add_run(CLI::App& root);
/// `rlx inspect`: every pipeline stage, fusion and dispatch reports, memory plan, SVG.
Command add_inspect(CLI::App& root);
/// `rlx bench`: latency statistics, GFLOP/s, memory and compile time.
Command add_bench(CLI::App& root);
/// `rlx export`: a model's graph as JSON.
Command add_export(CLI::App& root);
/// `rlx grad`: the loss and every parameter's gradient, written as safetensors.
Command add_grad(CLI::App& root);
/// `rlx devices`: the CPU and every OpenCL device.
Command add_devices(CLI::App& root);
/// `rlx train`: train a model on .npy data with a compiled training step.
Command add_train(CLI::App& root);

} // namespace rlx::cli
