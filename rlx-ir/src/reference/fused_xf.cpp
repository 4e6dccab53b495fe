// fused_xf.cpp: reference kernels of the transformer fused ops (SwiGlu, SwiGluMatMul). Each is
// the value of its decomposition: SwiGlu = silu(gate) * up computed in double and rounded once
// (the decomposition rounds silu first: within an ulp); SwiGluMatMul rounds both products to the
// node's dtype (as the two MatMul nodes it replaces do) and then applies SwiGlu.
#include "kernels.hpp"

#include <Eigen/Dense>

#include <cmath>

namespace rlx::ir::reference::kernels {
namespace {

double silu(double x) {
  return x * (1.0 / (1.0 + std::exp(-x))); // the Silu kernel's form
}

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapD = Eigen::Map<const MatrixD>;

} // namespace

RLX_REFERENCE_KERNEL(SwiGlu) {
  auto g = load_f64(in[0]);
  auto u = load_f64(in[1]);
  std::vector<double> r(g.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    r[i] = silu(g[i]) * u[i];
  return store_f64(out, r);
}

RLX_REFERENCE_KERNEL(SwiGluMatMul) {
  const Sizes sw = in[1].shape().sizes();
  const std::int64_t n = sw[0], k = sw[1];
  const Sizes sx = in[0].shape().sizes();
  const std::int64_t m = product(sx, 0, sx.size() - 1); // rows of x (every dim but the last)
  auto x = load_f64(in[0]);
  auto wg = load_f64(in[1]);
  auto wu = load_f64(in[2]);
  MapD X(x.data(), m, k), G(wg.data(), n, k), U(wu.data(), n, k);
  MatrixD pg = X * G.transpose();
  MatrixD pu = X * U.transpose();
  // Round each product to the node's dtype, as the MatMul nodes of the decomposition do.
  const Shape flat(std::vector<Dim>{Dim(m * n)}, out.dtype);
  auto gr = load_f64(store_f64(flat, std::span<const double>(pg.data(), pg.size())));
  auto ur = load_f64(store_f64(flat, std::span<const double>(pu.data(), pu.size())));
  std::vector<double> r(gr.size());
  for (std::size_t i = 0; i < gr.size(); ++i)
    r[i] = silu(gr[i]) * ur[i];
  return store_f64(out, r);
}

} // namespace rlx::ir::reference::kernels
