// cmd_run.cpp: `rlx run`: a model on .npy inputs, outputs to .npy files.
#include "commands.hpp"
#include "model_args.hpp"
#include "report.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

namespace rlx::cli {

namespace {

std::string summary(const ir::Tensor& t) {
  double lo = 0, hi = 0, sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_f64(i);
    lo = i ? std::min(lo, v) : v;
    hi = i ? std::max(hi, v) : v;
    sum += v;
  }
  std::ostringstream s;
  s << t.shape().str() << " min " << lo << " max " << hi << " mean "
    << (t.numel() ? sum / static_cast<double>(t.numel()) : 0.0);
  return s.str();
}

struct Run {
  ModelArgs model;
  std::vector<std::string> inputs, outputs;
  std::string output_dir;
  bool random_inputs = false;
  bool quiet = false;

  int run() {
    ResolvedModel m = resolve_model(model);
    runtime::Session session = make_session(model, m);
    auto t0 = std::chrono::steady_clock::now();
    runtime::Executable exe = session.compile(m.graph, compile_options(model, m));
    load_weights(exe, model, m);
    const double setup_ms = ms_since(t0);

    // Inputs: the files given, HF defaults for token-model extras, random ones on request.
    std::map<std::string, ir::Tensor> in;
    for (const auto& s : inputs) {
      auto [name, path] = split_pair(s, "--input");
      if (!m.graph.find_leaf(name).valid()) {
        std::string known;
        for (const auto& [n, t] : exe.inputs())
          known += (known.empty() ? "" : ", ") + n;
        throw Error("--input " + name + ": the model has no input '" + name +
                    "' (inputs: " + known + ")");
      }
      ir::Tensor t = runtime::read_npy(path);
      // NumPy defaults to float64 / int64 (int32 on some platforms): convert within a kind.
      const ir::DType want = m.graph.shape(m.graph.find_leaf(name)).dtype;
      if (t.dtype() != want && ((ir::is_float(t.dtype()) && ir::is_float(want)) ||
                                (ir::is_int(t.dtype()) && ir::is_int(want)))) {
        m.notes.push_back("input " + name + " converted from " +
                          std::string(ir::dtype_name(t.dtype())) + " to " +
                          std::string(ir::dtype_name(want)));
        t = t.cast(want);
      }
      if (!in.emplace(name, t).second)
        throw Error("--input " + name + " given twice");
    }
    ir::Bindings sizes = m.bindings;
    for (const auto& [name, type] : exe.inputs()) // defaulted inputs follow the given sizes
      if (auto it = in.find(name); it != in.end() && it->second.shape().rank() == type.rank())
        for (std::size_t d = 0; d < type.rank(); ++d)
          if (type[d].is_symbolic())
            sizes[type[d].symbol()] = it->second.shape()[d].size();
    if (auto it = sizes.find("seq");
        m.max_positions > 0 && it != sizes.end() && it->second > m.max_positions)
      throw Error("sequence length " + std::to_string(it->second) + " exceeds the model's " +
                  std::to_string(m.max_positions) + " position embeddings");
    if (auto it = in.find("attention_mask"); it != in.end())
      for (std::int64_t i = 0; i < it->second.numel(); ++i)
        if (const double v = it->second.get_f64(i); v != 0 && v != 1)
          throw Error("--input attention_mask: values must be 0 (padding) or 1 (attend), got " +
                      std::to_string(v) + " at element " + std::to_string(i));
    const runtime::TensorMap random = random_inputs
                                          ? runtime::random_inputs(m.graph, sizes, model.seed + 1)
                                          : runtime::TensorMap{};
    for (const auto& [name, type] : exe.inputs()) {
      if (in.count(name))
        continue;
      if (auto d = hf_default(name, type, sizes)) {
        in.emplace(name, *d);
        m.notes.push_back(name + " not given: " +
                          (name == "position_ids"     ? "0 .. seq-1"
                           : name == "attention_mask" ? "all ones"
                                                      : "all zeros") +
                          " (the HuggingFace default)");
      } else if (random_inputs) {
        in.emplace(name, random.at(name));
      } else {
        throw Error("missing input '" + name + "' " + type.str() + ": give --input " + name +
                    "=file.npy (or --random-inputs)");
      }
    }

    std::map<std::string, std::string> out_files;
    for (const auto& s : outputs) {
      auto [name, path] = split_pair(s, "--output");
      const auto& names = exe.output_names();
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string known;
        for (const auto& n : names)
          known += (known.empty() ? "" : ", ") + n;
        throw Error("--output " + name + ": the model has no output '" + name +
                    "' (outputs: " + known + ")");
      }
      out_files[name] = path;
    }
    if (!output_dir.empty()) {
      std::filesystem::create_directories(output_dir);
      for (const auto& n : exe.output_names())
        out_files.emplace(n, (std::filesystem::path(output_dir) / (n + ".npy")).string());
    }

    t0 = std::chrono::steady_clock::now();
    const auto result = exe.run(in);
    const double run_ms = ms_since(t0); // includes the first-binding compile
    for (const auto& [name, path] : out_files)
      runtime::write_npy(path, result.at(name));
    if (!quiet) {
      std::cout << m.description << " on " << session.device().str() << "\n";
      for (const auto& note : m.notes)
        std::cout << "note: " << note << "\n";
      std::cout << "setup " << format_ms(setup_ms) << ", compile + run " << format_ms(run_ms)
                << "\n";
      for (const auto& n : exe.output_names())
        std::cout << n << ": " << summary(result.at(n))
                  << (out_files.count(n) ? " -> " + out_files.at(n) : "") << "\n";
    }
    return 0;
  }
};

} // namespace

Command add_run(CLI::App& root) {
  auto r = std::make_shared<Run>();
  CLI::App* app = root.add_subcommand("run", "run a model on .npy inputs");
  add_model_options(*app, r->model);
  app->add_option("--input", r->inputs, "an input: name=file.npy (repeatable)");
  app->add_option("--output", r->outputs, "write an output: name=file.npy (repeatable)");
  app->add_option("--output-dir", r->output_dir, "write every output as <dir>/<name>.npy");
  app->add_flag("--random-inputs", r->random_inputs,
                "seeded random values for inputs not given (sizes from --batch / --seq)");
  app->add_flag("-q,--quiet", r->quiet, "print nothing on success");
  return {app, [r] { return r->run(); }};
}

} // namespace rlx::cli
