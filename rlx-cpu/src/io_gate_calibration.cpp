// io_gate_calibration.cpp: the CPU's IO fusion-benefit gate knobs, checked-in defaults and their
// measurement with the kernel profiler (the same kernels a run executes, timed in the run loop).
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/fusion/io_gate.hpp"
#include "rlx/ir/builder.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rlx::cpu {

namespace {

using ir::OpKind;

/// The activations of MatMulBiasAct with the one-op kernel each replaces.
constexpr std::pair<ir::Activation, OpKind> kActs[] = {
    {ir::Activation::relu, OpKind::Relu},          {ir::Activation::gelu, OpKind::Gelu},
    {ir::Activation::gelu_tanh, OpKind::GeluTanh}, {ir::Activation::silu, OpKind::Silu},
    {ir::Activation::sigmoid, OpKind::Sigmoid},    {ir::Activation::tanh, OpKind::Tanh},
};

/// The unary ops whose one-op kernel and region instruction are priced apart from the cheap
/// ones (the transcendental and activation ops of the anchors).
constexpr OpKind kRegionOps[] = {OpKind::Relu,    OpKind::Gelu, OpKind::GeluTanh, OpKind::Silu,
                                 OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp,      OpKind::Erf};

std::string act_name(ir::Activation a) {
  return std::string(ir::enum_names(ir::Activation{})[static_cast<std::size_t>(a)]);
}

ir::Tensor filled(const ir::Shape& s) {
  ir::Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, 0.01 * static_cast<double>(i % 23) - 0.1);
  return t;
}

/// A probe graph compiled through the real pipeline, every fusion on and no gate (the
/// calibration measures what the gate will judge), with filled inputs and params.
class Probe {
public:
  Probe(const ir::Graph& g, std::string_view op, const CpuOptions& base) : op_(op) {
    CpuOptions o = base;
    o.use_io_gate = false;
    CpuBackend backend(o);
    compile::CompileOptions co;
    co.fold_constants = false;
    exe_ = backend.compile(compile::CompilePipeline(backend, co).run(g).lir);
    for (ir::NodeId id : g.inputs())
      exe_->set_input(g.node(id).attr<ir::LeafAttrs>().name, filled(g.shape(id)));
    for (ir::NodeId id : g.params())
      exe_->set_param(g.node(id).attr<ir::LeafAttrs>().name, filled(g.shape(id)));
    exe_->execute(); // warm-up
  }

  /// The median time in ns of the first kernel of op \p op over \p runs profiled runs; the
  /// lowest such median is kept in best().
  double batch(int runs) {
    set_kernel_profiling(*exe_, true);
    for (int i = 0; i < runs; ++i)
      exe_->execute();
    for (const KernelTiming& k : kernel_timings(*exe_).kernels)
      if (k.op == op_) {
        if (std::getenv("RLX_CALIBRATE_VERBOSE"))
          std::fprintf(stderr, "probe %-20s %-10s %-50s %10.4f ms\n", k.op.c_str(),
                       k.provider.c_str(), k.note.substr(0, 50).c_str(), k.median_ms);
        best_ = std::min(best_, 1e6 * k.median_ms);
        medians_.push_back(1e6 * k.median_ms);
        return 1e6 * k.median_ms;
      }
    throw Error("calibrate_cpu_io_gate: no " + op_ + " kernel in the probe graph");
  }
  double best() const { return best_; }
  /// How far the median batch lies above the best one, in ns: the load's noise on this probe.
  double noise() const {
    std::vector<double> m = medians_;
    std::nth_element(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2), m.end());
    return m.empty() ? 0.0 : m[m.size() / 2] - best_;
  }

private:
  std::vector<double> medians_;
  std::string op_;
  std::unique_ptr<compile::Executable> exe_;
  double best_ = 1e300;
};

/// The lowest of \p batches batch medians (a shared machine's load only ever adds time), in
/// ns, of the first \p op kernel of \p g.
double kernel_ns(const ir::Graph& g, std::string_view op, const CpuOptions& opts, int batches = 5,
                 int runs = 9) {
  Probe p(g, op, opts);
  for (int b = 0; b < batches; ++b)
    p.batch(runs);
  return p.best();
}

/// x [m, k] · w [n, k]^T + b, then \p act (none: the bias only).
ir::Graph dense(std::int64_t m, std::int64_t k, std::int64_t n, std::optional<OpKind> act) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({m, k}));
  auto w = b.param("w", ir::Shape::of({n, k}));
  auto bias = b.param("b", ir::Shape::of({n}));
  auto y = b.add(b.matmul(x, w, false, true), bias);
  b.output(act ? b.unary(*act, y) : y);
  return g;
}

/// One op on x [n]: a kernel of its own.
ir::Graph unary(std::int64_t n, OpKind op) {
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.unary(op, b.input("x", ir::Shape::of({n}))));
  return g;
}

/// \p op (abs(x)) on x [n]: the region pass makes the two ops one elementwise_region kernel.
ir::Graph abs_then(std::int64_t n, OpKind op) {
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.unary(op, b.abs(b.input("x", ir::Shape::of({n})))));
  return g;
}

} // namespace

fusion::IoFusionGate cpu_io_gate_defaults() {
  // `rlx_cpu_calibrate_io_gate 2 5` (2 threads, --gemm auto, median of 5 rounds) on the shared
  // 2-core AMD EPYC (Zen 4; AVX2 + FMA visible, no AVX-512) at load average 13-15, 2026-11-26.
  // The load shows in the epilogue knobs: a round where --gemm auto gives a fused product to
  // oneDNN measured 200-360 ns per element (oneDNN under contention), the other rounds nothing
  // above the probes' noise, so the medians are 0; see rlx-cpu/DESIGN.md.
  fusion::IoFusionGate g;
  g.dispatch_ns = 30;
  g.memory_bytes_per_ns = 72.5;
  g.ns_per_element = {
      {"elementwise_region", 0.034},
      {"elementwise_region.erf", 0.569},
      {"elementwise_region.exp", 0.808},
      {"elementwise_region.gelu", 0.695},
      {"elementwise_region.gelu_tanh", 0.942},
      {"elementwise_region.neg", 0.034},
      {"elementwise_region.relu", 0.000},
      {"elementwise_region.sigmoid", 0.953},
      {"elementwise_region.silu", 0.951},
      {"elementwise_region.tanh", 0.599},
      {"erf", 1.420},
      {"exp", 0.275},
      {"gelu", 0.705},
      {"gelu_tanh", 3.413},
      {"matmul_bias_act.gelu", 0.000},
      {"matmul_bias_act.gelu_tanh", 1.461},
      {"matmul_bias_act.relu", 0.000},
      {"matmul_bias_act.sigmoid", 0.000},
      {"matmul_bias_act.silu", 1.386},
      {"matmul_bias_act.tanh", 0.000},
      {"relu", 0.001},
      {"sigmoid", 0.465},
      {"silu", 0.562},
      {"tanh", 2.706},
  };
  return g;
}

fusion::IoFusionGate calibrate_cpu_io_gate(const CpuOptions& opts) {
  fusion::IoFusionGate g;
  // Every probe works on the anchors' activation size (BERT-mini's FFN-up result, 128 x 1024
  // f32: 512 KiB, cache-resident like the activations the gate judges), so dispatch, bytes and
  // per-element terms are measured where they are used.
  constexpr std::int64_t kM = 128, kK = 256, kN = 1024;
  constexpr std::int64_t kElems = kM * kN;
  const double elems = static_cast<double>(kElems);
  const double moved = 2.0 * 4 * elems; // one f32 operand read, one f32 result written
  // Dispatch and bandwidth from a kernel that only moves bytes, at two sizes: T(n) = d + n * c,
  // so d is what a launch costs at these sizes (the record, the task split and the second
  // thread's handoff), never less than a record with next to no work (16 elements, one thread).
  const double tiny_ns = kernel_ns(unary(16, OpKind::Neg), "neg", opts);
  const double full_ns = kernel_ns(unary(kElems, OpKind::Neg), "neg", opts);
  const double half_ns = kernel_ns(unary(kElems / 2, OpKind::Neg), "neg", opts);
  const double per_elem = std::max((full_ns - half_ns) / (elems / 2), 1e-3);
  g.dispatch_ns = std::max(tiny_ns, std::min(full_ns - elems * per_elem, 0.5 * full_ns));
  g.memory_bytes_per_ns = moved / std::max(full_ns - g.dispatch_ns, 1.0);
  auto beyond_bytes = [&](double ns) {
    return std::max(0.0, (ns - g.dispatch_ns - moved / g.memory_bytes_per_ns) / elems);
  };
  // The region loop: a cheap instruction (abs then neg, two per element), then each unary op
  // over the cheap one.
  const double cheap =
      beyond_bytes(kernel_ns(abs_then(kElems, OpKind::Neg), "elementwise_region", opts)) / 2;
  g.ns_per_element[fusion::region_cost_key(OpKind::Neg)] = cheap;
  g.ns_per_element["elementwise_region"] = cheap;
  for (OpKind op : kRegionOps) {
    // The one-op kernel's time beyond its bytes, per element, and the same op in the region.
    g.ns_per_element[std::string(ir::op_name(op))] =
        beyond_bytes(kernel_ns(unary(kElems, op), ir::op_name(op), opts));
    g.ns_per_element[fusion::region_cost_key(op)] = std::max(
        0.0, beyond_bytes(kernel_ns(abs_then(kElems, op), "elementwise_region", opts)) - cheap);
  }
  // The GEMM epilogue: the fused product's time over the same product with the bias only, their
  // batches interleaved so that the machine's load falls on both alike.
  Probe plain(dense(kM, kK, kN, std::nullopt), "matmul_bias_act", opts);
  for (const auto& [act, op] : kActs) {
    Probe fused(dense(kM, kK, kN, op), "matmul_bias_act", opts);
    for (int b = 0; b < 5; ++b) {
      plain.batch(9);
      fused.batch(9);
    }
    // A difference within the two probes' noise is no difference.
    const double delta = fused.best() - plain.best();
    g.ns_per_element["matmul_bias_act." + act_name(act)] =
        delta <= plain.noise() + fused.noise() ? 0.0 : delta / elems;
  }
  return g;
}

} // namespace rlx::cpu
