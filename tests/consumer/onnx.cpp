// onnx.cpp: a downstream program against the installed rlx-onnx: exports a small graph to ONNX
// bytes, imports them back and checks that the reference interpreter gives the same numbers.
#include <rlx/ir/builder.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/onnx.hpp>

#include <cstdio>
#include <exception>

int main() {
  using namespace rlx::ir;
  try {
    Graph g("consumer");
    Builder b(g);
    NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim(3)}, DType::f32));
    NodeId w = b.param("w", Shape::of({2, 3}));
    b.output(b.relu(b.matmul(x, w, false, true)));
    rlx::onnx::TensorMap params{{"w", Tensor::from<float>({2, 3}, {0.5f, 1, -1, 2, 0, 0.25f})}};
    std::string bytes = rlx::onnx::export_model(g, params);
    rlx::onnx::ImportOptions opts;
    opts.max_constant_elements = 0;
    auto m = rlx::onnx::import_model(bytes, opts);
    Tensor xv = Tensor::from<float>({2, 3}, {1, -2, 3, 0.5f, 4, -1});
    auto want = reference::evaluate(g, {{"x", xv}}, params);
    auto got = reference::evaluate(m.graph, {{"x", xv}}, m.params);
    if (!got[0].identical(want[0])) {
      std::fprintf(stderr, "consumer_onnx: round trip changed the result\n");
      return 1;
    }
    std::printf("consumer_onnx: ok (%zu bytes of ONNX, %zu supported ops)\n", bytes.size(),
                rlx::onnx::supported_ops().size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_onnx: %s\n", e.what());
    return 1;
  }
}
