// weights_memory.cpp: rlx-weights-memory, the resident memory of a BERT encoder's weights across
// shape variants (how rlx-runtime/DESIGN.md's peak RSS figures are measured).
//
//   rlx-weights-memory [--layers 12 --hidden 768 --heads 12 --ffn 3072] [--save FILE | --load FILE]
//
// Builds the encoder with symbolic batch and seq, sets seeded random weights (or, with --load,
// reads them from a safetensors file, which --save writes), then runs b1 s128 and b1 s64 and
// prints the current and peak resident set size after each step.
#include "rlx/cpu/threading.hpp"
#include "rlx/runtime/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

namespace {

/// A field of /proc/self/status in bytes ("VmRSS", "RssFile"), or 0 when /proc does not say.
std::int64_t status_bytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::atoll(line.c_str() + field.size() + 1) * 1024;
  return 0;
}

/// One line: the step, the process's current and peak RSS, and what the weight region holds.
void report(const char* step, const rlx::runtime::Executable* exe = nullptr) {
  std::printf("%-30s rss %7.1f MiB (file %6.1f)  peak %7.1f MiB", step,
              status_bytes("VmRSS") / 1048576.0, status_bytes("RssFile") / 1048576.0,
              rlx::runtime::peak_rss_bytes() / 1048576.0);
  if (exe)
    std::printf("  weights: plain %6.1f MiB, packed %6.1f MiB, %zu contexts",
                exe->weights()->plain_bytes() / 1048576.0,
                exe->weights()->derived_bytes() / 1048576.0, exe->contexts());
  std::printf("\n");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  rlx::cpu::reexec_with_threading_environment(argv);
  try {
    rlx::runtime::BertConfig cfg;
    cfg.layers = 12;
    cfg.hidden = 768;
    cfg.heads = 12;
    cfg.ffn = 3072;
    std::string save, load;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--layers")
        cfg.layers = std::stoi(value);
      else if (flag == "--hidden")
        cfg.hidden = std::stoi(value);
      else if (flag == "--heads")
        cfg.heads = std::stoi(value);
      else if (flag == "--ffn")
        cfg.ffn = std::stoi(value);
      else if (flag == "--save")
        save = value;
      else if (flag == "--load")
        load = value;
      else
        throw rlx::Error("unknown flag " + flag);
    }
    const rlx::ir::Graph g = rlx::runtime::build_bert(cfg);
    if (!save.empty()) {
      rlx::runtime::write_safetensors(save, rlx::runtime::init_params(g, 1));
      return 0;
    }
    report("start");
    rlx::runtime::Session session;
    rlx::runtime::Executable exe = session.compile(g);
    if (load.empty())
      exe.set_params(rlx::runtime::init_params(g, 1));
    else
      exe.load_params(load);
    report(load.empty() ? "weights set (set_params)" : "weights loaded (load_params)", &exe);
    for (auto [batch, seq] : {std::pair{1, 128}, std::pair{1, 64}}) {
      const rlx::ir::Bindings b{{"batch", batch}, {"seq", seq}};
      exe.run(rlx::runtime::random_inputs(g, b, 2));
      const std::string step = "ran b" + std::to_string(batch) + " s" + std::to_string(seq) + " (" +
                               std::to_string(exe.variants().size()) + " variants)";
      report(step.c_str(), &exe);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx-weights-memory: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
