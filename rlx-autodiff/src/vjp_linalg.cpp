// vjp_linalg.cpp: VJP rules of MatMul, DotGeneral and DenseSolve.
#include "helpers.hpp"
#include "table.hpp"

#include <algorithm>
#include <numeric>

namespace rlx::autodiff::detail {
namespace {

using ir::OpKind;
using Grads = std::vector<NodeId>;
using Axes = std::vector<std::int64_t>;

/// \p x [.., R, C] of static rank >= 3 viewed as [rows, C] (a Reshape); invalid when a leading dim
/// is symbolic (a reshape cannot multiply symbols).
NodeId rows_view(Builder& b, NodeId x) {
  const Shape& s = b.shape(x);
  if (s.rank() < 3 || !s.is_static())
    return NodeId{};
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < s.rank(); ++i)
    rows *= s[i].size();
  return b.reshape(x, {ir::Dim(rows), s[s.rank() - 1]});
}

Grads matmul(VjpContext& c) {
  // C = op(A) op(B):  d op(A) = up op(B)ᵀ,  d op(B) = op(A)ᵀ up; a transposed operand takes the
  // transpose of that. Broadcast batch dims are summed back.
  auto& b = c.b;
  const auto& a = c.node.attr<ir::MatMulAttrs>();
  NodeId A = c.in[0], B = c.in[1];
  Grads g(2);
  // A weight B [K, N] (or [N, K]) under a batched A [.., M, K]: the batch is part of the
  // contraction, so dB is one GEMM over the flattened rows (A_rows [R, K], up_rows [R, N]) rather
  // than a batched product [.., K, N] summed over the batch afterwards.
  const bool weight_grad = c.needs[1] && !a.transpose_a && b.shape(B).rank() == 2;
  const NodeId a_rows = weight_grad ? rows_view(b, A) : NodeId{};
  const NodeId up_rows = a_rows.valid() ? rows_view(b, c.up) : NodeId{};
  if (c.needs[0]) {
    NodeId d = a.transpose_a ? b.matmul(B, c.up, a.transpose_b, true)
                             : b.matmul(c.up, B, false, !a.transpose_b);
    g[0] = unbroadcast(b, d, b.shape(A));
  }
  if (c.needs[1] && up_rows.valid()) {
    g[1] = a.transpose_b ? b.matmul(up_rows, a_rows, true, false)  // [N, K] = up_rowsᵀ A_rows
                         : b.matmul(a_rows, up_rows, true, false); // [K, N] = A_rowsᵀ up_rows
  } else if (c.needs[1]) {
    NodeId d = a.transpose_b ? b.matmul(c.up, A, true, a.transpose_a)
                             : b.matmul(A, c.up, !a.transpose_a, false);
    g[1] = unbroadcast(b, d, b.shape(B));
  }
  return g;
}

/// Dims of rank \p rank not listed in \p x or \p y, ascending (the free dims of a DotGeneral side).
Axes free_dims(std::size_t rank, const Axes& x, const Axes& y) {
  Axes r;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(rank); ++i)
    if (std::find(x.begin(), x.end(), i) == x.end() && std::find(y.begin(), y.end(), i) == y.end())
      r.push_back(i);
  return r;
}

/// Gradient of one DotGeneral side. With the output laid out [batch, lhs free, rhs free], the
/// gradient of side X (batch X_b, contracting X_c, free X_f) against the other side Y is
/// dot_general(up, Y) contracting up's Y-free block with Y's free dims, batched over the batch
/// block; the result [batch, X_f, Y's contracting dims ascending] is permuted into X's layout.
NodeId dot_side(Builder& b, NodeId up, NodeId other, const Shape& x, std::int64_t nb,
                std::int64_t up_free_at, std::int64_t up_free_n, const Axes& x_batch,
                const Axes& x_contract, const Axes& x_free, const Axes& y_batch,
                const Axes& y_contract, const Axes& y_free) {
  ir::DotGeneralAttrs d;
  for (std::int64_t i = 0; i < nb; ++i)
    d.lhs_batch.push_back(i);
  d.rhs_batch = y_batch;
  for (std::int64_t i = 0; i < up_free_n; ++i)
    d.lhs_contracting.push_back(up_free_at + i);
  d.rhs_contracting = y_free;
  NodeId r = b.dot_general(up, other, d);
  // result axis -> X axis
  Axes to_x;
  for (auto a : x_batch)
    to_x.push_back(a);
  for (auto a : x_free)
    to_x.push_back(a);
  Axes y_c_sorted = y_contract;
  std::sort(y_c_sorted.begin(), y_c_sorted.end());
  for (auto yc : y_c_sorted) {
    auto k = std::find(y_contract.begin(), y_contract.end(), yc) - y_contract.begin();
    to_x.push_back(x_contract[static_cast<std::size_t>(k)]);
  }
  Axes perm(x.rank());
  for (std::size_t r_ax = 0; r_ax < to_x.size(); ++r_ax)
    perm[static_cast<std::size_t>(to_x[r_ax])] = static_cast<std::int64_t>(r_ax);
  Axes id(x.rank());
  std::iota(id.begin(), id.end(), 0);
  return perm == id ? r : b.transpose(r, perm);
}

Grads dot_general(VjpContext& c) {
  auto& b = c.b;
  const auto& a = c.node.attr<ir::DotGeneralAttrs>();
  const Shape xa = b.shape(c.in[0]);
  const Shape xb = b.shape(c.in[1]);
  Axes lf = free_dims(xa.rank(), a.lhs_batch, a.lhs_contracting);
  Axes rf = free_dims(xb.rank(), a.rhs_batch, a.rhs_contracting);
  auto nb = static_cast<std::int64_t>(a.lhs_batch.size());
  auto nlf = static_cast<std::int64_t>(lf.size()), nrf = static_cast<std::int64_t>(rf.size());
  Grads g(2);
  if (c.needs[0])
    g[0] = dot_side(b, c.up, c.in[1], xa, nb, nb + nlf, nrf, a.lhs_batch, a.lhs_contracting, lf,
                    a.rhs_batch, a.rhs_contracting, rf);
  if (c.needs[1])
    g[1] = dot_side(b, c.up, c.in[0], xb, nb, nb, nlf, a.rhs_batch, a.rhs_contracting, rf,
                    a.lhs_batch, a.lhs_contracting, lf);
  return g;
}

Grads dense_solve(VjpContext& c) {
  // x = A⁻¹ b:  db = A⁻ᵀ up,  dA = -db xᵀ (implicit-function rule)
  auto& b = c.b;
  NodeId A = c.in[0], x = c.self;
  const Shape as = b.shape(A);
  Axes perm(as.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[as.rank() - 1], perm[as.rank() - 2]);
  NodeId db = b.dense_solve(b.transpose(A, perm), c.up);
  Grads g(2);
  if (c.needs[1])
    g[1] = db;
  if (c.needs[0]) {
    if (b.shape(x).rank() == as.rank()) {
      g[0] = b.neg(b.matmul(db, x, false, true));
    } else {
      std::vector<ir::Dim> col = b.shape(x).dims, row = b.shape(x).dims;
      col.push_back(ir::Dim(1));
      row.insert(row.end() - 1, ir::Dim(1));
      g[0] = b.neg(b.mul(b.reshape(db, col), b.reshape(x, row)));
    }
  }
  return g;
}

} // namespace

void add_linalg_rules(VjpTable& t) {
  set_rule(t, OpKind::MatMul, matmul);
  set_rule(t, OpKind::DotGeneral, dot_general);
  set_rule(t, OpKind::DenseSolve, dense_solve);
}

} // namespace rlx::autodiff::detail
