// solve.cpp: DenseSolve (A x = b) with Eigen's partial-pivoting LU, one batch matrix after
// another. The decomposition is sized at compile time, so solving reuses its storage.
#include "../lower.hpp"
#include "rlx/ir/error.hpp"

#include <Eigen/Dense>

namespace rlx::cpu {
namespace {

template <class T> class SolveKernel final : public Kernel {
public:
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  explicit SolveKernel(const LowerContext& c)
      : a_(reinterpret_cast<const T*>(c.src(0))), b_(reinterpret_cast<const T*>(c.src(1))),
        x_(reinterpret_cast<T*>(c.dst())), what_(c.what()) {
    auto sa = c.in(0).sizes();
    std::size_t r = sa.size();
    n_ = sa[r - 1];
    k_ = c.in(1).rank() == r - 1 ? 1 : c.in(1).sizes().back();
    batches_ = 1;
    for (std::size_t i = 0; i + 2 < r; ++i)
      batches_ *= sa[i];
    lu_ = Eigen::PartialPivLU<Matrix>(n_);
  }
  void run(ExecContext&) override {
    for (std::int64_t i = 0; i < batches_; ++i) {
      Eigen::Map<const Matrix> a(a_ + i * n_ * n_, n_, n_);
      Eigen::Map<const Matrix> b(b_ + i * n_ * k_, n_, k_);
      Eigen::Map<Matrix> x(x_ + i * n_ * k_, n_, k_);
      lu_.compute(a);
      for (std::int64_t d = 0; d < n_; ++d)
        if (lu_.matrixLU()(d, d) == T{0})
          throw Error("rlx-cpu: " + what_ + ": matrix " + std::to_string(i) + " is singular");
      x.noalias() = lu_.solve(b);
    }
  }

private:
  const T* a_;
  const T* b_;
  T* x_;
  std::int64_t n_ = 0, k_ = 1, batches_ = 1;
  Eigen::PartialPivLU<Matrix> lu_;
  std::string what_;
};

std::unique_ptr<Kernel> make_solve(const LowerContext& c) {
  if (c.out().dtype == ir::DType::f32)
    return std::make_unique<SolveKernel<float>>(c);
  if (c.out().dtype == ir::DType::f64)
    return std::make_unique<SolveKernel<double>>(c);
  throw Error("rlx-cpu: " + c.what() + ": dense_solve runs f32 and f64");
}

constexpr KernelImpl kSolve[] = {{"eigen", accept_all, nullptr, make_solve}};

} // namespace

std::span<const KernelImpl> dense_solve_impls() {
  return kSolve;
}

} // namespace rlx::cpu
