// io_gate_calibration.cpp: the CPU's IO fusion-benefit gate knobs, checked-in defaults and their
// measurement with the kernel profiler (the same kernels a run executes, timed in the run loop).
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/fusion/io_gate.hpp"
#include "rlx/ir/builder.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
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
    for (const compile::KernelTiming& k : kernel_timings(*exe_).kernels)
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

/// A probe of one region op kind: a graph, its node of that kind (the one priced) and the kernel
/// that runs it ("compare"; "elementwise_region" for a probe made one region).
struct OpProbe {
  ir::Graph g;
  ir::NodeId target;
  std::string kernel;
};

/// The probes of region op \p op on [m, n] f32 values: \p in_region false, the op as a kernel of
/// its own; true, the op in a region with cheap ops priced before it (an add of its operands
/// first: abs(abs(x)) would simplify to one op; a compare's region also holds a where, priced
/// before it, so that its result is f32). nullopt for an op the probes cannot build (attributes
/// other than a compare's, a cast's or an expand's; neither one nor two operands).
std::optional<OpProbe> op_probe(OpKind op, std::int64_t m, std::int64_t n, bool in_region) {
  OpProbe p;
  ir::Builder b(p.g);
  const ir::Shape s = ir::Shape::of({m, n});
  const ir::NodeId x = b.input("x", s);
  const ir::NodeId y = b.input("y", s);
  const ir::NodeId ax = in_region ? b.add(x, y) : x;
  const ir::OpInfo& info = ir::op_info(op);
  ir::NodeId out;
  if (op == OpKind::Compare) {
    p.target = b.compare(ir::CmpOp::gt, ax, y);
    out = in_region ? b.where(p.target, x, y) : p.target;
  } else if (op == OpKind::Where) {
    const ir::NodeId c = b.input("c", ir::Shape::of({m, n}, ir::DType::boolean));
    out = p.target = b.where(c, ax, y);
  } else if (op == OpKind::Cast) {
    // bool -> f32: the cast training graphs hold (a mask as a factor).
    const ir::NodeId c = b.input("c", ir::Shape::of({m, n}, ir::DType::boolean));
    p.target = b.cast(c, ir::DType::f32);
    out = in_region ? b.mul(p.target, y) : p.target;
  } else if (op == OpKind::Expand) {
    // A bias row broadcast over the rows.
    p.target = b.expand(b.input("r", ir::Shape::of({1, n})), {ir::Dim(m), ir::Dim(n)});
    out = in_region ? b.add(p.target, y) : p.target;
  } else if (!std::holds_alternative<ir::NoAttrs>(ir::default_attrs(op))) {
    return std::nullopt;
  } else if (info.min_arity == 1 && info.max_arity == 1) {
    out = p.target = b.unary(op, ax);
  } else if (info.min_arity == 2 && info.max_arity == 2) {
    out = p.target = b.op(op, {ax, y}, ir::NoAttrs{});
  } else {
    return std::nullopt;
  }
  b.output(out);
  p.kernel = in_region ? "elementwise_region" : std::string(ir::op_name(op));
  return p;
}

/// The region op kinds the CPU runs in its region loop on f32, in ops.def order.
std::vector<OpKind> region_ops() {
  std::vector<OpKind> ops;
  const ir::ClaimSet& claims = cpu_claims(true);
  ir::for_each_op([&](OpKind op) {
    if (ir::is_elementwise(op) && !ir::has_flag(op, ir::kMayFail) && claims.claims(op) &&
        (claims.claims(op, ir::DType::f32) || op == OpKind::Compare) && op_probe(op, 1, 1, false))
      ops.push_back(op);
  });
  // The probes of these hold other region ops, priced before them.
  for (OpKind late : {OpKind::Cast, OpKind::Expand, OpKind::Compare})
    if (auto it = std::find(ops.begin(), ops.end(), late); it != ops.end()) {
      ops.erase(it);
      ops.push_back(late);
    }
  return ops;
}

} // namespace

fusion::IoFusionGate cpu_io_gate_defaults() {
  // `rlx_cpu_calibrate_io_gate 2 5` (2 threads, --gemm auto, median of 5 rounds) on the shared
  // 2-core AMD EPYC (Zen 4; AVX2 + FMA visible, no AVX-512) at load average 5.5-7, 2026-11-26.
  // Every op the region loop runs is priced as a kernel of its own and as a region instruction
  // (a key missing on one side would price that side at nothing). The region loop's
  // transcendental instructions measure in two modes from round to round (about 2x apart, the
  // slower one in most rounds under load); the medians are the slower; see rlx-cpu/DESIGN.md.
  fusion::IoFusionGate g;
  g.dispatch_ns = 30;
  g.memory_bytes_per_ns = 73.5;
  g.ns_per_element = {
      {"abs", 0.001},
      {"acos", 4.441},
      {"acosh", 6.517},
      {"add", 0.013},
      {"asin", 4.136},
      {"asinh", 9.820},
      {"atan", 4.456},
      {"atanh", 8.800},
      {"cast", 0.629},
      {"compare", 0.751},
      {"cos", 3.756},
      {"cosh", 8.580},
      {"div", 0.100},
      {"elementwise_region", 0.053},
      {"elementwise_region.abs", 0.003},
      {"elementwise_region.acos", 4.828},
      {"elementwise_region.acosh", 6.198},
      {"elementwise_region.add", 0.042},
      {"elementwise_region.asin", 4.163},
      {"elementwise_region.asinh", 9.923},
      {"elementwise_region.atan", 4.500},
      {"elementwise_region.atanh", 10.176},
      {"elementwise_region.cast", 0.032},
      {"elementwise_region.compare", 0.000},
      {"elementwise_region.cos", 3.415},
      {"elementwise_region.cosh", 8.672},
      {"elementwise_region.div", 0.020},
      {"elementwise_region.erf", 0.550},
      {"elementwise_region.exp", 0.786},
      {"elementwise_region.expand", 0.000},
      {"elementwise_region.gelu", 0.680},
      {"elementwise_region.gelu_tanh", 0.918},
      {"elementwise_region.log", 4.497},
      {"elementwise_region.maximum", 0.066},
      {"elementwise_region.minimum", 0.068},
      {"elementwise_region.mul", 0.000},
      {"elementwise_region.neg", 0.001},
      {"elementwise_region.pow", 4.512},
      {"elementwise_region.reciprocal", 0.024},
      {"elementwise_region.relu", 0.000},
      {"elementwise_region.rsqrt", 0.219},
      {"elementwise_region.sigmoid", 0.923},
      {"elementwise_region.silu", 0.923},
      {"elementwise_region.sin", 3.443},
      {"elementwise_region.sinh", 9.957},
      {"elementwise_region.sqrt", 0.115},
      {"elementwise_region.sub", 0.010},
      {"elementwise_region.swiglu", 0.976},
      {"elementwise_region.tanh", 0.570},
      {"elementwise_region.where", 0.145},
      {"erf", 1.419},
      {"exp", 0.270},
      {"expand", 0.015},
      {"gelu", 0.707},
      {"gelu_tanh", 3.425},
      {"log", 4.135},
      {"matmul_bias_act.gelu", 0.000},
      {"matmul_bias_act.gelu_tanh", 0.752},
      {"matmul_bias_act.relu", 0.000},
      {"matmul_bias_act.sigmoid", 0.586},
      {"matmul_bias_act.silu", 0.658},
      {"matmul_bias_act.tanh", 0.000},
      {"maximum", 0.278},
      {"minimum", 0.278},
      {"mul", 0.014},
      {"neg", 0.000},
      {"pow", 4.418},
      {"reciprocal", 0.153},
      {"relu", 0.002},
      {"rsqrt", 0.623},
      {"sigmoid", 0.467},
      {"silu", 0.567},
      {"sin", 3.438},
      {"sinh", 9.755},
      {"sqrt", 0.114},
      {"sub", 0.014},
      {"swiglu", 2.559},
      {"tanh", 2.744},
      {"where", 1.562},
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
  // The region loop: a cheap instruction (abs then neg, two per element), the price of any op
  // without one of its own.
  const double cheap =
      beyond_bytes(kernel_ns(abs_then(kElems, OpKind::Neg), "elementwise_region", opts)) / 2;
  g.ns_per_element[fusion::region_cost_key(OpKind::Neg)] = cheap;
  g.ns_per_element["elementwise_region"] = cheap;
  // Every op the region loop runs, priced twice: its one-op kernel's time beyond dispatch and
  // bytes, and its instruction in a region beyond the region's dispatch, bytes and the other
  // members' prices (so no region is judged with members priced on one side only).
  for (OpKind op : region_ops()) {
    for (bool in_region : {false, true}) {
      const std::optional<OpProbe> p = op_probe(op, kM, kN, in_region);
      fusion::IoFusionGate known = g;
      const std::string key =
          in_region ? fusion::region_cost_key(op) : fusion::cost_key(p->g, p->target);
      known.ns_per_element[key] = 0;
      std::vector<ir::NodeId> members;
      for (ir::NodeId id : p->g.ids())
        if (!ir::is_leaf(p->g.node(id).op))
          members.push_back(id);
      const std::vector<ir::NodeId> target{p->target};
      const fusion::GraphIoProfile io = in_region ? fusion::profile_region_io(p->g, members, known)
                                                  : fusion::profile_graph_io(p->g, target, known);
      const double rest = kernel_ns(p->g, p->kernel, opts) - g.dispatch_ns -
                          static_cast<double>(io.device_traffic_bytes) / g.memory_bytes_per_ns -
                          io.compute_ns;
      g.ns_per_element[key] =
          std::max(0.0, rest / static_cast<double>(p->g.shape(p->target).numel()));
    }
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
