// norm_fused.cl: the fused residual norms (ResidualLayerNorm, ResidualRmsNorm) and the norms'
// backward ops (LayerNormGrad, RmsNormGrad). Rows as in norm.cl: one NORM_WG-item work-group per
// row, statistics through wg_sum (local-memory tree sums, two-pass variance).

/// s = x + r into part 0 (rounded to f32), then the norm of s as stored into part 1:
/// LayerNorm (rms = 0: (s - mean) / sqrt(var + eps) * gamma (+ beta), biased variance) or
/// RMSNorm (rms = 1: s / sqrt(mean(s^2) + eps) * gamma). Rows of length D.
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1))) void
residual_norm_f32_k(__global const float* x, long xo, __global const float* r, long ro,
                    __global const float* g, long go, __global const float* b, long bo,
                    int has_beta, __global float* s, long so, __global float* y, long yo, long D,
                    float eps, int rms) {
  __local float red[NORM_WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __global const float* px = x + xo + row * D;
  __global const float* pr = r + ro + row * D;
  __global float* ps = s + so + row * D;
  __global float* py = y + yo + row * D;
  float sum = 0;
  for (long i = l; i < D; i += NORM_WG) {
    const float v = px[i] + pr[i];
    ps[i] = v;
    sum += v;
  }
  // rms is uniform over the group, so every item takes the same branch through the barriers.
  const float mean = rms ? 0.0f : wg_sum(red, sum) / (float)D;
  float var = 0;
  for (long i = l; i < D; i += NORM_WG) {
    const float d = ps[i] - mean; // this item's own stores
    var += d * d;
  }
  const float rstd = 1.0f / sqrt(wg_sum(red, var) / (float)D + eps);
  for (long i = l; i < D; i += NORM_WG)
    py[i] = (ps[i] - mean) * rstd * g[go + i] + (has_beta ? b[bo + i] : 0.0f);
}

/// The row part of LayerNormGrad (ln = 1) / RmsNormGrad (ln = 0): xh = (x - mean) r,
/// r = 1 / sqrt(var + eps), g = dy gamma; dx = r (g - mean(g) - xh mean(g xh)) (no mean(g) for
/// RMSNorm, whose mean is 0). Each row's (mean, r) goes to stats[2 row ..] for the column sums.
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1))) void
norm_grad_rows_f32_k(__global const float* x, long xo, __global const float* gamma, long go,
                     __global const float* dy, long dyo, __global float* dx, long dxo,
                     __global float* stats, long sto, long D, float eps, int ln) {
  __local float red[NORM_WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __global const float* px = x + xo + row * D;
  __global const float* pdy = dy + dyo + row * D;
  __global float* pdx = dx + dxo + row * D;
  __global const float* pg = gamma + go;
  float s = 0;
  if (ln) {
    for (long i = l; i < D; i += NORM_WG)
      s += px[i];
  }
  const float mean = ln ? wg_sum(red, s) / (float)D : 0.0f;
  float v = 0;
  for (long i = l; i < D; i += NORM_WG) {
    const float d = px[i] - mean;
    v += d * d;
  }
  const float r = 1.0f / sqrt(wg_sum(red, v) / (float)D + eps);
  float sg = 0, sgx = 0;
  for (long i = l; i < D; i += NORM_WG) {
    const float gi = pdy[i] * pg[i];
    sg += gi;
    sgx += gi * ((px[i] - mean) * r);
  }
  const float mg = ln ? wg_sum(red, sg) / (float)D : 0.0f;
  const float mgx = wg_sum(red, sgx) / (float)D;
  for (long i = l; i < D; i += NORM_WG) {
    const float xh = (px[i] - mean) * r;
    pdx[i] = r * (pdy[i] * pg[i] - mg - xh * mgx);
  }
  if (l == 0) {
    stats[sto + 2 * row] = mean;
    stats[sto + 2 * row + 1] = r;
  }
}

/// The parameter part of LayerNormGrad / RmsNormGrad, first level: item (j, p) sums column j
/// over row block p ([p chunk, (p + 1) chunk) of the rows, in order) into part[p 2D + j] (dy xh,
/// for dgamma) and part[p 2D + D + j] (dy, for dbeta; ln = 1), summed in acc_t; (mean, r) of
/// each row from norm_grad_rows_f32_k. Deterministic: no atomics, a fixed order.
__kernel void norm_grad_partials_f32_k(__global const float* x, long xo, __global const float* dy,
                                       long dyo, __global const float* stats, long sto,
                                       __global float* part, long po, long rows, long D,
                                       long chunk, int ln) {
  const long j = get_global_id(0), p = get_global_id(1);
  if (j >= D)
    return;
  acc_t sg = 0, sb = 0;
  const long end = min(rows, (p + 1) * chunk);
  for (long row = p * chunk; row < end; ++row) {
    const float d = dy[dyo + row * D + j];
    const float xh = (x[xo + row * D + j] - stats[sto + 2 * row]) * stats[sto + 2 * row + 1];
    sg += d * xh;
    sb += d;
  }
  part[po + p * 2 * D + j] = (float)sg;
  if (ln)
    part[po + p * 2 * D + D + j] = (float)sb;
}

/// Second level: dgamma[j] (and dbeta[j], ln = 1) = the sum of the \p blocks partial sums of
/// column j, in block order, in acc_t, rounded once.
__kernel void norm_grad_params_f32_k(__global const float* part, long po, __global float* dgamma,
                                     long dgo, __global float* dbeta, long dbo, long blocks,
                                     long D, int ln) {
  const long j = get_global_id(0);
  if (j >= D)
    return;
  acc_t sg = 0, sb = 0;
  for (long p = 0; p < blocks; ++p) {
    sg += part[po + p * 2 * D + j];
    if (ln)
      sb += part[po + p * 2 * D + D + j];
  }
  dgamma[dgo + j] = (float)sg;
  if (ln)
    dbeta[dbo + j] = (float)sb;
}
