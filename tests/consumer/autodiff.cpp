// autodiff.cpp: a downstream program against the installed rlx-autodiff: differentiates a small
// loss and checks the gradient against the closed form, then vmaps the gradient graph over a batch
// of inputs (per-example gradients).
#include <rlx/autodiff.hpp>
#include <rlx/ir/builder.hpp>
#include <rlx/ir/reference.hpp>

#include <cmath>
#include <cstdio>
#include <exception>

int main() {
  using namespace rlx::ir;
  try {
    // loss = sum(tanh(x) * w): d loss / d w = tanh(x)
    Graph g("consumer_grad");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({4}, DType::f64));
    NodeId w = b.param("w", Shape::of({4}, DType::f64));
    b.output(b.sum(b.mul(b.tanh(x), w), {}));
    Graph gg = rlx::autodiff::grad_with_loss(g, rlx::autodiff::float_params(g));
    Tensor xv = Tensor::from<double>({4}, {-1, 0.5, 2, 0});
    Tensor wv = Tensor::from<double>({4}, {1, 2, 3, 4});
    auto out = reference::evaluate(gg, {{"x", xv}}, {{"w", wv}});
    for (std::int64_t i = 0; i < 4; ++i)
      if (std::fabs(out.at(1).get_f64(i) - std::tanh(xv.get_f64(i))) > 1e-12) {
        std::fprintf(stderr, "consumer_autodiff: wrong gradient at %lld\n",
                     static_cast<long long>(i));
        return 1;
      }
    // Per-example gradients: vmap of the gradient graph over a batch of 3 x's (w shared).
    Graph pe = rlx::autodiff::vmap(gg, {{"x", 0}});
    Tensor xs = Tensor::from<double>({3, 4}, {-1, 0.5, 2, 0, 0.1, 0.2, 0.3, 0.4, 1, 1, 1, 1});
    auto per = reference::evaluate(pe, {{"x", xs}}, {{"w", wv}});
    for (std::int64_t i = 0; i < 12; ++i)
      if (std::fabs(per.at(1).get_f64(i) - std::tanh(xs.get_f64(i))) > 1e-12) {
        std::fprintf(stderr, "consumer_autodiff: wrong per-example gradient at %lld\n",
                     static_cast<long long>(i));
        return 1;
      }
    std::printf("consumer_autodiff: %zu gradient-graph nodes, %zu batched: ok\n", gg.size(),
                pe.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_autodiff: %s\n", e.what());
    return 1;
  }
}
