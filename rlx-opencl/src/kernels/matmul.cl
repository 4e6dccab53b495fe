// matmul.cl: the tiled f32 GEMM. C[b] = A[b] · B[b] for every batch b, where A(m, k) and B(k, n)
// are read through strides (so transpose flags cost nothing) and batch broadcasting is zero batch
// strides.
//
// A work-group of 16 x 16 items computes a 64 x 64 tile of C; each item a 4 x 4 block whose rows
// and columns are 16 apart (so neighbouring items read neighbouring local-memory words). The K
// loop stages a 64 x 16 tile of A and a 16 x 64 tile of B in local memory; each item loads 4
// elements of each, along whichever axis is contiguous in global memory.
#define MM_TM 64
#define MM_TN 64
#define MM_TK 16

// The epilogue word of both GEMM kernels: the activation code (ACT_*, the order of
// rlx::ir::Activation) in the low byte, EPI_BIAS when a bias [N] is added before it, EPI_GLU when
// the result is silu(C's previous value) * (the product), SwiGluMatMul's second product.
#define EPI_ACT_MASK 0xff
#define EPI_BIAS 0x100
#define EPI_GLU 0x200
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_GELU 2
#define ACT_GELU_TANH 3
#define ACT_SILU 4
#define ACT_SIGMOID 5
#define ACT_TANH 6

/// The activation \p act of the epilogue, rounded as the one-op kernels round it (unary_f32).
inline float mm_act(int act, float x) {
  switch (act) {
  case ACT_RELU: return unary_f32(U_RELU, x);
  case ACT_GELU: return unary_f32(U_GELU, x);
  case ACT_GELU_TANH: return unary_f32(U_GELU_TANH, x);
  case ACT_SILU: return unary_f32(U_SILU, x);
  case ACT_SIGMOID: return unary_f32(U_SIGMOID, x);
  case ACT_TANH: return unary_f32(U_TANH, x);
  }
  return x;
}

/// Element (.., n) of the result from its product \p acc: + bias[n], the activation, and for
/// EPI_GLU silu(*c) * that, where *c (the same element) holds the gate product.
inline float mm_epilogue(float acc, long n, __global const float* bias, int epi,
                         __global const float* c) {
  if (epi & EPI_BIAS)
    acc += bias[n];
  acc = mm_act(epi & EPI_ACT_MASK, acc);
  if (epi & EPI_GLU)
    acc = unary_f32(U_SILU, *c) * acc;
  return acc;
}

/// Adds batch \p batch's offsets of A and B to \p aoff / \p boff. m: nb, batch dims[nb], A batch
/// strides[nb], B batch strides[nb].
inline void matmul_batch_offsets(__global const long* m, long batch, long* aoff, long* boff) {
  const long nb = m[0];
  long rest = batch;
  for (long d = nb - 1; d >= 0; --d) {
    const long dim = m[1 + d], i = rest % dim;
    rest /= dim;
    *aoff += i * m[1 + nb + d];
    *boff += i * m[1 + 2 * nb + d];
  }
}

/// meta: nb (batch rank), batch dims[nb], A batch strides[nb], B batch strides[nb]; C is
/// contiguous [batch, M, N]. A(m, k) = A[m * a_rs + k * a_cs], B(k, n) = B[k * b_rs + n * b_cs].
/// (bias, bo) and epi: the epilogue (mm_epilogue).
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
matmul_f32_k(__global const float* A, long ao, __global const float* B, long bo, __global float* C,
             long co, long M, long N, long K, long a_rs, long a_cs, long b_rs, long b_cs,
             __global const long* meta, long mo, __global const float* bias, long bias_o,
             int epi) {
  __local float As[MM_TK][MM_TM + 1];
  __local float Bs[MM_TK][MM_TN + 1];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int t = ly * 16 + lx;
  const long n0 = (long)get_group_id(0) * MM_TN, m0 = (long)get_group_id(1) * MM_TM;
  const long batch = get_global_id(2);

  long aoff = ao, boff = bo;
  matmul_batch_offsets(meta + mo, batch, &aoff, &boff);
  A += aoff;
  B += boff;
  C += co + batch * M * N;
  const bool a_kfast = a_cs == 1, b_nfast = b_cs == 1;

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.0f;

  for (long k0 = 0; k0 < K; k0 += MM_TK) {
    for (int r = 0; r < 4; ++r) {
      const int e = t + 256 * r;
      const int mm = a_kfast ? e / MM_TK : e % MM_TM, ka = a_kfast ? e % MM_TK : e / MM_TM;
      const long gm = m0 + mm, gka = k0 + ka;
      As[ka][mm] = gm < M && gka < K ? A[gm * a_rs + gka * a_cs] : 0.0f;
      const int nn = b_nfast ? e % MM_TN : e / MM_TK, kb = b_nfast ? e / MM_TN : e % MM_TK;
      const long gn = n0 + nn, gkb = k0 + kb;
      Bs[kb][nn] = gn < N && gkb < K ? B[gkb * b_rs + gn * b_cs] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < MM_TK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i)
        a[i] = As[kk][ly + 16 * i];
      for (int j = 0; j < 4; ++j)
        b[j] = Bs[kk][lx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i) {
    const long gm = m0 + ly + 16 * i;
    if (gm >= M)
      continue;
    for (int j = 0; j < 4; ++j) {
      const long gn = n0 + lx + 16 * j;
      if (gn < N)
        C[gm * N + gn] = mm_epilogue(acc[i][j], gn, bias + bias_o, epi, C + gm * N + gn);
    }
  }
}

/// The same product with one item per element of C, each running the whole K loop through strides
/// (no local memory, no padding): for products of fewer than 64 rows (decode steps, small batches),
/// where a 64-row tile would compute mostly padding (see DESIGN.md, "GEMM").
__kernel void matmul_rows_f32_k(__global const float* A, long ao, __global const float* B, long bo,
                                __global float* C, long co, long M, long N, long K, long a_rs,
                                long a_cs, long b_rs, long b_cs, __global const long* meta,
                                long mo, __global const float* bias, long bias_o, int epi) {
  const long n = get_global_id(0), mi = get_global_id(1), batch = get_global_id(2);
  if (n >= N || mi >= M)
    return;
  long aoff = ao, boff = bo;
  matmul_batch_offsets(meta + mo, batch, &aoff, &boff);
  __global const float* a = A + aoff + mi * a_rs;
  __global const float* b = B + boff + n * b_cs;
  float acc = 0.0f;
  if (a_cs == 1 && b_rs == 1) {
    // Both operands contiguous along k (x · Wᵀ, the common case): float4 loads, four partial
    // sums. vload4 needs only element alignment.
    float4 acc4 = (float4)(0.0f);
    long k = 0;
    for (; k + 4 <= K; k += 4)
      acc4 = fma(vload4(0, a + k), vload4(0, b + k), acc4);
    for (; k < K; ++k)
      acc = fma(a[k], b[k], acc);
    acc += (acc4.x + acc4.y) + (acc4.z + acc4.w);
  } else {
    for (long k = 0; k < K; ++k)
      acc = fma(a[k * a_cs], b[k * b_rs], acc);
  }
  __global float* c = C + co + batch * M * N + mi * N + n;
  *c = mm_epilogue(acc, n, bias + bias_o, epi, c);
}

/// The epilogue alone, in place over a contiguous [rows, N] product (after a library GEMM):
/// c[i] = epilogue(c[i]) with bias[i % N]. EPI_GLU is not taken here.
__kernel void epilogue_f32_k(__global float* C, long co, __global const float* bias, long bias_o,
                             long n, long N, int epi) {
  const long i = get_global_id(0);
  if (i < n)
    C[co + i] = mm_epilogue(C[co + i], i % N, bias + bias_o, epi & ~EPI_GLU, C + co + i);
}
