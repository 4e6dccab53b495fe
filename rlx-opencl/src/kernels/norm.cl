// norm.cl: LayerNorm and RMSNorm over the last axis (one 64-item work-group per row, reductions
// in local memory), RoPE (cos / sin tables computed on the host in double).
#define NORM_WG 64

/// The sum of \p v over the work-group (every item gets it).
inline float wg_sum(__local float* red, float v) {
  const int l = get_local_id(0);
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = NORM_WG / 2; s > 0; s >>= 1) {
    if (l < s)
      red[l] += red[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/// y = (x - mean) / sqrt(var + eps) * gamma (+ beta), biased variance, rows of length D.
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1))) void
layer_norm_f32_k(__global const float* x, long xo, __global const float* g, long go,
                 __global const float* b, long bo, int has_beta, __global float* y, long yo,
                 long D, float eps) {
  __local float red[NORM_WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __global const float* p = x + xo + row * D;
  __global float* q = y + yo + row * D;
  float s = 0;
  for (long i = l; i < D; i += NORM_WG)
    s += p[i];
  const float mean = wg_sum(red, s) / (float)D;
  float v = 0;
  for (long i = l; i < D; i += NORM_WG) {
    const float d = p[i] - mean;
    v += d * d;
  }
  const float rstd = 1.0f / sqrt(wg_sum(red, v) / (float)D + eps);
  for (long i = l; i < D; i += NORM_WG)
    q[i] = (p[i] - mean) * rstd * g[go + i] + (has_beta ? b[bo + i] : 0.0f);
}

/// y = x / sqrt(mean(x^2) + eps) * gamma, rows of length D.
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1))) void
rms_norm_f32_k(__global const float* x, long xo, __global const float* g, long go,
               __global float* y, long yo, long D, float eps) {
  __local float red[NORM_WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  __global const float* p = x + xo + row * D;
  __global float* q = y + yo + row * D;
  float s = 0;
  for (long i = l; i < D; i += NORM_WG)
    s += p[i] * p[i];
  const float r = 1.0f / sqrt(wg_sum(red, s) / (float)D + eps);
  for (long i = l; i < D; i += NORM_WG)
    q[i] = p[i] * r * g[go + i];
}

/// RoPE, one item per element of x [B, S, H, D] addressed through (batch, seq, head) strides in
/// either layout (features contiguous). tab holds cos then sin, each [S, n_rot / 2], for positions
/// seq + position_offset. interleaved: pair k is features (2k, 2k+1), else (k, k + n_rot / 2).
__kernel void rope_f32_k(__global const float* x, long xo, __global float* y, long yo,
                         __global const float* tab, long to, long B, long S, long H, long D,
                         long sb, long ss, long sh, long n_rot, int interleaved) {
  const long gid = get_global_id(0);
  if (gid >= B * S * H * D)
    return;
  const long f = gid % D, h = (gid / D) % H, s = (gid / (D * H)) % S, b = gid / (D * H * S);
  const long row = b * sb + s * ss + h * sh;
  __global const float* p = x + xo + row;
  if (f >= n_rot) {
    y[yo + row + f] = p[f];
    return;
  }
  const long hr = n_rot / 2;
  long k, ia, ib;
  if (interleaved) {
    k = f / 2;
    ia = 2 * k;
    ib = ia + 1;
  } else {
    k = f % hr;
    ia = k;
    ib = k + hr;
  }
  const float c = tab[to + s * hr + k], sn = tab[to + S * hr + s * hr + k];
  const float a = p[ia], bb = p[ib];
  y[yo + row + f] = f == ia ? a * c - bb * sn : a * sn + bb * c;
}
