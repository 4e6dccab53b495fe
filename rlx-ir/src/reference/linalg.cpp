// linalg.cpp: reference kernels of MatMul, DotGeneral and DenseSolve (Eigen in double precision;
// plain wrapping loops for integers).
#include "kernels.hpp"

#include <Eigen/Dense>

namespace rlx::ir::reference::kernels {
namespace {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapD = Eigen::Map<const MatrixD>;

/// c[M, N] = op(a) op(b) for row-major matrices; a is [M, K] (or [K, M] when \p ta), b is [K, N]
/// (or [N, K] when \p tb). Doubles through Eigen; integers with wrapping loops.
template <ComputeType T>
void matmul_block(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n,
                  bool ta, bool tb) {
  if constexpr (std::is_same_v<T, double>) {
    MapD A(a, ta ? k : m, ta ? m : k);
    MapD B(b, tb ? n : k, tb ? k : n);
    Eigen::Map<MatrixD> C(c, m, n);
    if (ta && tb)
      C.noalias() = A.transpose() * B.transpose();
    else if (ta)
      C.noalias() = A.transpose() * B;
    else if (tb)
      C.noalias() = A * B.transpose();
    else
      C.noalias() = A * B;
  } else {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          T x = ta ? a[p * m + i] : a[i * k + p];
          T y = tb ? b[j * k + p] : b[p * n + j];
          acc = wrap_add(acc, wrap_mul(x, y));
        }
        c[i * n + j] = acc;
      }
  }
}

/// Batched [Bt, M, K] x [Bt, K, N] on flat row-major vectors.
template <ComputeType T>
std::vector<T> batched_matmul(const std::vector<T>& a, const std::vector<T>& b, std::int64_t bt,
                              std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<T> c(static_cast<std::size_t>(bt * m * n));
  for (std::int64_t i = 0; i < bt; ++i)
    matmul_block<T>(a.data() + i * m * k, b.data() + i * k * n, c.data() + i * m * n, m, k, n,
                    false, false);
  return c;
}

} // namespace

RLX_REFERENCE_KERNEL(MatMul) {
  const auto& attrs = node.attr<MatMulAttrs>();
  Sizes sa = in[0].shape().sizes(), sb = in[1].shape().sizes(), so = out.sizes();
  std::size_t ra = sa.size(), ro = so.size();
  std::int64_t m = so[ro - 2], n = so[ro - 1];
  std::int64_t k = attrs.transpose_a ? sa[ra - 2] : sa[ra - 1];
  Sizes batch(so.begin(), so.end() - 2);
  // Batch offsets (in matrices) of each operand for every output batch index.
  auto oa = broadcast_offsets(Sizes(sa.begin(), sa.end() - 2), batch);
  auto ob = broadcast_offsets(Sizes(sb.begin(), sb.end() - 2), batch);
  return with_compute_type(out.dtype, [&]<class T>(T) {
    auto va = load<T>(in[0]);
    auto vb = load<T>(in[1]);
    std::vector<T> c(static_cast<std::size_t>(product(so)));
    for (std::size_t i = 0; i < oa.size(); ++i)
      matmul_block<T>(va.data() + oa[i] * m * k, vb.data() + ob[i] * k * n,
                      c.data() + static_cast<std::int64_t>(i) * m * n, m, k, n, attrs.transpose_a,
                      attrs.transpose_b);
    return store<T>(out, c);
  });
}

RLX_REFERENCE_KERNEL(DotGeneral) {
  // Permute lhs to [batch, free, contracting] and rhs to [batch, contracting, free], then run a
  // batched matmul; the result [batch, lhs free, rhs free] is the output's row-major order.
  const auto& d = node.attr<DotGeneralAttrs>();
  auto arrange = [](const Tensor& t, const Sizes& batch, const Sizes& contract, bool lhs,
                    std::int64_t& free_size) {
    std::size_t r = t.shape().rank();
    std::vector<char> used(r, 0);
    for (auto x : batch)
      used[static_cast<std::size_t>(x)] = 1;
    for (auto x : contract)
      used[static_cast<std::size_t>(x)] = 1;
    Sizes free;
    for (std::size_t i = 0; i < r; ++i)
      if (!used[i])
        free.push_back(static_cast<std::int64_t>(i));
    Sizes perm = batch;
    const Sizes& first = lhs ? free : contract;
    const Sizes& second = lhs ? contract : free;
    perm.insert(perm.end(), first.begin(), first.end());
    perm.insert(perm.end(), second.begin(), second.end());
    Sizes sizes = t.shape().sizes();
    free_size = 1;
    for (auto f : free)
      free_size *= sizes[static_cast<std::size_t>(f)];
    return permute(t, perm);
  };
  std::int64_t m = 1, n = 1;
  Tensor a = arrange(in[0], d.lhs_batch, d.lhs_contracting, true, m);
  Tensor b = arrange(in[1], d.rhs_batch, d.rhs_contracting, false, n);
  Sizes sa = in[0].shape().sizes();
  std::int64_t bt = 1, k = 1;
  for (auto x : d.lhs_batch)
    bt *= sa[static_cast<std::size_t>(x)];
  for (auto x : d.lhs_contracting)
    k *= sa[static_cast<std::size_t>(x)];
  return with_compute_type(out.dtype, [&]<class T>(T) {
    auto c = batched_matmul<T>(load<T>(a), load<T>(b), bt, m, k, n);
    return store<T>(out, c);
  });
}

RLX_REFERENCE_KERNEL(DenseSolve) {
  Sizes sa = in[0].shape().sizes(), sb = in[1].shape().sizes();
  std::size_t r = sa.size();
  std::int64_t n = sa[r - 1];
  bool vector_rhs = sb.size() == r - 1;
  std::int64_t k = vector_rhs ? 1 : sb[r - 1];
  std::int64_t batches = product(sa, 0, r - 2);
  auto va = load_f64(in[0]);
  auto vb = load_f64(in[1]);
  std::vector<double> x(vb.size());
  for (std::int64_t i = 0; i < batches; ++i) {
    MapD A(va.data() + i * n * n, n, n);
    MapD B(vb.data() + i * n * k, n, k);
    Eigen::FullPivLU<MatrixD> lu(A);
    if (!lu.isInvertible())
      fail("dense_solve: matrix " + std::to_string(i) + " of " + in[0].shape().str() +
           " is singular (rank " + std::to_string(lu.rank()) + " < " + std::to_string(n) + ")");
    Eigen::Map<MatrixD>(x.data() + i * n * k, n, k) = lu.solve(B);
  }
  return store_f64(out, x);
}

} // namespace rlx::ir::reference::kernels
