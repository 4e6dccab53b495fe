// lower.cpp: the kernel implementation list of every op kind, and the compile-time selection.
#include "lower.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::cpu {

std::byte* LowerContext::addr(ir::NodeId n) const {
  const ir::BufferSlot& s = plan.slot(n);
  if (s.storage == ir::Storage::none && graph.shape(n).bytes() > 0)
    throw Error("rlx-cpu: " + ir::describe(graph, n) + " has no buffer in the memory plan but " +
                ir::describe(graph, id) + " uses it");
  if (weights) {
    const ir::NodeId root = s.storage == ir::Storage::view ? s.view_of : n;
    if (root.valid() && (*weights)[root.v]) {
      if (plain_reads)
        ++(*plain_reads)[root.v];
      return (*weights)[root.v] + (s.offset - plan.slot(root).offset);
    }
  }
  return arena + s.offset;
}

std::byte* LowerContext::scratch(std::int64_t bytes) const {
  if (bytes <= 0)
    return nullptr;
  for (const ir::ScratchSlot& s : plan.scratch)
    if (s.node == id) {
      if (s.bytes < bytes)
        break;
      return arena + s.offset;
    }
  throw Error("rlx-cpu: " + what() + " needs " + std::to_string(bytes) +
              " scratch bytes the memory plan does not provide; plan with the backend's "
              "scratch_bytes()");
}

std::string LowerContext::what() const {
  return ir::describe(graph, id);
}

std::span<const KernelImpl> implementations(ir::OpKind op) {
  using K = ir::OpKind;
  // One case per row of ops.def and no default, so a new op is a compile error here until it is
  // given kernels or an empty list (and a reason in claims.cpp).
  switch (op) {
  case K::Input:
  case K::Param:
  case K::Constant:
    return {}; // leaves: buffers filled by set_input / set_param / compile, no kernel
  case K::Neg:
  case K::Abs:
  case K::Exp:
  case K::Log:
  case K::Sqrt:
  case K::Rsqrt:
  case K::Reciprocal:
  case K::Tanh:
  case K::Sigmoid:
  case K::Relu:
  case K::Gelu:
  case K::GeluTanh:
  case K::Silu:
  case K::Sin:
  case K::Cos:
  case K::Erf:
  case K::Sinh:
  case K::Cosh:
  case K::Asin:
  case K::Acos:
  case K::Atan:
  case K::Asinh:
  case K::Acosh:
  case K::Atanh:
    return unary_impls();
  case K::Cast:
    return cast_impls();
  case K::Add:
  case K::Sub:
  case K::Mul:
  case K::Div:
  case K::Pow:
  case K::Maximum:
  case K::Minimum:
    return binary_impls();
  case K::Compare:
    return compare_impls();
  case K::Where:
    return where_impls();
  case K::MatMul:
  case K::MatMulBiasAct:
    return matmul_impls();
  case K::DotGeneral:
    return {};
  case K::DenseSolve:
    return dense_solve_impls();
  case K::Reshape:
    return view_copy_impls();
  case K::Transpose:
    return transpose_impls();
  case K::Narrow:
    return narrow_impls();
  case K::Concat:
    return concat_impls();
  case K::Split:
    return split_impls();
  case K::Get:
    return get_impls();
  case K::Expand:
    return expand_impls();
  case K::Gather:
    return gather_impls();
  case K::ScatterAdd:
    return scatter_add_impls();
  case K::Reduce:
    return reduce_impls();
  case K::Softmax:
  case K::LogSoftmax:
    return softmax_impls();
  case K::ArgMax:
    return argmax_impls();
  case K::TopK:
    return topk_impls();
  case K::LayerNorm:
    return layer_norm_impls();
  case K::RmsNorm:
    return rms_norm_impls();
  case K::Attention:
    return attention_impls();
  case K::Rope:
    return rope_impls();
  case K::SoftmaxCrossEntropy:
    return softmax_cross_entropy_impls();
  case K::Conv2d:
    return conv2d_impls();
  case K::Pool2d:
    return pool2d_impls();
  case K::If:
    return if_impls();
  case K::While:
    return while_impls();
  case K::Custom:
    return custom_impls();
  case K::CustomFn:
    return {};
  case K::ElementwiseRegion:
    return region_impls();
  case K::Quantize:
  case K::Dequantize:
  case K::FakeQuantize:
    return quant_impls();
  case K::Linear:
  case K::AttentionBlock:
  case K::SwiGluFfn:
  case K::BertLayer:
  case K::LlamaBlock:
    return {};
  case K::SwiGlu:
    return swiglu_impls();
  case K::SwiGluMatMul:
    return swiglu_matmul_impls();
  case K::ResidualLayerNorm:
    return residual_layer_norm_impls();
  case K::ResidualRmsNorm:
    return residual_rms_norm_impls();
  case K::LayerNormGrad:
    return layer_norm_grad_impls();
  case K::RmsNormGrad:
    return rms_norm_grad_impls();
  case K::SoftmaxGrad:
    return softmax_grad_impls();
  case K::LogSoftmaxGrad:
    return log_softmax_grad_impls();
  case K::AttentionGrad: // backward ops 2
    return attention_grad_impls();
  case K::SoftmaxCrossEntropyGrad:
    return softmax_cross_entropy_grad_impls();
  case K::RopeGrad: // the Rope kernel, turning back
    return rope_impls();
  case K::FusedAttentionBlock:
    return attention_block_impls();
  case K::Conv2dGradInput: // conv / pool backward
    return conv2d_grad_input_impls();
  case K::Conv2dGradWeight:
    return conv2d_grad_weight_impls();
  case K::Pool2dGrad:
    return pool2d_grad_impls();
  case K::FusedTransformerLayer:
    return transformer_layer_impls();
  }
  return {};
}

const KernelImpl* select_kernel(const NodeView& n) {
  for (const KernelImpl& impl : implementations(n.node().op))
    if (impl.accepts(n))
      return &impl;
  return nullptr;
}

} // namespace rlx::cpu
