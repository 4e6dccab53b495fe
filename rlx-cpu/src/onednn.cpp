// onednn.cpp: the oneDNN engine and bound primitives.
#include "onednn.hpp"

#include "pools.hpp"
#include "rlx/ir/error.hpp"

#include <string>

namespace rlx::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory::desc plain_md(const std::vector<std::int64_t>& sizes, dt type) {
  dnnl::memory::dims d(sizes.begin(), sizes.end());
  if (d.empty())
    d.push_back(1);
  dnnl::memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size() - 1; i > 0; --i)
    strides[i - 1] = strides[i] * d[i];
  return dnnl::memory::desc(d, type, strides);
}

dnnl::memory::desc strided_md(const std::vector<std::int64_t>& sizes,
                              const std::vector<std::int64_t>& strides, dt type) {
  return dnnl::memory::desc(dnnl::memory::dims(sizes.begin(), sizes.end()), type,
                            dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr base) {
  base.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return base;
}

std::int64_t scratchpad_bytes(const dnnl::primitive_desc_base& pd) {
  return static_cast<std::int64_t>(pd.scratchpad_desc().get_size());
}

std::optional<EltwiseAlg> eltwise_alg(ir::OpKind op) {
  using A = dnnl::algorithm;
  switch (op) {
  case ir::OpKind::Relu:
    return EltwiseAlg{A::eltwise_relu};
  case ir::OpKind::Gelu:
    return EltwiseAlg{A::eltwise_gelu_erf};
  case ir::OpKind::GeluTanh:
    return EltwiseAlg{A::eltwise_gelu_tanh};
  case ir::OpKind::Tanh:
    return EltwiseAlg{A::eltwise_tanh};
  case ir::OpKind::Sigmoid:
    return EltwiseAlg{A::eltwise_logistic};
  case ir::OpKind::Silu:
    return EltwiseAlg{A::eltwise_swish, 1.0f};
  case ir::OpKind::Exp:
    return EltwiseAlg{A::eltwise_exp};
  case ir::OpKind::Sqrt:
    return EltwiseAlg{A::eltwise_sqrt};
  default:
    return std::nullopt;
  }
}

void BoundPrimitive::bind(int arg, const dnnl::memory::desc& md, void* ptr) {
  mems_.emplace_back(md, engine(), ptr);
  args_.push_back({arg, mems_.back().get()});
}

void BoundPrimitive::run(dnnl::stream& stream) const {
  dnnl_status_t st = dnnl_primitive_execute(prim_.get(), stream.get(),
                                            static_cast<int>(args_.size()), args_.data());
  if (st != dnnl_success)
    throw Error("rlx-cpu: oneDNN primitive failed with status " +
                std::to_string(static_cast<int>(st)));
}

void PrimitiveKernel::run(ExecContext& ctx) {
  if (!single_ || ctx.threads <= 1) {
    prim_.run(*ctx.stream);
    return;
  }
  set_openmp_threads(1);
  prim_.run(*ctx.stream);
  set_openmp_threads(ctx.threads);
}

} // namespace rlx::cpu::onednn
