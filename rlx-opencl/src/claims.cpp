// claims.cpp: the OpenCL claim set (op kinds x dtypes, claimed only where a kernel of the program
// runs them) and the ops it leaves to the compile pipeline, each with its reason.
#include "rlx/opencl/claims.hpp"

#include <array>

namespace rlx::opencl {
namespace {

using ir::DType;
using K = ir::OpKind;

constexpr std::array kUnclaimed = {
    UnclaimedOp{K::DotGeneral, "lowered to Transpose / Reshape / MatMul by the compile pipeline"},
    UnclaimedOp{K::DenseSolve, "no OpenCL kernel (a pivoted solve is serial; CPU only for now)"},
    UnclaimedOp{K::ArgMax, "no OpenCL kernel yet"},
    UnclaimedOp{K::SoftmaxCrossEntropy,
                "decomposed into Reduce, Exp, Log, Compare and Where by the compile pipeline"},
    UnclaimedOp{K::Conv2d, "no OpenCL kernel yet (no conv workload in BERT / LLaMA / MLP)"},
    UnclaimedOp{K::Pool2d, "no OpenCL kernel yet (no pooling workload in BERT / LLaMA / MLP)"},
    UnclaimedOp{K::If, "lowered to Where over both inlined branches by the compile pipeline when "
                       "both are total (else a compile error)"},
    UnclaimedOp{K::While, "unrolled up to max_iterations by the compile pipeline when its body is "
                          "total (else a compile error)"},
    UnclaimedOp{K::Split, "no OpenCL kernel yet; left unclaimed so fuse-shared-input-matmul (which "
                          "emits Split) does not run: its weight Concat would run on every call"},
    UnclaimedOp{K::Custom, "custom ops run host reference kernels: CPU only"},
    UnclaimedOp{K::CustomFn, "its body is inlined by the compile pipeline"},
    UnclaimedOp{K::Quantize, "no OpenCL kernel yet (round-half-even + clamp to i8)"},
    UnclaimedOp{K::FakeQuantize, "decomposed into Quantize / Dequantize by the compile pipeline"},
    UnclaimedOp{K::Linear, "HIR block: lowered to MatMul (+ Add, activation) before MIR"},
    UnclaimedOp{K::AttentionBlock, "HIR block: lowered to MatMul, Rope and Attention before MIR"},
    UnclaimedOp{K::SwiGluFfn, "HIR block: lowered to MatMul, Silu and Mul before MIR"},
    UnclaimedOp{K::BertLayer, "HIR block: lowered to MIR primitives before MIR"},
    UnclaimedOp{K::LlamaBlock, "HIR block: lowered to MIR primitives before MIR"},
    UnclaimedOp{K::FusedAttentionBlock, "fused op without an OpenCL kernel yet: the fusion pass "
                                        "does not run for OpenCL (legalisation decomposes it)"},
    // ---- transformer layer ----
    UnclaimedOp{K::FusedTransformerLayer,
                "fused op without an OpenCL kernel: it is a sequence of the CPU's sub-kernels "
                "sharing scratch; OpenCL does not claim the attention block it contains either, so "
                "fuse-transformer-layer does not run for OpenCL (legalisation decomposes it)"},
    // ---- onnx3: topk, trig (ONNX import; CPU kernels only) ----
    UnclaimedOp{K::TopK, "no OpenCL kernel yet (a per-lane partial sort; CPU only for now)"},
    UnclaimedOp{K::Sinh, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Cosh, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Asin, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Acos, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Atan, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Asinh, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Acosh, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::Atanh, "no OpenCL kernel yet (ONNX import op; CPU only for now)"},
    UnclaimedOp{K::AttentionGrad, "backward op without an OpenCL kernel yet: legalisation "
                                  "decomposes it into primitives"},
    UnclaimedOp{K::SoftmaxCrossEntropyGrad, "backward op without an OpenCL kernel yet: "
                                            "legalisation decomposes it into primitives"},
    UnclaimedOp{K::RopeGrad, "backward op without an OpenCL kernel yet: legalisation decomposes "
                             "it into primitives"},
};

ir::ClaimSet build_claims() {
  ir::ClaimSet c;
  // Leaves are buffers; data movement copies elements by storage size, exact for every dtype
  // (Where's claim is checked on its bool condition and its result, both any dtype here); Get is a
  // view of its tuple part.
  for (K k : {K::Input, K::Param, K::Constant, K::Reshape, K::Transpose, K::Narrow, K::Concat,
              K::Expand, K::Gather, K::Where, K::Get})
    c.claim(k);
  // The program's math is f32: unary / binary math, matrix products, reductions, norms,
  // attention, RoPE. Other float dtypes are left to the CPU (no f64 / f16 kernels yet).
  for (K k :
       {K::Neg,     K::Abs,       K::Exp,    K::Log,    K::Sqrt,     K::Rsqrt,      K::Reciprocal,
        K::Tanh,    K::Sigmoid,   K::Relu,   K::Gelu,   K::GeluTanh, K::Silu,       K::Sin,
        K::Cos,     K::Erf,       K::Add,    K::Sub,    K::Mul,      K::Div,        K::Pow,
        K::Maximum, K::Minimum,   K::MatMul, K::Reduce, K::Softmax,  K::LogSoftmax, K::LayerNorm,
        K::RmsNorm, K::Attention, K::Rope})
    c.claim(k, {DType::f32});
  // Fused ops: the GEMM epilogue (bias + every activation; SwiGluMatMul's second product reads
  // the gate back), SwiGlu's kernel, and elementwise regions as generated kernels (region.cpp)
  // computing in f32 with bool values as 0 / 1. The CPU claims no regions by default, so the
  // region pass runs for OpenCL only.
  for (K k : {K::MatMulBiasAct, K::SwiGlu, K::SwiGluMatMul})
    c.claim(k, {DType::f32});
  c.claim(K::ElementwiseRegion, {DType::f32, DType::boolean});
  // The fused residual norms (the sum and its norm at the tuple's part offsets; the fusion passes
  // follow this claim) and the backward ops of the norms and softmaxes (norm_fused.cl,
  // reduce.cl), f32.
  for (K k : {K::ResidualLayerNorm, K::ResidualRmsNorm, K::LayerNormGrad, K::RmsNormGrad,
              K::SoftmaxGrad, K::LogSoftmaxGrad})
    c.claim(k, {DType::f32});
  // Attention's padding mask may be of any integer type or bool (the kernel tests it != 0); its
  // shape rule makes q / k / v float of one dtype, so these dtypes can only be the mask's.
  c.claim(K::Attention, {DType::boolean, DType::i8, DType::i32, DType::i64, DType::u8});
  // ScatterAdd (the transpose of Gather, training): f32 or integer data, integer indices.
  c.claim(K::ScatterAdd, {DType::f32, DType::i8, DType::i32, DType::i64, DType::u8});
  // Compare: f32 or integer operands, bool result.
  c.claim(K::Compare, {DType::f32, DType::i8, DType::i32, DType::i64, DType::u8, DType::boolean});
  // Cast between the types cast_k converts (source and target must both be listed).
  c.claim(K::Cast, {DType::f32, DType::i8, DType::i32, DType::i64, DType::u8, DType::boolean});
  // int8: i8 in, f32 out, computed in double where the device has it (the decomposition into
  // Cast / Sub / Mul would round the scale to f32 first).
  c.claim(K::Dequantize, {DType::i8, DType::f32});
  return c;
}

} // namespace

const ir::ClaimSet& opencl_claims() {
  static const ir::ClaimSet claims = build_claims();
  return claims;
}

std::span<const UnclaimedOp> opencl_unclaimed() {
  return kUnclaimed;
}

} // namespace rlx::opencl
