// fused_run_testing.hpp: what the fused-op tests of rlx-cpu share: seeded random tensors and one
// compile + run of a graph through the CPU pipeline (fusion on or off) with its kernel count.
#pragma once

#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/reference.hpp"

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

} // namespace rlx::cpu::testing
