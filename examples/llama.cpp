// llama.cpp: a LLaMA decoder (RMSNorm, RoPE, causal grouped-query attention, SwiGLU) on
// rlx-runtime's public API, with seeded weights, checked against the reference interpreter; the
// output is written as .npy when a path is given.
//
//   rlx_example_llama [out.npy]
#include <rlx/cpu/threading.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/runtime/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep instead of spinning (rlx-cpu/DESIGN.md, "Threading"): set before
  // libgomp loads, by re-executing once.
  rlx::cpu::reexec_with_threading_environment(argv);
  using namespace rlx;
  try {
    runtime::LlamaConfig cfg; // 4 blocks, hidden 512, 8 heads, FFN 1376
    cfg.kv_heads = 2;         // grouped-query attention: 4 query heads per KV head
    ir::Graph model = runtime::build_llama(cfg);

    runtime::Session session;
    runtime::Executable exe = session.compile(model);
    const runtime::TensorMap weights = runtime::init_params(model, /*seed=*/1);
    exe.set_params(weights);

    const runtime::TensorMap inputs =
        runtime::random_inputs(model, {{"batch", 1}, {"seq", 64}}, /*seed=*/2);
    exe.run({inputs.begin(), inputs.end()}); // compiles the [1, 64] variant
    const auto t0 = std::chrono::steady_clock::now();
    auto outputs = exe.run({inputs.begin(), inputs.end()});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ir::Tensor& y = outputs.at("y");
    const double err = ir::max_abs_diff(y, ir::reference::evaluate(model, inputs, weights).at(0));
    std::printf("llama: y %s in %.2f ms, max |rlx - reference| = %.3g\n", y.shape().str().c_str(),
                ms, err);
    if (argc > 1)
      runtime::write_npy(argv[1], y);
    return err <= 1e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx_example_llama: %s\n", e.what());
    return 1;
  }
}
