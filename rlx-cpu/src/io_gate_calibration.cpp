// io_gate_calibration.cpp: the CPU's IO fusion-benefit gate knobs, checked-in defaults and their
// measurement with the kernel profiler (the same kernels a run executes, timed in the run loop).
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/fusion/io_gate.hpp"
#include "rlx/ir/builder.hpp"

#include <algorithm>
#include <string>
#include <utility>

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

/// Median time of the first kernel of op \p op when \p g runs \p runs times (after one warm-up),
/// every fusion on and no gate (the calibration measures what the gate will judge).
double kernel_ms(const ir::Graph& g, std::string_view op, const CpuOptions& base, int runs = 15) {
  CpuOptions o = base;
  o.use_io_gate = false;
  CpuBackend backend(o);
  compile::CompileOptions co;
  co.fold_constants = false;
  auto exe = backend.compile(compile::CompilePipeline(backend, co).run(g).lir);
  for (ir::NodeId id : g.inputs())
    exe->set_input(g.node(id).attr<ir::LeafAttrs>().name, filled(g.shape(id)));
  for (ir::NodeId id : g.params())
    exe->set_param(g.node(id).attr<ir::LeafAttrs>().name, filled(g.shape(id)));
  exe->execute();
  set_kernel_profiling(*exe, true);
  for (int i = 0; i < runs; ++i)
    exe->execute();
  for (const KernelTiming& k : kernel_timings(*exe).kernels)
    if (k.op == op)
      return k.median_ms;
  throw Error("calibrate_cpu_io_gate: no " + std::string(op) + " kernel in the probe graph");
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
  // Measured with calibrate_cpu_io_gate() (rlx_cpu_calibrate_io_gate) on the shared 2-core AMD
  // EPYC Zen 4 (AVX2 + FMA visible, no AVX-512), 2 threads, oneDNN post-ops, at load ~12 (see
  // rlx-cpu DESIGN.md, "The IO fusion-benefit gate"); rounded.
  fusion::IoFusionGate g;
  g.dispatch_ns = 6000;
  g.memory_bytes_per_ns = 20;
  g.min_gain_ns = 0;
  g.ns_per_element = {
      {"relu", 0.0},
      {"gelu", 0.5},
      {"gelu_tanh", 0.5},
      {"silu", 0.4},
      {"sigmoid", 0.4},
      {"tanh", 0.4},
      {"matmul_bias_act.relu", 0.0},
      {"matmul_bias_act.gelu", 1.0},
      {"matmul_bias_act.gelu_tanh", 1.0},
      {"matmul_bias_act.silu", 1.0},
      {"matmul_bias_act.sigmoid", 1.0},
      {"matmul_bias_act.tanh", 1.0},
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
  // Dispatch: a kernel record with next to no work.
  g.dispatch_ns = 1e6 * kernel_ms(unary(16, OpKind::Neg), "neg", opts, 31);
  // Bandwidth: a kernel that only moves bytes.
  const double neg_ns = 1e6 * kernel_ms(unary(kElems, OpKind::Neg), "neg", opts, 31);
  g.memory_bytes_per_ns = moved / std::max(neg_ns - g.dispatch_ns, 1.0);
  auto beyond_bytes = [&](double ns) {
    return std::max(0.0, (ns - g.dispatch_ns - moved / g.memory_bytes_per_ns) / elems);
  };
  // The region loop: a cheap instruction (abs then neg, two per element), then each unary op
  // over the cheap one.
  const double cheap =
      beyond_bytes(1e6 * kernel_ms(abs_then(kElems, OpKind::Neg), "elementwise_region", opts)) / 2;
  g.ns_per_element[fusion::region_cost_key(OpKind::Neg)] = cheap;
  g.ns_per_element["elementwise_region"] = cheap;
  for (OpKind op : kRegionOps) {
    // The one-op kernel's time beyond its bytes, per element, and the same op in the region.
    g.ns_per_element[std::string(ir::op_name(op))] =
        beyond_bytes(1e6 * kernel_ms(unary(kElems, op), ir::op_name(op), opts));
    g.ns_per_element[fusion::region_cost_key(op)] = std::max(
        0.0,
        beyond_bytes(1e6 * kernel_ms(abs_then(kElems, op), "elementwise_region", opts)) - cheap);
  }
  // The GEMM epilogue: the fused product's time over the same product with the bias only.
  const double plain = kernel_ms(dense(kM, kK, kN, std::nullopt), "matmul_bias_act", opts);
  for (const auto& [act, op] : kActs) {
    const double fused = kernel_ms(dense(kM, kK, kN, op), "matmul_bias_act", opts);
    g.ns_per_element["matmul_bias_act." + act_name(act)] =
        std::max(0.0, 1e6 * (fused - plain) / elems);
  }
  return g;
}

} // namespace rlx::cpu
