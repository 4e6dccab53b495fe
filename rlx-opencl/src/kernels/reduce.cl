// reduce.cl: Reduce over any axis set, Softmax / LogSoftmax along any axis.

// Reduce op codes (the order of rlx::ir::ReduceOp).
#define R_SUM 0
#define R_MEAN 1
#define R_MAX 2
#define R_MIN 3
#define R_PROD 4

/// One item per output element. meta: kr, kept dims[kr], kept strides[kr], rr, reduced dims[rr],
/// reduced strides[rr] (strides of the input, in elements). Sums and products accumulate in acc_t;
/// max / min propagate NaN; an empty mean is NaN (the host rejects an empty max / min).
__kernel void reduce_f32_k(__global const float* x, long xo, __global float* y, long yo, long nout,
                           int op, __global const long* meta, long mo) {
  const long o = get_global_id(0);
  if (o >= nout)
    return;
  __global const long* m = meta + mo;
  const long kr = m[0];
  long base = xo, rest = o;
  for (long d = kr - 1; d >= 0; --d) {
    const long dim = m[1 + d];
    base += (rest % dim) * m[1 + kr + d];
    rest /= dim;
  }
  __global const long* r = m + 1 + 2 * kr;
  const long rr = r[0];
  long count = 1;
  for (long d = 0; d < rr; ++d)
    count *= r[1 + d];
  acc_t acc = op == R_PROD ? 1 : 0;
  float best = op == R_MAX ? -INFINITY : INFINITY;
  bool nan = false;
  for (long j = 0; j < count; ++j) {
    long off = 0, l = j;
    for (long d = rr - 1; d >= 0; --d) {
      const long dim = r[1 + d];
      off += (l % dim) * r[1 + rr + d];
      l /= dim;
    }
    const float v = x[base + off];
    switch (op) {
    case R_SUM:
    case R_MEAN: acc += v; break;
    case R_PROD: acc *= v; break;
    case R_MAX: nan = nan || isnan(v); best = fmax(best, v); break;
    case R_MIN: nan = nan || isnan(v); best = fmin(best, v); break;
    }
  }
  float res;
  switch (op) {
  case R_MEAN: res = (float)(acc / (acc_t)count); break;
  case R_MAX:
  case R_MIN: res = nan ? NAN : best; break;
  default: res = (float)acc; break;
  }
  y[yo + o] = res;
}

/// Softmax (log = 0) or LogSoftmax (log = 1) of rows of length len with stride inner: one item
/// per (outer, inner) row; x is [outer, len, inner]. NaN propagates to the whole row.
__kernel void softmax_f32_k(__global const float* x, long xo, __global float* y, long yo,
                            long outer, long len, long inner, int log_softmax) {
  const long g = get_global_id(0);
  if (g >= outer * inner)
    return;
  const long base = (g / inner) * len * inner + g % inner;
  __global const float* p = x + xo + base;
  __global float* q = y + yo + base;
  float mx = -INFINITY;
  for (long j = 0; j < len; ++j) {
    const float v = p[j * inner];
    mx = isnan(v) || isnan(mx) ? NAN : fmax(mx, v);
  }
  acc_t sum = 0;
  for (long j = 0; j < len; ++j)
    sum += exp(p[j * inner] - mx);
  if (log_softmax) {
    const float ls = (float)log(sum);
    for (long j = 0; j < len; ++j)
      q[j * inner] = p[j * inner] - mx - ls;
  } else {
    const float inv = (float)(1 / sum);
    for (long j = 0; j < len; ++j)
      q[j * inner] = exp(p[j * inner] - mx) * inv;
  }
}

/// SoftmaxGrad (log = 0: dx = y (dy - sum(y dy))) or LogSoftmaxGrad (log = 1: dx = dy - exp(y)
/// sum(dy)) along rows of length len with stride inner, one item per (outer, inner) row as
/// softmax_f32_k; the row sum accumulates in acc_t and is rounded once.
__kernel void softmax_grad_f32_k(__global const float* y, long yo, __global const float* dy,
                                 long dyo, __global float* dx, long dxo, long outer, long len,
                                 long inner, int log_softmax) {
  const long g = get_global_id(0);
  if (g >= outer * inner)
    return;
  const long base = (g / inner) * len * inner + g % inner;
  __global const float* py = y + yo + base;
  __global const float* pd = dy + dyo + base;
  __global float* q = dx + dxo + base;
  acc_t sum = 0;
  for (long j = 0; j < len; ++j)
    sum += log_softmax ? pd[j * inner] : py[j * inner] * pd[j * inner];
  const float s = (float)sum;
  for (long j = 0; j < len; ++j) {
    const long k = j * inner;
    q[k] = log_softmax ? pd[k] - exp(py[k]) * s : py[k] * (pd[k] - s);
  }
}
