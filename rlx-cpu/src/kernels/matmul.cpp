// matmul.cpp: MatMul on oneDNN (f32, primitive created at compile time, transposes as strides,
// batch broadcasting, bias + activation post-ops), OpenBLAS (f32 behind the option, and f64), rlx's
// packed GEMM (f32, kernels/gemm_packed.cpp), or plain loops (integers).
#include "../matmul.hpp"
#include "../compile_clock.hpp"

#include "../dtypes.hpp"
#include "../epilogue.hpp"
#include "../gemm_choice.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
#include "../unary_math.hpp"
#include "../weight_concat.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/size.hpp"

#include <cblas.h>

namespace rlx::cpu {

void set_weight_operand(MatMulSpec& s, const NodeView& n, std::size_t w) {
  s.b_sizes = n.in(w).sizes();
  s.b_source = n.node().inputs[w];
  // Weights (a 2-D Param or Constant, or a Concat of Params: the packed Q / K / V weight, kept in
  // the weight region) are packed once, into oneDNN's preferred layout or the packed GEMM's panels.
  const ir::OpKind bop = n.graph.node(s.b_source).op;
  s.pack_b = s.dtype == ir::DType::f32 && s.b_sizes.size() == 2 &&
             (bop == ir::OpKind::Param || bop == ir::OpKind::Constant ||
              is_weight_concat(n.graph, s.b_source));
  s.threads = n.threads;
}

std::vector<std::int64_t> batch_offsets(const std::vector<std::int64_t>& batch,
                                        const std::vector<std::int64_t>& out, std::int64_t matrix) {
  std::vector<std::int64_t> strides(batch.size(), 0);
  std::int64_t s = matrix;
  for (std::size_t d = batch.size(); d-- > 0;) {
    strides[d] = batch[d] == 1 ? 0 : s;
    s *= batch[d];
  }
  std::int64_t total = 1;
  for (auto d : out)
    total *= d;
  std::vector<std::int64_t> offs(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t rem = i, off = 0;
    for (std::size_t d = out.size(); d-- > 0;) {
      off += (rem % out[d]) * strides[d];
      rem /= out[d];
    }
    offs[static_cast<std::size_t>(i)] = off;
  }
  return offs;
}

namespace {

/// The shape of a (batched, broadcast) matrix product.
struct Geometry {
  std::vector<std::int64_t> batch_out, batch_a, batch_b; ///< equal ranks (padded with 1s)
  std::int64_t m = 0, n = 0, k = 0;
  /// b has no batch and a is not transposed: the whole product is one [batches * M, K] GEMM.
  bool flat = false;
  std::int64_t batches() const {
    std::int64_t p = 1;
    for (auto d : batch_out)
      p *= d;
    return p;
  }
};

Geometry geometry(const MatMulSpec& s) {
  Geometry g;
  std::size_t ra = s.a_sizes.size(), rb = s.b_sizes.size(), ro = s.out_sizes.size();
  if (ra < 2 || rb < 2 || ro < 2)
    throw Error("rlx-cpu: matmul operands need rank >= 2");
  g.m = s.out_sizes[ro - 2];
  g.n = s.out_sizes[ro - 1];
  g.k = s.transpose_a ? s.a_sizes[ra - 2] : s.a_sizes[ra - 1];
  g.batch_out.assign(s.out_sizes.begin(), s.out_sizes.end() - 2);
  auto pad = [&](const std::vector<std::int64_t>& sz) {
    std::vector<std::int64_t> b(g.batch_out.size() - (sz.size() - 2), 1);
    b.insert(b.end(), sz.begin(), sz.end() - 2);
    return b;
  };
  g.batch_a = pad(s.a_sizes);
  g.batch_b = pad(s.b_sizes);
  bool b_single = true;
  for (auto d : g.batch_b)
    b_single = b_single && d == 1;
  g.flat = b_single && !s.transpose_a;
  return g;
}

/// Row-major strides of \p sizes.
std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> st(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    st[i - 1] = st[i] * sizes[i];
  return st;
}

// ---- oneDNN ------------------------------------------------------------------------------------

struct OnednnMatmul {
  dnnl::memory::desc a, b, bias, out;
  dnnl::memory::desc b_packed; ///< the primitive's chosen weights layout (when pack_b)
  dnnl::matmul::primitive_desc pd;
};

/// The memory descriptor of a (batched) operand: logical dims batch + {rows, cols}, with the
/// transposed operand expressed as swapped strides over its row-major storage (no copy).
dnnl::memory::desc operand_md(const std::vector<std::int64_t>& batch, std::int64_t rows,
                              std::int64_t cols, bool transposed) {
  std::vector<std::int64_t> phys = batch;
  phys.push_back(transposed ? cols : rows);
  phys.push_back(transposed ? rows : cols);
  auto st = strides_of(phys);
  std::vector<std::int64_t> dims = batch;
  dims.push_back(rows);
  dims.push_back(cols);
  if (transposed)
    std::swap(st[st.size() - 1], st[st.size() - 2]);
  return onednn::strided_md(dims, st);
}

OnednnMatmul onednn_matmul(const MatMulSpec& s) {
  // oneDNN is only asked for products whose operands this machine can hold: on AVX-512 its
  // primitive creation divides by zero (SIGFPE) for a product of 2^48 rows instead of failing.
  for (const auto* sizes : {&s.a_sizes, &s.b_sizes, &s.out_sizes})
    ir::check_allocation(ir::checked_mul(ir::checked_product(*sizes, "a matmul operand's elements"),
                                         static_cast<std::int64_t>(ir::dtype_size(s.dtype)),
                                         "a matmul operand's bytes"),
                         "rlx-cpu: a matmul operand");
  Geometry g = geometry(s);
  OnednnMatmul r;
  std::vector<std::int64_t> ones;
  if (g.flat) {
    std::int64_t rows = g.batches() * g.m;
    r.a = operand_md({}, rows, g.k, false);
    r.b = operand_md({}, g.k, g.n, s.transpose_b);
    r.out = operand_md({}, rows, g.n, false);
    ones = {1};
  } else {
    r.a = operand_md(g.batch_a, g.m, g.k, s.transpose_a);
    r.b = operand_md(g.batch_b, g.k, g.n, s.transpose_b);
    r.out = operand_md(g.batch_out, g.m, g.n, false);
    ones.assign(g.batch_out.size() + 1, 1);
  }
  dnnl::primitive_attr attr;
  if (auto op = activation_op(s.act)) {
    auto alg = onednn::eltwise_alg(*op);
    if (!alg)
      throw Error("rlx-cpu: matmul epilogue activation has no oneDNN algorithm");
    dnnl::post_ops po;
    po.append_eltwise(1.0f, alg->alg, alg->alpha, alg->beta);
    attr.set_post_ops(po);
  }
  attr = onednn::user_scratchpad(attr);
  // Packed weights: the primitive picks the layout ("any"); the executable keeps a packed copy.
  bool pack = s.pack_b && g.flat;
  dnnl::memory::desc w =
      pack ? dnnl::memory::desc({g.k, g.n}, onednn::dt::f32, onednn::tag::any) : r.b;
  if (s.has_bias || s.bias) {
    ones.push_back(g.n);
    r.bias = onednn::plain_md(ones);
    r.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(r.a, w, r.bias, r.out), attr,
                                        onednn::engine());
  } else {
    r.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(r.a, w, r.out), attr, onednn::engine());
  }
  r.b_packed = pack ? r.pd.weights_desc() : r.b;
  return r;
}

std::unique_ptr<Kernel> make_onednn(const MatMulSpec& s, std::byte* scratch) {
  OnednnMatmul m;
  dnnl::matmul prim;
  {
    PhaseTimer timer(CompilePhase::primitives);
    m = onednn_matmul(s);
    prim = dnnl::matmul(m.pd);
  }
  onednn::BoundPrimitive p{std::move(prim)};
  p.bind(DNNL_ARG_SRC, m.a, const_cast<std::byte*>(s.a));
  if (m.b_packed == m.b) {
    p.bind(DNNL_ARG_WEIGHTS, m.b, const_cast<std::byte*>(s.b));
  } else {
    if (!s.packer)
      throw Error("rlx-cpu: a packed-weight matmul needs a weight packer");
    p.bind(DNNL_ARG_WEIGHTS, m.b_packed, s.packer->packed(s.b_source, s.b, m.b, m.b_packed));
  }
  if (s.has_bias && !s.bias)
    throw Error("rlx-cpu: a matmul bias without an address");
  if (s.bias)
    p.bind(DNNL_ARG_BIAS, m.bias, const_cast<std::byte*>(s.bias));
  p.bind(DNNL_ARG_DST, m.out, s.out);
  if (onednn::scratchpad_bytes(m.pd) > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, m.pd.scratchpad_desc(), scratch);
  Geometry g = geometry(s);
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p),
                                                   g.batches() * g.m * g.n * g.k); // multiply-adds
}

// ---- epilogue for the non-oneDNN paths
// -----------------------------------------------------------

/// out[r, :] = act(out[r, :] + bias) over \p rows rows of \p n, in parallel (after the loop GEMM).
template <class T>
void epilogue(ExecContext& ctx, T* out, std::int64_t rows, std::int64_t n, const T* bias,
              ir::Activation act) {
  auto op = activation_op(act);
  if (!bias && !op)
    return;
  parallel_for(ctx, rows, grain_for(n), [&](std::int64_t b, std::int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      bias_act_f32(out + b * n, e - b, n, n, bias, act);
      return;
    }
    for (std::int64_t r = b; r < e; ++r) {
      T* y = out + r * n;
      if (bias)
        for (std::int64_t j = 0; j < n; ++j)
          y[j] += bias[j];
      if (op)
        with_unary<T>(*op, [&](auto f) {
          for (std::int64_t j = 0; j < n; ++j)
            y[j] = f(y[j]);
        });
    }
  });
}

// ---- OpenBLAS ----------------------------------------------------------------------------------

/// OpenBLAS on one thread per call, called from tasks of the executable's TBB pool: the product is
/// split into column blocks (and batch matrices), one sgemm / dgemm per task, and each task applies
/// the bias + activation epilogue to its block while it is in cache. So OpenBLAS's own pthread
/// pool never runs (it spins between calls, holding the cores the other pools need), no handoff
/// between pools happens, and the epilogue is not a second pass over the result.
template <class T> class BlasMatmul final : public Kernel {
public:
  explicit BlasMatmul(const MatMulSpec& s) : s_(s), g_(geometry(s)) {
    if (!g_.flat) {
      a_off_ = batch_offsets(g_.batch_a, g_.batch_out, g_.m * g_.k);
      b_off_ = batch_offsets(g_.batch_b, g_.batch_out, g_.k * g_.n);
    }
  }
  void run(ExecContext& ctx) override {
    const T* a = reinterpret_cast<const T*>(s_.a);
    const T* b = reinterpret_cast<const T*>(s_.b);
    T* c = reinterpret_cast<T*>(s_.out);
    const T* bias = reinterpret_cast<const T*>(s_.bias);
    const auto op = activation_op(s_.act);
    const std::int64_t n = g_.n, k = g_.k;
    const std::int64_t mats = g_.flat ? 1 : static_cast<std::int64_t>(a_off_.size());
    const std::int64_t rows = g_.flat ? g_.batches() * g_.m : g_.m;
    // Tasks: enough for every thread (column blocks of >= 16 columns when there are fewer matrices
    // than threads); one task when the product is small (waking a thread costs more).
    std::int64_t blocks = 1;
    if (ctx.threads > 1 && mats < ctx.threads && mats * rows * n * k >= kSplitWork)
      blocks = std::min<std::int64_t>((ctx.threads + mats - 1) / mats, (n + 15) / 16);
    const std::int64_t width = ((n + blocks - 1) / blocks + 15) / 16 * 16;
    blocks = (n + width - 1) / width;
    const auto ta = s_.transpose_a ? CblasTrans : CblasNoTrans;
    const auto tb = s_.transpose_b ? CblasTrans : CblasNoTrans;
    const auto lda = static_cast<blasint>(s_.transpose_a ? g_.m : k);
    const auto ldb = static_cast<blasint>(s_.transpose_b ? k : n);
    const std::int64_t grain = mats * rows * n * k >= kSplitWork ? 1 : mats * blocks;
    parallel_for(ctx, mats * blocks, grain, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t i = t / blocks, j0 = (t % blocks) * width;
        const std::int64_t cols = std::min(n, j0 + width) - j0;
        const T* x = g_.flat ? a : a + a_off_[static_cast<std::size_t>(i)];
        const T* y = (g_.flat ? b : b + b_off_[static_cast<std::size_t>(i)]) +
                     (s_.transpose_b ? j0 * k : j0);
        T* z = c + i * rows * n + j0;
        if constexpr (std::is_same_v<T, float>)
          cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(rows), static_cast<blasint>(cols),
                      static_cast<blasint>(k), 1.0f, x, lda, y, ldb, 0.0f, z,
                      static_cast<blasint>(n));
        else
          cblas_dgemm(CblasRowMajor, ta, tb, static_cast<blasint>(rows), static_cast<blasint>(cols),
                      static_cast<blasint>(k), 1.0, x, lda, y, ldb, 0.0, z,
                      static_cast<blasint>(n));
        if (!bias && !op)
          continue;
        if constexpr (std::is_same_v<T, float>) { // vectorised for the machine (epilogue.hpp)
          bias_act_f32(z, rows, cols, n, bias ? bias + j0 : nullptr, s_.act);
          continue;
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          T* row = z + r * n;
          if (bias)
            for (std::int64_t j = 0; j < cols; ++j)
              row[j] += bias[j0 + j];
          if (op)
            with_unary<T>(*op, [&](auto f) {
              for (std::int64_t j = 0; j < cols; ++j)
                row[j] = f(row[j]);
            });
        }
      }
    });
  }

private:
  /// Multiply-adds from which a product is split over the threads (as oneDNN primitives).
  static constexpr std::int64_t kSplitWork = 4 * kTaskWork;
  MatMulSpec s_;
  Geometry g_;
  std::vector<std::int64_t> a_off_, b_off_;
};

/// OpenBLAS packs both operands on every call, and its copy of a [K, N] right operand is cheaper
/// than of a transposed [N, K] one (measured on Zen 4 / AVX2, 2 threads, 5-10%: M64 K784 N512
/// 0.677 against 0.713 ms, M128 K768 N3072 8.4 against 9.2 ms of CPU time). So a transposed 2-D
/// weight (Param or Constant) is read from a [K, N] copy kept by the packer, made when the weight
/// is bound, not on every run; it is the same layout oneDNN's gemm picks on AVX2, so both share it.
MatMulSpec blas_weights(MatMulSpec s) {
  Geometry g = geometry(s);
  if (!s.pack_b || !s.packer || !s.transpose_b || !g.flat || s.dtype != ir::DType::f32)
    return s;
  s.b = static_cast<const std::byte*>(s.packer->packed(
      s.b_source, s.b, operand_md({}, g.k, g.n, true), operand_md({}, g.k, g.n, false)));
  s.transpose_b = false;
  return s;
}

// ---- loops -------------------------------------------------------------------------------------

/// Any numeric dtype: accumulation in the compute type (double for floats, wrapping int64 for
/// integers), rows in parallel.
template <class T> class LoopMatmul final : public Kernel {
public:
  explicit LoopMatmul(const MatMulSpec& s) : s_(s), g_(geometry(s)) {
    a_off_ = batch_offsets(g_.batch_a, g_.batch_out, g_.m * g_.k);
    b_off_ = batch_offsets(g_.batch_b, g_.batch_out, g_.k * g_.n);
  }
  void run(ExecContext& ctx) override {
    const T* a = reinterpret_cast<const T*>(s_.a);
    const T* b = reinterpret_cast<const T*>(s_.b);
    T* c = reinterpret_cast<T*>(s_.out);
    std::int64_t m = g_.m, n = g_.n, k = g_.k;
    bool ta = s_.transpose_a, tb = s_.transpose_b;
    using Acc = std::conditional_t<is_float_storage_v<T>, double, std::int64_t>;
    parallel_for(ctx, static_cast<std::int64_t>(a_off_.size()) * m, grain_for(n * k),
                 [&](std::int64_t r0, std::int64_t r1) {
                   for (std::int64_t r = r0; r < r1; ++r) {
                     auto bi = static_cast<std::size_t>(r / m);
                     std::int64_t i = r % m;
                     const T* x = a + a_off_[bi];
                     const T* y = b + b_off_[bi];
                     for (std::int64_t j = 0; j < n; ++j) {
                       Acc acc = 0;
                       for (std::int64_t p = 0; p < k; ++p) {
                         auto xv =
                             static_cast<Acc>(to_compute<T>(ta ? x[p * m + i] : x[i * k + p]));
                         auto yv =
                             static_cast<Acc>(to_compute<T>(tb ? y[j * k + p] : y[p * n + j]));
                         if constexpr (std::is_same_v<Acc, double>)
                           acc += xv * yv;
                         else
                           acc = wrap_add(acc, wrap_mul(xv, yv));
                       }
                       c[r * n + j] = from_compute<T>(static_cast<compute_t<T>>(acc));
                     }
                   }
                 });
    if constexpr (is_float_storage_v<T> && !std::is_same_v<T, ir::f16_t> &&
                  !std::is_same_v<T, ir::bf16_t>)
      epilogue<T>(ctx, c, static_cast<std::int64_t>(a_off_.size()) * m, n,
                  reinterpret_cast<const T*>(s_.bias), s_.act);
  }

private:
  MatMulSpec s_;
  Geometry g_;
  std::vector<std::int64_t> a_off_, b_off_;
};

// ---- the MatMul and MatMulBiasAct ops
// -------------------------------------------------------------------------------

MatMulSpec spec_of(const NodeView& n) {
  MatMulSpec s;
  s.a_sizes = n.in(0).sizes();
  s.b_sizes = n.in(1).sizes();
  s.out_sizes = n.out().sizes();
  if (n.node().op == ir::OpKind::MatMulBiasAct) {
    const auto& a = n.node().attr<ir::MatMulBiasActAttrs>();
    s.transpose_a = a.transpose_a;
    s.transpose_b = a.transpose_b;
    s.act = a.act;
    s.has_bias = n.node().inputs.size() == 3;
  } else {
    const auto& a = n.node().attr<ir::MatMulAttrs>();
    s.transpose_a = a.transpose_a;
    s.transpose_b = a.transpose_b;
  }
  s.dtype = n.out().dtype;
  set_weight_operand(s, n, 1);
  return s;
}

MatMulSpec spec_of(const LowerContext& c) {
  MatMulSpec s = spec_of(static_cast<const NodeView&>(c));
  s.a = c.src(0);
  s.b = c.src(1);
  s.out = c.dst();
  if (s.has_bias)
    s.bias = c.src(2);
  s.packer = c.packer;
  return s;
}

bool accepts_onednn(const NodeView& n) {
  return choose_gemm(spec_of(n), n.opts, n.threads) == GemmImpl::onednn;
}
bool accepts_openblas(const NodeView& n) {
  return choose_gemm(spec_of(n), n.opts, n.threads) == GemmImpl::openblas;
}
bool accepts_packed(const NodeView& n) {
  return choose_gemm(spec_of(n), n.opts, n.threads) == GemmImpl::packed;
}
/// \p k with the listing's note on how its provider was chosen.
std::unique_ptr<Kernel> noted(std::unique_ptr<Kernel> k, const MatMulSpec& s,
                              const LowerContext& c) {
  // The choice's note first, then the kernel's own (the packed GEMM's ISA and tile).
  std::string note = gemm_choice_note(s, c.opts, c.threads);
  if (!k->note().empty())
    note = note.empty() ? k->note() : note + "; " + k->note();
  k->set_note(std::move(note));
  return k;
}
std::int64_t onednn_scratch(const NodeView& n) {
  return matmul_scratch_bytes(spec_of(n), GemmImpl::onednn);
}
std::unique_ptr<Kernel> make_onednn_op(const LowerContext& c) {
  MatMulSpec s = spec_of(c);
  return noted(
      make_matmul_kernel(s, GemmImpl::onednn, c.scratch(matmul_scratch_bytes(s, GemmImpl::onednn))),
      s, c);
}
std::unique_ptr<Kernel> make_openblas_op(const LowerContext& c) {
  MatMulSpec s = spec_of(c);
  return noted(make_matmul_kernel(s, GemmImpl::openblas, nullptr), s, c);
}
std::int64_t packed_scratch(const NodeView& n) {
  return matmul_scratch_bytes(spec_of(n), GemmImpl::packed);
}
std::unique_ptr<Kernel> make_packed_op(const LowerContext& c) {
  MatMulSpec s = spec_of(c);
  return noted(
      make_matmul_kernel(s, GemmImpl::packed, c.scratch(matmul_scratch_bytes(s, GemmImpl::packed))),
      s, c);
}
std::unique_ptr<Kernel> make_loop_op(const LowerContext& c) {
  return make_matmul_kernel(spec_of(c), GemmImpl::loop, nullptr);
}

constexpr KernelImpl kMatMul[] = {
    {"onednn", accepts_onednn, onednn_scratch, make_onednn_op},
    {"openblas", accepts_openblas, nullptr, make_openblas_op},
    {"packed", accepts_packed, packed_scratch, make_packed_op},
    {"loop", accept_all, nullptr, make_loop_op},
};

} // namespace

GemmImpl choose_gemm(const MatMulSpec& spec, const CpuOptions& opts, int threads) {
  if (spec.dtype == ir::DType::f32) {
    switch (opts.gemm) {
    case GemmProvider::onednn:
      return GemmImpl::onednn;
    case GemmProvider::openblas:
      return GemmImpl::openblas;
    case GemmProvider::packed: // products it declines run on oneDNN
      return packed_gemm_accepts(spec) ? GemmImpl::packed : GemmImpl::onednn;
    case GemmProvider::automatic:
      return measured_gemm(spec, threads, opts.gemm_measure_min_work).impl;
    }
  }
  if (spec.dtype == ir::DType::f64)
    return GemmImpl::openblas;
  return GemmImpl::loop;
}

std::string gemm_choice_note(const MatMulSpec& spec, const CpuOptions& opts, int threads) {
  if (spec.dtype != ir::DType::f32 || opts.gemm != GemmProvider::automatic)
    return {};
  return measured_gemm(spec, threads, opts.gemm_measure_min_work).note();
}

const char* gemm_impl_name(GemmImpl impl) {
  switch (impl) {
  case GemmImpl::onednn:
    return "onednn";
  case GemmImpl::openblas:
    return "openblas";
  case GemmImpl::loop:
    return "loop";
  case GemmImpl::packed:
    return "packed";
  }
  return "?";
}

std::int64_t matmul_scratch_bytes(const MatMulSpec& spec, GemmImpl impl) {
  if (impl == GemmImpl::packed)
    return packed_gemm_scratch_bytes(spec);
  if (impl != GemmImpl::onednn)
    return 0;
  return onednn::scratchpad_bytes(onednn_matmul(spec).pd);
}

std::unique_ptr<Kernel> make_matmul_kernel(const MatMulSpec& spec, GemmImpl impl,
                                           std::byte* scratch) {
  switch (impl) {
  case GemmImpl::onednn:
    if (spec.dtype != ir::DType::f32)
      throw Error("rlx-cpu: the oneDNN matmul runs f32 only");
    return make_onednn(spec, scratch);
  case GemmImpl::openblas:
    if (spec.dtype == ir::DType::f32)
      return std::make_unique<BlasMatmul<float>>(blas_weights(spec));
    if (spec.dtype == ir::DType::f64)
      return std::make_unique<BlasMatmul<double>>(spec);
    throw Error("rlx-cpu: the OpenBLAS matmul runs f32 and f64 only");
  case GemmImpl::packed:
    if (!packed_gemm_accepts(spec))
      throw Error("rlx-cpu: the packed GEMM does not run this product");
    return make_packed_gemm(spec, scratch);
  case GemmImpl::loop:
    break;
  }
  return visit_dtype(spec.dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool>)
      throw Error("rlx-cpu: matmul on bool");
    else
      return std::make_unique<LoopMatmul<T>>(spec);
  });
}

std::span<const KernelImpl> matmul_impls() {
  return kMatMul;
}

} // namespace rlx::cpu
