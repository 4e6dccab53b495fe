// mlp.cpp: the 784-512-512-10 ReLU MLP on rlx-runtime's public API: weights saved to and loaded
// from safetensors, a batch of 64 inputs run, the predicted classes printed.
//
//   rlx_example_mlp
#include <rlx/cpu/threading.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/runtime/runtime.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>

int main(int, char** argv) {
  // Idle OpenMP threads sleep instead of spinning (rlx-cpu/DESIGN.md, "Threading"): set before
  // libgomp loads, by re-executing once.
  rlx::cpu::reexec_with_threading_environment(argv);
  using namespace rlx;
  try {
    ir::Graph model = runtime::build_mlp({}); // fc1..fc3, input "x" [batch, 784]

    // Weights round-trip through a safetensors file, as a trained checkpoint would arrive.
    const auto path = std::filesystem::temp_directory_path() / "rlx_example_mlp.safetensors";
    const runtime::TensorMap weights = runtime::init_params(model, /*seed=*/3);
    runtime::write_safetensors(path, weights);

    runtime::Session session;
    runtime::Executable exe = session.compile(model);
    exe.load_params(path);
    std::filesystem::remove(path);

    const runtime::TensorMap inputs = runtime::random_inputs(model, {{"batch", 64}}, /*seed=*/4);
    const ir::Tensor logits = exe.run({inputs.begin(), inputs.end()}).at("y");
    std::printf("mlp: logits %s; classes of the first 8 rows:", logits.shape().str().c_str());
    for (std::int64_t r = 0; r < 8; ++r) {
      std::int64_t best = 0;
      for (std::int64_t c = 1; c < 10; ++c)
        if (logits.get_f64(r * 10 + c) > logits.get_f64(r * 10 + best))
          best = c;
      std::printf(" %lld", static_cast<long long>(best));
    }
    const double err =
        ir::max_abs_diff(logits, ir::reference::evaluate(model, inputs, weights).at(0));
    std::printf("\nmax |rlx - reference| = %.3g\n", err);
    return err <= 1e-4 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlx_example_mlp: %s\n", e.what());
    return 1;
  }
}
