// claims.cpp: the OpenCL claim set (op kinds x dtypes, claimed only where a kernel of the program
// runs them) and the ops it leaves to the compile pipeline, each with its reason.
#include "rlx/opencl/claims.hpp"

#include <algorithm>
#include <vector>

namespace rlx::opencl {
namespace {

using ir::DType;
using K = ir::OpKind;

/// The op kinds left to the compile pipeline, each reason written once with the kinds it covers
/// (HIR blocks come from the table's kHir flag).
struct UnclaimedGroup {
  std::string_view reason;
  std::vector<K> ops;
};

std::vector<UnclaimedOp> build_unclaimed() {
  const UnclaimedGroup groups[] = {
      {"lowered to Transpose / Reshape / MatMul by the compile pipeline", {K::DotGeneral}},
      {"no OpenCL kernel (a pivoted solve is serial; CPU only for now)", {K::DenseSolve}},
      {"no OpenCL kernel yet", {K::ArgMax}},
      {"decomposed into Reduce, Exp, Log, Compare and Where by the compile pipeline",
       {K::SoftmaxCrossEntropy}},
      {"no OpenCL kernel yet (no conv or pooling workload in BERT / LLaMA / MLP)",
       {K::Conv2d, K::Pool2d}},
      {"lowered to Where over both inlined branches by the compile pipeline when both are total "
       "(else a compile error)",
       {K::If}},
      {"unrolled up to max_iterations by the compile pipeline when its body is total (else a "
       "compile error)",
       {K::While}},
      {"no OpenCL kernel yet; left unclaimed so fuse-shared-input-matmul (which emits Split) does "
       "not run: its weight Concat would run on every call",
       {K::Split}},
      {"custom ops run host reference kernels: CPU only", {K::Custom}},
      {"its body is inlined by the compile pipeline", {K::CustomFn}},
      {"no OpenCL kernel yet (round-half-even + clamp to i8)", {K::Quantize}},
      {"decomposed into Quantize / Dequantize by the compile pipeline", {K::FakeQuantize}},
      {"fused op without an OpenCL kernel yet: the fusion pass does not run for OpenCL "
       "(legalisation decomposes it)",
       {K::FusedAttentionBlock}},
      {"fused op without an OpenCL kernel: it is a sequence of the CPU's sub-kernels sharing "
       "scratch; OpenCL does not claim the attention block it contains either, so "
       "fuse-transformer-layer does not run for OpenCL (legalisation decomposes it)",
       {K::FusedTransformerLayer}},
      {"no OpenCL kernel yet (a per-lane partial sort; CPU only for now)", {K::TopK}},
      {"no OpenCL kernel yet (ONNX import op; CPU only for now)",
       {K::Sinh, K::Cosh, K::Asin, K::Acos, K::Atan, K::Asinh, K::Acosh, K::Atanh}},
      {"backward op without an OpenCL kernel yet: legalisation decomposes it into primitives",
       {K::AttentionGrad, K::SoftmaxCrossEntropyGrad, K::RopeGrad}},
      {"backward op without an OpenCL kernel yet (its forward is unclaimed too): legalisation "
       "decomposes it into primitives",
       {K::Conv2dGradInput, K::Conv2dGradWeight, K::Pool2dGrad}},
  };
  std::vector<UnclaimedOp> out;
  for (const UnclaimedGroup& g : groups)
    for (K k : g.ops)
      out.push_back({k, g.reason});
  ir::for_each_op([&](K k) {
    if (ir::is_hir(k))
      out.push_back({k, "HIR block: lowered to MIR primitives before MIR"});
  });
  std::sort(out.begin(), out.end(), [](const UnclaimedOp& a, const UnclaimedOp& b) {
    return static_cast<int>(a.op) < static_cast<int>(b.op);
  });
  return out;
}

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
  static const std::vector<UnclaimedOp> unclaimed = build_unclaimed();
  return unclaimed;
}

} // namespace rlx::opencl
