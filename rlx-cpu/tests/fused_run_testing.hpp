// fused_run_testing.hpp: what the fused-op tests of rlx-cpu share: seeded random tensors and leaf
// values, one compile + run of a graph through the CPU pipeline (fusion on or off) with its kernel
// count, and the fused-against-unfused-against-reference check under several backends.
#pragma once

#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace rlx::cpu::testing {

/// A tensor of shape \p s with values uniform in [lo, hi) from \p seed.
inline ir::Tensor random_tensor(const ir::Shape& s, std::uint64_t seed, double lo = -1.0,
                                double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  ir::Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, u(rng));
  return t;
}

/// The outputs, kernel listing and count, and fusion report of one compiled run.
struct CpuRun {
  std::vector<ir::Tensor> out;
  int kernels = 0;
  std::string listing;
  fusion::FusionReport fusion;
};

/// Compiles \p g for \p backend (fusion on or off), runs it twice on \p values (inputs and params
/// by name; the second run reuses the planned scratch, so it must give the same values) and
/// counts its kernels.
inline CpuRun run(const ir::Graph& g, const CpuBackend& backend, bool fuse,
                  const ir::reference::TensorMap& values) {
  compile::CompileOptions o;
  o.fuse = fuse;
  CpuRun r;
  compile::CompileResult c = compile::CompilePipeline(backend, o).run(g);
  r.fusion = c.fusion;
  auto exe = backend.compile(c.lir);
  for (ir::NodeId id : g.inputs())
    exe->set_input(g.node(id).attr<ir::LeafAttrs>().name,
                   values.at(g.node(id).attr<ir::LeafAttrs>().name));
  for (ir::NodeId id : g.params())
    exe->set_param(g.node(id).attr<ir::LeafAttrs>().name,
                   values.at(g.node(id).attr<ir::LeafAttrs>().name));
  exe->execute();
  exe->execute();
  for (std::size_t i = 0; i < g.outputs().size(); ++i)
    r.out.push_back(exe->output(i));
  r.listing = kernel_listing(*exe);
  for (char ch : r.listing)
    r.kernels += ch == '\n';
  return r;
}

/// Values for every leaf of a graph, by name: the inputs, the params, and both together.
struct LeafValues {
  ir::reference::TensorMap inputs, params, all;
};

/// Values uniform in [-1, 1) for every leaf of \p g: inputs then params, seeds \p seed, seed + 1...
inline LeafValues random_leaf_values(const ir::Graph& g, std::uint64_t seed = 5) {
  LeafValues v;
  for (ir::NodeId id : g.inputs()) {
    const auto& l = g.node(id).attr<ir::LeafAttrs>();
    v.all[l.name] = v.inputs[l.name] = random_tensor(l.shape, seed++);
  }
  for (ir::NodeId id : g.params()) {
    const auto& l = g.node(id).attr<ir::LeafAttrs>();
    v.all[l.name] = v.params[l.name] = random_tensor(l.shape, seed++);
  }
  return v;
}

/// Values for a transformer block's leaves, seeds \p seed, seed + 1...: inputs in [-1, 1), except
/// that a padding mask named "mask" keeps every key but the last of batch row 0; norm gains (rank-1
/// params whose name holds "_g") in [0.5, 1.5); every other param in [-1/4, 1/4).
inline LeafValues block_leaf_values(const ir::Graph& g, std::uint64_t seed) {
  LeafValues v;
  for (ir::NodeId id : g.inputs()) {
    const auto& l = g.node(id).attr<ir::LeafAttrs>();
    ir::Tensor t = random_tensor(l.shape, seed++);
    if (l.name == "mask") {
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_f64(i, 1.0);
      t.set_f64(l.shape.dims[1].size() - 1, 0.0);
    }
    v.all[l.name] = v.inputs[l.name] = t;
  }
  for (ir::NodeId id : g.params()) {
    const auto& l = g.node(id).attr<ir::LeafAttrs>();
    const bool gain = l.shape.rank() == 1 && l.name.find("_g") != std::string::npos;
    v.all[l.name] = v.params[l.name] = gain ? random_tensor(l.shape, seed++, 0.5, 1.5)
                                            : random_tensor(l.shape, seed++, -0.25, 0.25);
  }
  return v;
}

/// Runs \p g on \p values fused and unfused under each of \p options: every output of both within
/// \p tol of the reference interpreter, and fewer kernels fused. \returns the last fused run.
inline CpuRun check_fused(const ir::Graph& g, double tol, const LeafValues& values,
                          std::initializer_list<CpuOptions> options) {
  const auto want = ir::reference::evaluate(g, values.inputs, values.params);
  CpuRun last;
  for (const CpuOptions& o : options) {
    SCOPED_TRACE(gemm_provider_name(o.gemm));
    const CpuBackend backend(o);
    CpuRun fused = run(g, backend, true, values.all);
    CpuRun plain = run(g, backend, false, values.all);
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_LE(ir::max_abs_diff(fused.out[i], want[i]), tol) << fused.listing;
      EXPECT_LE(ir::max_abs_diff(plain.out[i], want[i]), tol);
    }
    EXPECT_LT(fused.kernels, plain.kernels) << fused.listing << "\n" << plain.listing;
    last = std::move(fused);
  }
  return last;
}

} // namespace rlx::cpu::testing
