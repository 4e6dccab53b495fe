// ir.cpp: a downstream program against the installed rlx-ir: builds a HIR graph with a symbolic
// batch, lowers it to MIR, evaluates it with the reference interpreter and checks the numbers
// against a plain loop.
#include <rlx/ir/builder.hpp>
#include <rlx/ir/hir.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/ir/verify.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

int main() {
  using namespace rlx::ir;
  try {
    constexpr std::int64_t batch = 2, in = 3, out = 2;
    Graph g("consumer");
    Builder b(g);
    NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim(in)}, DType::f32));
    NodeId w = b.param("w", Shape::of({out, in}));
    NodeId bias = b.param("b", Shape::of({out}));
    b.output(b.linear(x, w, bias, Activation::relu));
    verify(g);
    Graph mir = lower_hir(g);

    std::vector<float> xv{1, -2, 3, 0.5f, 4, -1}, wv{0.5f, 1, -1, 2, 0, 0.25f}, bv{0.5f, -3};
    auto y = reference::evaluate(
        mir, {{"x", Tensor::from<float>({batch, in}, xv)}},
        {{"w", Tensor::from<float>({out, in}, wv)}, {"b", Tensor::from<float>({out}, bv)}});
    auto got = y.at(0).data<float>();
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t o = 0; o < out; ++o) {
        float want = bv[o];
        for (std::int64_t k = 0; k < in; ++k)
          want += xv[i * in + k] * wv[o * in + k];
        want = want > 0 ? want : 0;
        if (std::fabs(got[i * out + o] - want) > 1e-6f) {
          std::fprintf(stderr, "consumer_ir: y[%lld, %lld] = %g, expected %g\n",
                       static_cast<long long>(i), static_cast<long long>(o),
                       static_cast<double>(got[i * out + o]), static_cast<double>(want));
          return 1;
        }
      }
    std::printf("consumer_ir: %zu MIR nodes, output %s: ok\n", mir.size(),
                y.at(0).shape().str().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_ir: %s\n", e.what());
    return 1;
  }
}
