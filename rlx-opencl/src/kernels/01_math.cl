// 01_math.cl: the scalar f32 math of the elementwise ops (unary, binary, compare), shared by the
// one-op kernels, the GEMM epilogue and the generated elementwise-region kernels (which are built
// from 00_common.cl and this file only, see region.cpp).

// Unary op codes (rlx-opencl/src/lower.cpp, unary_code).
#define U_NEG 0
#define U_ABS 1
#define U_EXP 2
#define U_LOG 3
#define U_SQRT 4
#define U_RSQRT 5
#define U_RECIP 6
#define U_TANH 7
#define U_SIGMOID 8
#define U_RELU 9
#define U_GELU 10
#define U_GELU_TANH 11
#define U_SILU 12
#define U_SIN 13
#define U_COS 14
#define U_ERF 15

inline float unary_f32(int op, float x) {
  switch (op) {
  case U_NEG: return -x;
  case U_ABS: return fabs(x);
  case U_EXP: return exp(x);
  case U_LOG: return log(x);
  case U_SQRT: return sqrt(x);
  case U_RSQRT: return 1.0f / sqrt(x);
  case U_RECIP: return 1.0f / x;
  case U_TANH: return tanh(x);
  case U_SIGMOID: return 1.0f / (1.0f + exp(-x));
  case U_RELU: return x < 0.0f ? 0.0f : x; // NaN stays NaN
  case U_GELU: return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F));
  case U_GELU_TANH: {
    const float k = 0.7978845608028654f; // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
  }
  case U_SILU: return x / (1.0f + exp(-x));
  case U_SIN: return sin(x);
  case U_COS: return cos(x);
  case U_ERF: return erf(x);
  }
  return x;
}

// Binary op codes (lower.cpp, binary_code).
#define B_ADD 0
#define B_SUB 1
#define B_MUL 2
#define B_DIV 3
#define B_POW 4
#define B_MAX 5
#define B_MIN 6

inline float binary_f32(int op, float a, float b) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b; // correctly rounded: built with -cl-fp32-correctly-rounded-divide-sqrt
  case B_POW: return (float)pow((acc_t)a, (acc_t)b);
  case B_MAX: return isnan(a) || isnan(b) ? NAN : fmax(a, b);
  case B_MIN: return isnan(a) || isnan(b) ? NAN : fmin(a, b);
  }
  return a;
}

/// Compare predicate \p op (the order of rlx::ir::CmpOp) from the three relations.
inline int compare_op(int op, int eq, int lt, int gt) {
  switch (op) {
  case 0: return eq;
  case 1: return !eq;
  case 2: return lt;
  case 3: return lt || eq;
  case 4: return gt;
  case 5: return gt || eq;
  }
  return 0;
}
