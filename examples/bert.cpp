// bert.cpp: a BERT encoder on rlx-runtime's public API: build the model, compile it for the CPU,
// load weights (a safetensors file given as argv[1], else seeded random ones), run two sequence
// lengths (one compile each, through the compile cache) and check against the reference
// interpreter.
//
//   rlx_example_bert [model.safetensors]
#include <rlx/cpu/threading.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/runtime/runtime.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep instead of spinning (rlx-cpu/DESIGN.md, "Threading"): set before
  // libgomp loads, by re-executing once.
  rlx::cpu::reexec_with_threading_environment(argv);
  using namespace rlx;
  try {
    runtime::BertConfig cfg; // bert-mini: 4 layers, hidden 256, 4 heads, FFN 1024
    ir::Graph model = runtime::build_bert(cfg);

    runtime::Session session(runtime::Device::cpu());
    runtime::Executable exe = session.compile(model);
    runtime::TensorMap weights;
    if (argc > 1) {
      exe.load_params(argv[1]);
    } else {
      weights = runtime::init_params(model, /*seed=*/42);
      exe.set_params(weights);
    }

    for (std::int64_t seq : {32, 128}) {
      const runtime::TensorMap inputs =
          runtime::random_inputs(model, {{"batch", 2}, {"seq", seq}}, /*seed=*/7);
      auto outputs = exe.run({inputs.begin(), inputs.end()});
      const ir::Tensor& y = outputs.at("y");
      std::printf("seq %3lld: y %s, y[0] = %.6f\n", static_cast<long long>(seq),
                  y.shape().str().c_str(), y.get_f64(0));
      if (argc <= 1) {
        const double err =
            ir::max_abs_diff(y, ir::reference::evaluate(model, inputs, weights).at(0));
        std::printf("         max |rlx - reference| = %.3g\n", err);
        if (err > 1e-3)
          return 1;
      }
    }
    const runtime::CacheStats stats = session.cache().stats();
    std::printf("compiled variants: %zu, compile-cache misses %lld, hits %lld\n",
                exe.variants().size(), static_cast<long long>(stats.misses),
                static_cast<long long>(stats.hits));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx_example_bert: %s\n", e.what());
    return 1;
  }
}
