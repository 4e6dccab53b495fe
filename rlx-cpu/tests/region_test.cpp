// region_test.cpp: the ElementwiseRegion kernel through the whole compile pipeline (the region
// pass forms the regions): values against the reference interpreter on random inputs, including
// broadcast operands, bool masks, several results, sizes around the tile (1, 7, 1023, 1025
// elements) and sizes large enough to run on several threads; regions are not formed for dtypes
// the loop does not take.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using namespace rlx;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

Tensor random(const Shape& s, std::uint64_t seed, double lo = -2, double hi = 2) {
  Tensor t(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, s.dtype == DType::boolean ? (u(rng) > 0 ? 1 : 0) : u(rng));
  return t;
}

struct Compiled {
  std::unique_ptr<compile::Executable> exe;
  compile::CompileResult result;
};

Compiled compile_fused(const Graph& g, const cpu::CpuBackend& backend) {
  compile::CompileOptions o;
  o.fold_constants = false;
  Compiled c;
  c.result = compile::CompilePipeline(backend, o).run(g);
  c.exe = backend.compile(c.result.lir);
  return c;
}

int regions_in(const compile::CompileResult& r) {
  int n = 0;
  for (const auto& node : r.lir.graph().nodes())
    n += node.op == ir::OpKind::ElementwiseRegion;
  return n;
}

/// Runs \p g fused on the CPU and compares every output with the reference: |got - want| <=
/// tol * (1 + |want|). \returns the number of regions formed.
int check(const Graph& g, int threads, double tol = 1e-5) {
  cpu::CpuOptions opts;
  opts.num_threads = threads;
  opts.elementwise_regions = true;
  opts.use_io_gate = false; // the kernel under test gets every legal region, whatever it costs
  cpu::CpuBackend backend(opts);
  Compiled c = compile_fused(g, backend);
  ir::reference::TensorMap ins, params;
  std::uint64_t seed = 11;
  for (NodeId id : g.inputs())
    ins[g.node(id).attr<ir::LeafAttrs>().name] = random(g.shape(id), seed++);
  for (NodeId id : g.params())
    params[g.node(id).attr<ir::LeafAttrs>().name] = random(g.shape(id), seed++);
  for (const auto& [name, t] : ins)
    c.exe->set_input(name, t);
  for (const auto& [name, t] : params)
    c.exe->set_param(name, t);
  c.exe->execute();
  auto want = ir::reference::evaluate(g, ins, params);
  for (std::size_t o = 0; o < want.size(); ++o) {
    Tensor got = c.exe->output(o);
    EXPECT_EQ(got.shape(), want[o].shape());
    for (std::int64_t i = 0; i < want[o].numel(); ++i) {
      double w = want[o].get_f64(i), v = got.get_f64(i);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(v)) << "output " << o << " element " << i;
        continue;
      }
      if (std::fabs(v - w) <= tol * (1 + std::fabs(w)))
        continue;
      ADD_FAILURE() << "got " << v << ", want " << w << "output " << o << " element " << i << " of "
                    << want[o].numel() << "\n"
                    << cpu::kernel_listing(*c.exe);
      return -1;
    }
  }
  return regions_in(c.result);
}

/// x [rows, cols] + a row bias, through a 6-op chain with a compare / where.
Graph chain(std::int64_t rows, std::int64_t cols) {
  Graph g("chain");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({rows, cols}));
  NodeId bias = b.param("bias", Shape::of({cols}));
  NodeId y = b.mul(b.add(x, bias), b.scalar(0.75));
  NodeId t = b.tanh(y);
  NodeId keep = b.compare(ir::CmpOp::gt, t, b.scalar(-0.25));
  NodeId z = b.where(keep, b.gelu(y), b.exp(t));
  b.output(b.sub(z, bias));
  return g;
}

TEST(CpuRegion, SwiGluRunsInTheRegionLoop) {
  // swiglu(x + y, y) * y: a fused op among the region's instructions (the loop once rejected it
  // as an unknown unary op at compile time).
  Graph g("swiglu_region");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({33, 70}));
  NodeId y = b.input("y", Shape::of({33, 70}));
  b.output(b.mul(b.op(ir::OpKind::SwiGlu, {b.add(x, y), y}, ir::NoAttrs{}), y));
  EXPECT_EQ(check(g, 2), 1);
}

TEST(CpuRegion, OddSizesAroundTheTile) {
  for (std::int64_t n : {1, 7, 1023, 1025})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", threads " + std::to_string(threads));
      EXPECT_EQ(check(chain(n, 1), threads), 1);
      EXPECT_EQ(check(chain(1, n), threads), 1);
    }
}

TEST(CpuRegion, LargeBroadcastShapesOnSeveralThreads) {
  EXPECT_EQ(check(chain(128, 3072), 2), 1); // the bias row read in place, every tile in one row
  for (int threads : {1, 2})
    EXPECT_EQ(check(chain(9, 700), threads), 1); // tiles that cross rows gather the bias
  // Column and row operands, a bool mask broadcast along the middle axis, a [1, C] operand.
  Graph g("bcast");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({6, 37, 129}));
  NodeId col = b.input("col", Shape::of({37, 1}));
  NodeId row = b.param("row", Shape::of({1, 129}));
  NodeId mask = b.input("mask", Shape::of({6, 1, 129}, DType::boolean));
  NodeId y = b.add(b.mul(x, col), row);
  NodeId z = b.where(mask, b.silu(y), b.maximum(y, b.scalar(0.0)));
  b.output(b.div(z, b.add(b.abs(col), b.scalar(1.0))));
  // abs(col) + 1 has dims [37, 1]: a region of its own (a different iteration space).
  EXPECT_EQ(check(g, 2), 2);
}

TEST(CpuRegion, SeveralResultsWriteTheirTupleParts) {
  // e is read by the chain, a MatMul and the graph output; the region returns (e, tail).
  Graph g("multi");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({33, 33}));
  NodeId w = b.param("w", Shape::of({33, 33}));
  NodeId e = b.exp(b.mul(x, b.scalar(0.5)));
  NodeId tail = b.sigmoid(b.sub(e, x));
  b.output(b.matmul(e, w));
  b.output(tail);
  b.output(e);
  b.output(b.compare(ir::CmpOp::lt, tail, b.scalar(0.5))); // a bool result joins as a part
  EXPECT_EQ(check(g, 2, 1e-5), 1);
}

TEST(CpuRegion, DtypesTheLoopDoesNotTakeStayUnfused) {
  Graph g("f64");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 5}, DType::f64));
  b.output(b.exp(b.neg(b.abs(x))));
  EXPECT_EQ(check(g, 1, 1e-12), 0);
  cpu::CpuOptions region_opts;
  region_opts.elementwise_regions = true;
  region_opts.use_io_gate = false;
  cpu::CpuBackend backend(region_opts);
  Compiled c = compile_fused(g, backend);
  bool dtype_miss = false;
  for (const auto& m : c.result.fusion.missed)
    dtype_miss = dtype_miss || m.reason == fusion::MissReason::dtype_mismatch;
  EXPECT_TRUE(dtype_miss) << c.result.fusion.str();
}

TEST(CpuRegion, TheKernelListingNamesTheRegion) {
  cpu::CpuOptions region_opts;
  region_opts.elementwise_regions = true;
  region_opts.use_io_gate = false;
  cpu::CpuBackend backend(region_opts);
  Compiled c = compile_fused(chain(4, 8), backend);
  std::string listing = cpu::kernel_listing(*c.exe);
  EXPECT_NE(listing.find("elementwise_region"), std::string::npos) << listing;
  EXPECT_EQ(c.result.fusion.applied.at("elementwise_region"), 1);
}

} // namespace
