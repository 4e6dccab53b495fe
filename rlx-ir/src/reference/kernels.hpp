// kernels.hpp (private): one reference kernel per row of ops.def.
//
// The dispatch switch in interpreter.cpp is generated from ops.def and calls `kernels::<Name>` for
// every op, so an op added to the table without a kernel declared here does not compile. Every
// kernel receives the node (for its attributes), the node's static output type \p out (already
// re-derived from the operand types) and the operand values, and returns a fresh tensor of type
// \p out. Kernels throw EvalError (through fail()) on values the op rejects.
#pragma once

#include "common.hpp"

namespace rlx::ir::reference::kernels {

#define RLX_REFERENCE_KERNEL(Name)                                                                 \
  Tensor Name([[maybe_unused]] const Node& node, [[maybe_unused]] const Shape& out,                \
              [[maybe_unused]] Args in)

// leaves, control flow, extension and HIR blocks (control.cpp)
RLX_REFERENCE_KERNEL(Input);
RLX_REFERENCE_KERNEL(Param);
RLX_REFERENCE_KERNEL(Constant);
RLX_REFERENCE_KERNEL(If);
RLX_REFERENCE_KERNEL(While);
RLX_REFERENCE_KERNEL(Custom);
RLX_REFERENCE_KERNEL(CustomFn);
RLX_REFERENCE_KERNEL(Linear);
RLX_REFERENCE_KERNEL(AttentionBlock);
RLX_REFERENCE_KERNEL(SwiGluFfn);
RLX_REFERENCE_KERNEL(BertLayer);
RLX_REFERENCE_KERNEL(LlamaBlock);

// elementwise (elementwise.cpp)
RLX_REFERENCE_KERNEL(Neg);
RLX_REFERENCE_KERNEL(Abs);
RLX_REFERENCE_KERNEL(Exp);
RLX_REFERENCE_KERNEL(Log);
RLX_REFERENCE_KERNEL(Sqrt);
RLX_REFERENCE_KERNEL(Rsqrt);
RLX_REFERENCE_KERNEL(Reciprocal);
RLX_REFERENCE_KERNEL(Tanh);
RLX_REFERENCE_KERNEL(Sigmoid);
RLX_REFERENCE_KERNEL(Relu);
RLX_REFERENCE_KERNEL(Gelu);
RLX_REFERENCE_KERNEL(GeluTanh);
RLX_REFERENCE_KERNEL(Silu);
RLX_REFERENCE_KERNEL(Sin);
RLX_REFERENCE_KERNEL(Cos);
RLX_REFERENCE_KERNEL(Erf);
RLX_REFERENCE_KERNEL(Cast);
RLX_REFERENCE_KERNEL(Add);
RLX_REFERENCE_KERNEL(Sub);
RLX_REFERENCE_KERNEL(Mul);
RLX_REFERENCE_KERNEL(Div);
RLX_REFERENCE_KERNEL(Pow);
RLX_REFERENCE_KERNEL(Maximum);
RLX_REFERENCE_KERNEL(Minimum);
RLX_REFERENCE_KERNEL(Compare);
RLX_REFERENCE_KERNEL(Where);

// quantization (quantize.cpp)
RLX_REFERENCE_KERNEL(Quantize);
RLX_REFERENCE_KERNEL(Dequantize);
RLX_REFERENCE_KERNEL(FakeQuantize);

// linear algebra (linalg.cpp)
RLX_REFERENCE_KERNEL(MatMul);
RLX_REFERENCE_KERNEL(DotGeneral);
RLX_REFERENCE_KERNEL(DenseSolve);

// movement (movement.cpp)
RLX_REFERENCE_KERNEL(Reshape);
RLX_REFERENCE_KERNEL(Transpose);
RLX_REFERENCE_KERNEL(Narrow);
RLX_REFERENCE_KERNEL(Concat);
RLX_REFERENCE_KERNEL(Expand);
RLX_REFERENCE_KERNEL(Gather);
RLX_REFERENCE_KERNEL(ScatterAdd);

// reductions, normalisation and losses (reduce.cpp, norm.cpp)
RLX_REFERENCE_KERNEL(Reduce);
RLX_REFERENCE_KERNEL(Softmax);
RLX_REFERENCE_KERNEL(LogSoftmax);
RLX_REFERENCE_KERNEL(ArgMax);
RLX_REFERENCE_KERNEL(SoftmaxCrossEntropy);
RLX_REFERENCE_KERNEL(LayerNorm);
RLX_REFERENCE_KERNEL(RmsNorm);

// attention and positions (attention.cpp)
RLX_REFERENCE_KERNEL(Attention);
RLX_REFERENCE_KERNEL(Rope);

// convolution (conv.cpp)
RLX_REFERENCE_KERNEL(Conv2d);
RLX_REFERENCE_KERNEL(Pool2d);

} // namespace rlx::ir::reference::kernels
