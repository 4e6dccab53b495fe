// parity.cpp: the `rlx-parity` program: every workload at full size (BERT-mini, BERT-base with 12
// layers, LLaMA with grouped-query attention, MLP) through Session on the CPU backend against the
// reference interpreter; prints a table of max abs errors. (The ctest parity test runs the same
// check with BERT-base cut to 2 layers, since the reference interpreter is slow.)
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/runtime.hpp"

#include <chrono>
#include <cstdio>
#include <exception>

namespace {

using namespace rlx;
using Clock = std::chrono::steady_clock;

double ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Case {
  const char* name;
  ir::Graph graph;
  ir::Bindings sizes;
  double tolerance;
};

} // namespace

int main() {
  try {
    runtime::BertConfig mini; // 4 layers, hidden 256, 4 heads, FFN 1024
    runtime::BertConfig base;
    base.layers = 12;
    base.hidden = 768;
    base.heads = 12;
    base.ffn = 3072;
    runtime::LlamaConfig llama; // 4 blocks, hidden 512, 8 heads, FFN 1376
    llama.kv_heads = 2;
    const Case cases[] = {
        {"bert-mini b1 s128", runtime::build_bert(mini), {{"batch", 1}, {"seq", 128}}, 2e-5},
        {"bert-base b1 s128", runtime::build_bert(base), {{"batch", 1}, {"seq", 128}}, 2e-5},
        {"llama 8/2 heads b1 s128",
         runtime::build_llama(llama),
         {{"batch", 1}, {"seq", 128}},
         2e-5},
        {"mlp b64", runtime::build_mlp({}), {{"batch", 64}}, 2e-6},
    };
    std::printf("| workload | max abs error | max abs value | tolerance | rlx ms | reference ms |\n"
                "|---|---:|---:|---:|---:|---:|\n");
    bool ok = true;
    for (const Case& c : cases) {
      runtime::Session s;
      runtime::Executable exe = s.compile(c.graph);
      const runtime::TensorMap params = runtime::init_params(c.graph, 1234);
      exe.set_params(params);
      const runtime::TensorMap in = runtime::random_inputs(c.graph, c.sizes, 1235);
      exe.run({in.begin(), in.end()}); // compile + warm-up
      auto t0 = Clock::now();
      auto out = exe.run({in.begin(), in.end()});
      const double rlx_ms = ms(t0);
      t0 = Clock::now();
      auto ref = ir::reference::evaluate(c.graph, in, params);
      const double ref_ms = ms(t0);
      const double err = ir::max_abs_diff(out.at(exe.output_names()[0]), ref[0]);
      double scale = 0;
      for (std::int64_t i = 0; i < ref[0].numel(); ++i)
        scale = std::max(scale, std::abs(ref[0].get_f64(i)));
      ok = ok && err <= c.tolerance;
      std::printf("| %s | %.3g | %.3g | %.0e | %.2f | %.0f |%s\n", c.name, err, scale, c.tolerance,
                  rlx_ms, ref_ms, err <= c.tolerance ? "" : " FAILED");
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx-parity: error: %s\n", e.what());
    return 1;
  }
}
