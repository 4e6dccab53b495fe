// cnn_grad_bench.cpp: the time of one gradient evaluation of a small CNN on rlx-cpu with the conv /
// pool backward ops (conv2d_grad_input, conv2d_grad_weight, pool2d_grad: oneDNN and rlx's loops)
// against the same gradient graph with those ops expanded into their decompositions (the im2col
// Gather / ScatterAdd form the VJP rules emitted before the ops existed), interleaved rounds,
// medians. The net: x [B, 3, 32, 32] -> conv 3x3 16 + relu -> max pool 2 -> conv 3x3 32 + relu ->
// max pool 2 -> conv 3x3 64 + relu -> avg pool 2 -> dense 10, loss = sum of the logits (so the
// gradient graph holds no other backward op). Usage: rlx_example_cnn_grad_bench [batch] [rounds]
// [threads]; RLX_BENCH_PROFILE=1 adds both graphs' per-kernel times.
// scripts/bench/cnn_grad_torch.py times torch's forward + backward of the same net.
#include "rlx/autodiff/grad.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/runtime/loss.hpp"
#include "rlx/runtime/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

namespace {

using namespace rlx;
using ir::Dim;
using ir::NodeId;
using ir::Shape;

ir::Graph cnn(std::int64_t batch) {
  ir::Graph g("cnn");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({batch, 3, 32, 32}, ir::DType::f32));
  ir::Conv2dAttrs c;
  c.padding = {1, 1};
  ir::Pool2dAttrs p;
  const std::int64_t widths[] = {3, 16, 32, 64};
  for (int l = 0; l < 3; ++l) {
    const std::string n = "conv" + std::to_string(l + 1);
    x = b.relu(b.conv2d(x, b.param(n + ".weight", Shape::of({widths[l + 1], widths[l], 3, 3})),
                        b.param(n + ".bias", Shape::of({widths[l + 1]})), c));
    p.kind = l == 2 ? ir::PoolKind::avg : ir::PoolKind::max;
    x = b.pool2d(x, p);
  }
  x = b.reshape(x, {Dim(batch), Dim(64 * 4 * 4)});
  b.output(b.add(b.matmul(x, b.param("fc.weight", Shape::of({64 * 4 * 4, 10}))),
                 b.param("fc.bias", Shape::of({10}))));
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const std::int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  runtime::SessionOptions so;
  so.cpu.num_threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const ir::Graph model = cnn(batch);
  const ir::Graph with_ops = runtime::gradient_graph(model, runtime::LossKind::sum);
  // prepare_graph_for_ad expands every kFused op into its decomposition: here exactly the conv /
  // pool backward ops.
  const ir::Graph primitives = autodiff::prepare_graph_for_ad(with_ops);
  runtime::Session s(runtime::Device::cpu(), so);
  runtime::Executable a = s.compile(with_ops), b = s.compile(primitives);
  std::mt19937 rng(1);
  std::normal_distribution<double> n(0.0, 0.1);
  runtime::TensorMap params;
  for (NodeId id : model.params()) {
    ir::Tensor t(model.shape(id));
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, n(rng));
    params[model.node(id).attr<ir::LeafAttrs>().name] = t;
  }
  ir::Tensor x(model.shape(model.inputs()[0]));
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.set_f64(i, n(rng) * 10);
  a.set_params(params);
  b.set_params(params);
  const std::map<std::string, ir::Tensor> in{{"x", x}};
  auto time_ms = [&](runtime::Executable& e) {
    const auto t0 = std::chrono::steady_clock::now();
    e.run(in);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Same values (the ops against their decompositions), then warm-up.
  const auto ra = a.run(in), rb = b.run(in);
  double worst = 0;
  for (const auto& [name, t] : ra)
    for (std::int64_t i = 0; i < t.numel(); ++i)
      worst = std::max(worst, std::abs(t.get_f64(i) - rb.at(name).get_f64(i)) /
                                  (1 + std::abs(rb.at(name).get_f64(i))));
  const bool profile = std::getenv("RLX_BENCH_PROFILE") != nullptr;
  auto backend_of = [](runtime::Executable& e) {
    return const_cast<compile::Executable*>(e.prepare({}).executable);
  };
  if (profile)
    for (runtime::Executable* e : {&a, &b})
      cpu::set_kernel_profiling(*backend_of(*e), true);
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    ta.push_back(time_ms(a));
    tb.push_back(time_ms(b));
  }
  std::printf("cnn gradient, batch %lld, %d threads, %d interleaved rounds (median ms):\n",
              static_cast<long long>(batch), so.cpu.num_threads, rounds);
  std::printf("  backward ops (conv2d_grad_*, pool2d_grad): %8.2f ms\n", median(ta));
  std::printf("  primitives (im2col Gather / ScatterAdd):   %8.2f ms\n", median(tb));
  std::printf("  max relative difference of the outputs: %.3g\n", worst);
  if (profile)
    std::printf("-- backward ops:\n%s-- primitives:\n%s",
                cpu::kernel_profile(*backend_of(a)).c_str(),
                cpu::kernel_profile(*backend_of(b)).c_str());
  return 0;
}
