// runtime.cpp: a downstream program against the installed rlx-runtime (find_package(rlx-runtime)):
// builds a BERT encoder and an MLP, compiles them for the CPU through a Session, loads weights from
// a safetensors file, runs two sequence lengths and checks against the reference interpreter.
#include <rlx/ir/reference.hpp>
#include <rlx/runtime/runtime.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>

int main() {
  using namespace rlx;
  try {
    runtime::BertConfig cfg;
    cfg.layers = 2;
    cfg.hidden = 32;
    cfg.heads = 4;
    cfg.ffn = 64;
    const ir::Graph bert = runtime::build_bert(cfg);
    const runtime::TensorMap weights = runtime::init_params(bert, 1);
    const auto path = std::filesystem::temp_directory_path() / "rlx_consumer_runtime.safetensors";
    runtime::write_safetensors(path, weights);

    runtime::Session session;
    runtime::Executable exe = session.compile(bert);
    exe.load_params(path);
    std::filesystem::remove(path);
    for (std::int64_t seq : {4, 9}) {
      const auto in = runtime::random_inputs(bert, {{"batch", 2}, {"seq", seq}}, 2);
      const ir::Tensor y = exe.run({in.begin(), in.end()}).at("y");
      const double err = ir::max_abs_diff(y, ir::reference::evaluate(bert, in, weights).at(0));
      if (err > 1e-4) {
        std::fprintf(stderr, "consumer_runtime: seq %lld differs by %g\n",
                     static_cast<long long>(seq), err);
        return 1;
      }
    }
    std::printf("consumer_runtime: bert with %zu variants, %lld compile-cache misses: ok\n",
                exe.variants().size(), static_cast<long long>(session.cache().stats().misses));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_runtime: %s\n", e.what());
    return 1;
  }
}
