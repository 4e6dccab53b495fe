// claims.cpp: the CPU claim set (op kinds × dtypes, claimed honestly: a dtype is listed only where
// a kernel runs it) and the ops deliberately left to the compile pipeline, each with its reason.
#include "rlx/cpu/claims.hpp"

#include "lower.hpp"

#include <array>

namespace rlx::cpu {
namespace {

using ir::DType;
using K = ir::OpKind;

constexpr auto kFloats = {DType::f32, DType::f64};

/// Ops the CPU does not claim, and why. Everything else in ops.def is claimed below.
constexpr std::array kUnclaimed = {
    UnclaimedOp{K::DotGeneral, "lowered to Transpose / Reshape / MatMul by the compile pipeline "
                               "(one GEMM path serves both)"},
    UnclaimedOp{K::CustomFn, "its body is inlined by the compile pipeline, so fusion and memory "
                             "planning see through it"},
    UnclaimedOp{K::Linear, "HIR block: lowered to MatMul (+ Add, activation) before MIR"},
    UnclaimedOp{K::AttentionBlock, "HIR block: lowered to MatMul, Rope and Attention before MIR"},
    UnclaimedOp{K::SwiGluFfn, "HIR block: lowered to MatMul, Silu and Mul before MIR"},
    UnclaimedOp{K::BertLayer, "HIR block: lowered to MIR primitives before MIR"},
    UnclaimedOp{K::LlamaBlock, "HIR block: lowered to MIR primitives before MIR"},
};

ir::ClaimSet build_claims(bool elementwise_regions) {
  ir::ClaimSet c;
  // Leaves hold any dtype; data movement is bytewise and exact for every dtype.
  for (K k : {K::Input, K::Param, K::Constant, K::Reshape, K::Transpose, K::Narrow, K::Concat,
              K::Split, K::Get, K::Expand, K::Gather, K::Where, K::Cast})
    c.claim(k);
  // Elementwise math: every numeric dtype (f16 / bf16 computed in f32, integers in int64).
  for (K k :
       {K::Neg, K::Abs, K::Relu, K::Add, K::Sub, K::Mul, K::Div, K::Pow, K::Maximum, K::Minimum})
    c.claim(k, {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64,
                DType::u8});
  for (K k : {K::Exp, K::Log, K::Sqrt, K::Rsqrt, K::Reciprocal, K::Tanh, K::Sigmoid, K::Gelu,
              K::GeluTanh, K::Silu, K::Sin, K::Cos, K::Erf})
    c.claim(k, {DType::f32, DType::f64, DType::f16, DType::bf16});
  // ---- onnx3: trig (libm in the compute type) ----
  for (K k : {K::Sinh, K::Cosh, K::Asin, K::Acos, K::Atan, K::Asinh, K::Acosh, K::Atanh})
    c.claim(k, {DType::f32, DType::f64, DType::f16, DType::bf16});
  // Compare: operands of any dtype, bool result.
  c.claim(K::Compare);
  // Integer-capable numerics.
  for (K k : {K::MatMul, K::ScatterAdd, K::Reduce})
    c.claim(k, {DType::f32, DType::f64, DType::i8, DType::i32, DType::i64, DType::u8});
  // Fused ops: GEMM with the bias + activation epilogue (oneDNN post-ops, or after OpenBLAS).
  c.claim(K::MatMulBiasAct, kFloats);
  c.claim(K::ArgMax, {DType::f32, DType::f64, DType::i8, DType::i32, DType::i64, DType::u8});
  c.claim(K::TopK); // a tuple result; every numeric operand (the shape rule refuses bool)
  // Float-only kernels.
  for (K k : {K::DenseSolve, K::Softmax, K::LogSoftmax, K::LayerNorm, K::RmsNorm, K::Rope,
              K::Conv2d, K::Pool2d, K::FakeQuantize})
    c.claim(k, kFloats);
  // Float data with an operand of another type (ClaimSet::supports checks every operand): integer
  // labels of any width; a padding mask of any dtype (nonzero = keep).
  c.claim(K::SoftmaxCrossEntropy,
          {DType::f32, DType::f64, DType::i8, DType::i32, DType::i64, DType::u8});
  c.claim(K::Attention, kFloats);
  // Transformer fused ops (kernels/swiglu.cpp).
  c.claim(K::SwiGlu, kFloats);
  c.claim(K::SwiGluMatMul, kFloats);
  // Residual + norm (kernels/residual_norm.cpp): the sum and the normalised sum in one row pass.
  c.claim(K::ResidualLayerNorm, kFloats);
  c.claim(K::ResidualRmsNorm, kFloats);
  // The fused attention block (kernels/attention_block.cpp): f32, with a padding mask of any
  // claimed dtype (other dtypes get its decomposition).
  c.claim(K::FusedAttentionBlock,
          {DType::f32, DType::boolean, DType::i8, DType::i32, DType::i64, DType::u8});
  // The fused transformer layer (kernels/transformer_layer.cpp): its stages' kernels in one
  // record, f32 with a padding mask of any claimed dtype, like the attention block.
  c.claim(K::FusedTransformerLayer,
          {DType::f32, DType::boolean, DType::i8, DType::i32, DType::i64, DType::u8});
  // Backward ops (kernels/norm_grad.cpp).
  for (K k : {K::LayerNormGrad, K::RmsNormGrad, K::SoftmaxGrad, K::LogSoftmaxGrad})
    c.claim(k, kFloats);
  // Backward ops 2 (kernels/attention_grad.cpp, loss_grad.cpp; rope_grad is the Rope kernel): a
  // padding mask / labels of any integer width.
  c.claim(K::AttentionGrad,
          {DType::f32, DType::f64, DType::boolean, DType::i8, DType::i32, DType::i64, DType::u8});
  c.claim(K::SoftmaxCrossEntropyGrad,
          {DType::f32, DType::f64, DType::i8, DType::i32, DType::i64, DType::u8});
  c.claim(K::RopeGrad, kFloats);
  // Conv / pool backward (kernels/conv_grad.cpp): oneDNN for f32, loops for f64.
  for (K k : {K::Conv2dGradInput, K::Conv2dGradWeight, K::Pool2dGrad})
    c.claim(k, kFloats);
  c.claim(K::Attention, {DType::boolean, DType::i8, DType::i32, DType::i64, DType::u8});
  // int8 quantization: float in, i8 out (Quantize); i8 in, f32 out (Dequantize).
  c.claim(K::Quantize, {DType::f32, DType::f64, DType::i8});
  c.claim(K::Dequantize, {DType::i8, DType::f32});
  // Custom ops run their registered reference kernel, whatever the dtypes.
  c.claim(K::Custom);
  // Control flow runs for real (control_flow.cpp): each sub-graph is a nested executable.
  c.claim(K::If);
  c.claim(K::While);
  // Elementwise regions (on unless CpuOptions::elementwise_regions is off): one generated loop
  // computing in f32, bool values as 0 / 1 (region.cpp). The region pass forms regions only of
  // these dtypes.
  if (elementwise_regions)
    c.claim(K::ElementwiseRegion, {DType::f32, DType::boolean});
  return c;
}

} // namespace

const ir::ClaimSet& cpu_claims(bool elementwise_regions) {
  static const ir::ClaimSet plain = build_claims(false);
  static const ir::ClaimSet with_regions = build_claims(true);
  return elementwise_regions ? with_regions : plain;
}

std::span<const UnclaimedOp> deliberately_unclaimed() {
  return kUnclaimed;
}

bool has_kernel(ir::OpKind op) {
  if (ir::is_leaf(op))
    return true; // leaves are buffers the executable fills; they need no kernel
  return !implementations(op).empty();
}

} // namespace rlx::cpu
