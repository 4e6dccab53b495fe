// cmd_grad.cpp: `rlx grad`: the loss of a model on given inputs and the gradient of every float
// parameter, written as one safetensors file under the parameter names.
#include "commands.hpp"
#include "model_args.hpp"
#include "report.hpp"

#include "rlx/autodiff/grad.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/runtime/loss.hpp"

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

namespace rlx::cli {

namespace {

struct Grad {
  ModelArgs model;
  std::vector<std::string> inputs;
  bool random_inputs = false;
  std::string loss = "sum", target, labels, out;
  bool quiet = false;
  int repeat = 0;
  bool profile = false;

  int run() {
    const runtime::LossKind kind = runtime::parse_loss(loss);
    if (!target.empty() && kind != runtime::LossKind::mse)
      throw Error("--target goes with --loss mse (the loss is " + loss + ")");
    if (!labels.empty() && kind != runtime::LossKind::xent)
      throw Error("--labels goes with --loss xent (the loss is " + loss + ")");
    model.onnx_all_params = true; // --onnx: every float initializer is a parameter
    ResolvedModel m = resolve_model(model);

    // Inputs: the files given (converted within a kind, like `rlx run`), then the sizes they fix.
    runtime::TensorMap in;
    for (const auto& s : inputs) {
      auto [name, path] = split_pair(s, "--input");
      const ir::NodeId leaf = m.graph.find_leaf(name);
      if (!leaf.valid())
        throw Error("--input " + name + ": the model has no input '" + name + "'");
      ir::Tensor t = runtime::read_npy(path);
      const ir::Shape& want = m.graph.shape(leaf);
      if (t.dtype() != want.dtype && ((ir::is_float(t.dtype()) && ir::is_float(want.dtype)) ||
                                      (ir::is_int(t.dtype()) && ir::is_int(want.dtype))))
        t = t.cast(want.dtype);
      if (t.shape().rank() != want.rank())
        throw Error("--input " + name + " has shape " + t.shape().str() + ", the model expects " +
                    want.str());
      for (std::size_t d = 0; d < want.rank(); ++d)
        if (want[d].is_symbolic())
          m.bindings[want[d].symbol()] = t.shape()[d].size();
      if (!in.emplace(name, std::move(t)).second)
        throw Error("--input " + name + " given twice");
    }
    if (auto it = m.bindings.find("seq");
        m.max_positions > 0 && it != m.bindings.end() && it->second > m.max_positions)
      throw Error("sequence length " + std::to_string(it->second) + " exceeds the model's " +
                  std::to_string(m.max_positions) + " position embeddings");
    const ir::Graph forward = m.graph.bind(m.bindings);
    const runtime::TensorMap random =
        random_inputs ? runtime::random_inputs(forward, {}, model.seed + 1) : runtime::TensorMap{};
    for (const ir::NodeId id : forward.inputs()) {
      const std::string& name = forward.node(id).attr<ir::LeafAttrs>().name;
      if (in.count(name))
        continue;
      if (auto d = hf_default(name, forward.shape(id), {}))
        in.emplace(name, *d);
      else if (random_inputs)
        in.emplace(name, random.at(name));
      else
        throw Error("missing input '" + name + "' " + forward.shape(id).str() + ": give --input " +
                    name + "=file.npy (or --random-inputs)");
    }

    std::optional<ir::Tensor> tgt;
    if (!target.empty())
      tgt = runtime::read_npy(target);
    if (!labels.empty())
      tgt = runtime::read_npy(labels);
    const ir::Graph grad = runtime::gradient_graph(forward, kind, tgt);
    std::vector<std::string> names{"loss"};
    for (const auto& w : autodiff::float_params(forward)) {
      if (w.name == "loss")
        throw Error("the model has a parameter named 'loss', the name of the loss tensor");
      names.push_back(w.name);
    }

    runtime::Session session = make_session(model, m);
    auto t0 = std::chrono::steady_clock::now();
    runtime::CompileOptions co = compile_options(model, m);
    co.bindings.clear(); // the gradient graph is bound already
    runtime::Executable exe = session.compile(grad, co);
    if (m.params.empty() && m.weights.empty()) // the forward's seeded weights, as `rlx run`
      exe.set_params(runtime::init_params(m.graph, model.seed));
    else
      load_weights(exe, model, m);
    const double setup_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto result = exe.run(in);
    const double run_ms = ms_since(t0);
    // --repeat: the time of one gradient evaluation (forward + loss + backward), warm; --profile
    // adds the CPU backend's per-kernel times over those runs.
    std::optional<Latency> lat;
    std::string kernel_times;
    if (repeat > 0) {
      compile::Executable* backend_exe = nullptr;
      if (profile) {
        if (session.device().kind != runtime::DeviceKind::cpu)
          throw Error("--profile times the kernels of the cpu device, not " +
                      session.device().str());
        // The Executable owns its backend executable; profiling only counts time in it.
        backend_exe = const_cast<compile::Executable*>(exe.prepare({}).executable);
      }
      exe.run(in); // warm-up: pools started, pages touched
      if (backend_exe != nullptr)
        cpu::set_kernel_profiling(*backend_exe, true);
      std::vector<double> times;
      for (int i = 0; i < repeat; ++i) {
        const auto t1 = std::chrono::steady_clock::now();
        exe.run(in);
        times.push_back(ms_since(t1));
      }
      lat = latency_of(times);
      if (backend_exe != nullptr)
        kernel_times = cpu::kernel_profile(*backend_exe);
    } else if (profile) {
      throw Error("--profile needs --repeat N (the runs it times)");
    }

    // Gradients under the checkpoint's names (a "model." / "bert." prefix kept), so that they line
    // up with the weights they belong to.
    if (!m.weights.empty() && m.params.empty()) {
      const runtime::Checkpoint ckpt(m.weights);
      for (std::size_t i = 1; i < names.size(); ++i)
        names[i] = runtime::checkpoint_key(
            names[i], m.load.prefix, [&](const std::string& k) { return ckpt.find(k) != nullptr; });
    }
    runtime::TensorMap grads;
    const auto& outs = exe.output_names();
    for (std::size_t i = 0; i < names.size(); ++i)
      if (!grads.emplace(names[i], result.at(outs.at(i))).second)
        throw Error("two parameters map to the checkpoint name '" + names[i] + "'");
    runtime::write_safetensors(out, grads, {{"loss", loss}, {"model", m.description}});
    if (!quiet) {
      std::cout << m.description << " on " << session.device().str() << "\n";
      for (const auto& note : m.notes)
        std::cout << "note: " << note << "\n";
      std::cout << "setup " << format_ms(setup_ms) << ", compile + run " << format_ms(run_ms)
                << "\n";
      if (lat)
        std::cout << "gradient evaluation: median " << format_ms(lat->median) << ", min "
                  << format_ms(lat->min) << ", max " << format_ms(lat->max) << " over " << lat->runs
                  << " runs\n";
      if (!kernel_times.empty())
        std::cout << kernel_times;
      std::cout << "loss (" << loss << "): " << grads.at("loss").get_f64(0) << "\n";
      for (std::size_t i = 1; i < names.size(); ++i) {
        const ir::Tensor& g = grads.at(names[i]);
        double sq = 0;
        for (std::int64_t k = 0; k < g.numel(); ++k)
          sq += g.get_f64(k) * g.get_f64(k);
        std::cout << "d loss / d " << names[i] << ": " << g.shape().str() << " norm "
                  << std::sqrt(sq) << "\n";
      }
      std::cout << names.size() - 1 << " gradients -> " << out << "\n";
    }
    return 0;
  }
};

} // namespace

Command add_grad(CLI::App& root) {
  auto r = std::make_shared<Grad>();
  CLI::App* app = root.add_subcommand(
      "grad", "the loss and the gradient of every parameter, written as safetensors");
  add_model_options(*app, r->model);
  app->add_option("--input", r->inputs, "an input: name=file.npy (repeatable)");
  app->add_flag("--random-inputs", r->random_inputs,
                "seeded random values for inputs not given (sizes from --batch / --seq)");
  app->add_option("--loss", r->loss, "sum | mse (with --target) | xent (with --labels)")
      ->capture_default_str();
  app->add_option("--target", r->target, "the mse target (.npy, the output's shape)");
  app->add_option("--labels", r->labels,
                  "the xent class indices (.npy, integer, the output's shape without its last "
                  "axis)");
  app->add_option("--out", r->out,
                  "the safetensors file to write: 'loss' and one gradient per "
                  "parameter, under its name")
      ->required();
  app->add_flag("-q,--quiet", r->quiet, "print nothing on success");
  app->add_option("--repeat", r->repeat,
                  "then time N more gradient evaluations (after one warm-up run) and print the "
                  "median")
      ->check(CLI::Range(0, 100000));
  app->add_flag("--profile", r->profile,
                "with --repeat on the cpu device: print the per-kernel times of those runs");
  return {app, [r] { return r->run(); }};
}

} // namespace rlx::cli
