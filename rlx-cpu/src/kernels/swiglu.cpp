// swiglu.cpp: the transformer fused ops SwiGlu (silu(gate) * up in one vectorised pass) and
// SwiGluMatMul (the gate GEMM with oneDNN's swish post-op into planned scratch, the up GEMM into
// the result, then result *= scratch in place: two GEMM calls and one pass over [M, N] instead of
// two GEMMs, a Silu and a Mul kernel, and two [M, N] buffers fewer round trips; on the packed GEMM
// with weights packed once, one product computing each gate tile beside its up tile).
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../matmul.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>

namespace rlx::cpu {
namespace {

constexpr std::int64_t kGrain = kTaskWork / 8; // an element costs about an exp

template <class T> T silu_of(T x) {
  if constexpr (std::is_same_v<T, float>)
    return simd::silu(x);
  else
    return x / (T{1} + std::exp(-x));
}

/// out[i] = silu(gate[i]) * up[i].
template <class T> class SwiGluKernel final : public Kernel {
public:
  SwiGluKernel(const T* g, const T* u, T* y, std::int64_t n) : g_(g), u_(u), y_(y), n_(n) {}
  void run(ExecContext& ctx) override {
    parallel_for(ctx, n_, kGrain, [&](std::int64_t b, std::int64_t e) {
      const T* g = g_;
      const T* u = u_;
      T* y = y_;
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i)
        y[i] = silu_of(g[i]) * u[i];
    });
  }

private:
  const T *g_, *u_;
  T* y_;
  std::int64_t n_;
};

bool accepts_float(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 || n.out().dtype == ir::DType::f64;
}

std::unique_ptr<Kernel> make_swiglu(const LowerContext& c) {
  const std::int64_t n = c.out().numel();
  if (c.out().dtype == ir::DType::f32)
    return std::make_unique<SwiGluKernel<float>>(reinterpret_cast<const float*>(c.src(0)),
                                                 reinterpret_cast<const float*>(c.src(1)),
                                                 reinterpret_cast<float*>(c.dst()), n);
  return std::make_unique<SwiGluKernel<double>>(reinterpret_cast<const double*>(c.src(0)),
                                                reinterpret_cast<const double*>(c.src(1)),
                                                reinterpret_cast<double*>(c.dst()), n);
}

// ---- SwiGluMatMul -------------------------------------------------------------------------------

/// The two GEMMs of a SwiGluMatMul node: x [.., K] against w [N, K] (transpose_b), or against
/// w [K, N] with weights_kn (the layout of ONNX exports: no transposed copy), the gate one with
/// the silu epilogue. The weights are packed once (oneDNN) when they are Params / Constants.
MatMulSpec gemm_spec(const NodeView& n, std::size_t w, bool gate) {
  MatMulSpec s;
  s.a_sizes = n.in(0).sizes();
  s.out_sizes = n.out().sizes();
  s.transpose_b = !n.node().attr<ir::SwiGluMatMulAttrs>().weights_kn;
  s.dtype = n.out().dtype;
  s.act = gate ? ir::Activation::silu : ir::Activation::none;
  set_weight_operand(s, n, w);
  return s;
}

constexpr std::int64_t kAlign = 64;
std::int64_t aligned(std::int64_t b) {
  return (b + kAlign - 1) / kAlign * kAlign;
}

/// Scratch layout: [gate product M x N][gate GEMM scratch][up GEMM scratch].
struct DualScratch {
  std::int64_t gate = 0, gate_gemm = 0, up_gemm = 0;
  std::int64_t total() const { return gate + gate_gemm + up_gemm; }
};

/// Whether the packed GEMM runs both products as one (packed_pair_accepts: weights packed once).
bool packed_pair(const MatMulSpec& g, const MatMulSpec& u, GemmImpl impl) {
  return impl == GemmImpl::packed && packed_pair_accepts(g, u);
}

DualScratch dual_scratch(const NodeView& n) {
  DualScratch d;
  MatMulSpec g = gemm_spec(n, 1, true), u = gemm_spec(n, 2, false);
  const GemmImpl impl = choose_gemm(g, n.opts, n.threads);
  if (packed_pair(g, u, impl)) { // no gate buffer: the pair's own scratch only
    d.gate_gemm = aligned(packed_pair_scratch_bytes(u));
    return d;
  }
  d.gate = aligned(n.out().bytes());
  d.gate_gemm = aligned(matmul_scratch_bytes(g, impl));
  d.up_gemm = aligned(matmul_scratch_bytes(u, impl));
  return d;
}

std::int64_t swiglu_matmul_scratch(const NodeView& n) {
  return dual_scratch(n).total();
}

/// Runs the gate GEMM (silu epilogue) into scratch, the up GEMM into the result, then
/// result *= scratch.
template <class T> class SwiGluMatMulKernel final : public Kernel {
public:
  SwiGluMatMulKernel(std::unique_ptr<Kernel> gate, std::unique_ptr<Kernel> up, const T* g, T* y,
                     std::int64_t n)
      : gate_(std::move(gate)), up_(std::move(up)), g_(g), y_(y), n_(n) {}
  void run(ExecContext& ctx) override {
    gate_->run(ctx);
    up_->run(ctx);
    parallel_for(ctx, n_, kTaskWork, [&](std::int64_t b, std::int64_t e) {
      const T* g = g_;
      T* y = y_;
#pragma omp simd
      for (std::int64_t i = b; i < e; ++i)
        y[i] *= g[i];
    });
  }

private:
  std::unique_ptr<Kernel> gate_, up_;
  const T* g_;
  T* y_;
  std::int64_t n_;
};

std::unique_ptr<Kernel> make_swiglu_matmul(const LowerContext& c) {
  const DualScratch d = dual_scratch(c);
  std::byte* scratch = c.scratch(d.total());
  MatMulSpec g = gemm_spec(c, 1, true), u = gemm_spec(c, 2, false);
  const GemmImpl impl = choose_gemm(g, c.opts, c.threads);
  g.a = u.a = c.src(0);
  g.b = c.src(1);
  u.b = c.src(2);
  g.out = scratch;
  u.out = c.dst();
  g.packer = u.packer = c.packer;
  if (packed_pair(g, u, impl)) {
    auto k = make_packed_pair(g, u, scratch);
    const std::string choice = gemm_choice_note(g, c.opts, c.threads);
    k->set_note(choice.empty() ? k->note() : choice + "; " + k->note());
    return k;
  }
  auto gk = make_matmul_kernel(g, impl, scratch + d.gate);
  gk->set_note(gemm_choice_note(g, c.opts, c.threads));
  auto uk = make_matmul_kernel(u, impl, scratch + d.gate + d.gate_gemm);
  const std::int64_t n = c.out().numel();
  std::unique_ptr<Kernel> k;
  std::string note = gk->note();
  if (c.out().dtype == ir::DType::f32)
    k = std::make_unique<SwiGluMatMulKernel<float>>(std::move(gk), std::move(uk),
                                                    reinterpret_cast<const float*>(scratch),
                                                    reinterpret_cast<float*>(c.dst()), n);
  else
    k = std::make_unique<SwiGluMatMulKernel<double>>(std::move(gk), std::move(uk),
                                                     reinterpret_cast<const double*>(scratch),
                                                     reinterpret_cast<double*>(c.dst()), n);
  k->set_note(std::move(note));
  return k;
}

/// Which GEMM runs the two products (the listing names it, and the executable sizes its pool).
bool accepts_onednn_pair(const NodeView& n) {
  return accepts_float(n) &&
         choose_gemm(gemm_spec(n, 1, true), n.opts, n.threads) == GemmImpl::onednn;
}
bool accepts_openblas_pair(const NodeView& n) {
  return accepts_float(n) &&
         choose_gemm(gemm_spec(n, 1, true), n.opts, n.threads) == GemmImpl::openblas;
}

bool accepts_packed_pair(const NodeView& n) {
  return accepts_float(n) &&
         choose_gemm(gemm_spec(n, 1, true), n.opts, n.threads) == GemmImpl::packed;
}

constexpr KernelImpl kSwiGlu[] = {{"tbb", accepts_float, nullptr, make_swiglu}};
constexpr KernelImpl kSwiGluMatMul[] = {
    {"onednn", accepts_onednn_pair, swiglu_matmul_scratch, make_swiglu_matmul},
    {"openblas", accepts_openblas_pair, swiglu_matmul_scratch, make_swiglu_matmul},
    {"packed", accepts_packed_pair, swiglu_matmul_scratch, make_swiglu_matmul}};

} // namespace

std::span<const KernelImpl> swiglu_impls() {
  return kSwiGlu;
}
std::span<const KernelImpl> swiglu_matmul_impls() {
  return kSwiGluMatMul;
}

} // namespace rlx::cpu
