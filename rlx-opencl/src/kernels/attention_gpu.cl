// attention_gpu.cl: flash-style attention shaped for a GPU. A work-group of ATTNG_WG (64) items
// takes ATTNG_BQ (8) consecutive query rows of one (batch, head) and streams the keys its rows
// can see through local memory ATTNG_TK (= ATTNG_WG) at a time. Per key tile, the group works
// cooperatively instead of one item per row:
// - scores: item l scores key l of the tile against all ATTNG_BQ rows (the Q block in local
//   memory is read as a broadcast, the K tile with rows padded by one float);
// - softmax: ATTNG_LANES (8) items per row each take every 8th score of the row; the row's tile
//   max and sum are work-group reductions through local memory (one rescale per tile);
// - P·V: the row's ATTNG_LANES items each own every 8th output feature (a private accumulator of
//   at most ATTN_MAX_DV / ATTNG_LANES floats).
// Same operands, metadata, masks (every kind), GQA, layouts, scale, softcap and Sq != Sk as
// attention_f32_k (attention.cl); the host picks it on GPU devices where its local memory fits.
#define ATTNG_WG 64
#define ATTNG_BQ 8
#define ATTNG_TK 64
#define ATTNG_LANES (ATTNG_WG / ATTNG_BQ)
#define ATTNG_NACC (ATTN_MAX_DV / ATTNG_LANES)
#define ATTNG_PS (ATTNG_TK + 1) // a score row, padded: the rows a warp reads at once hit other banks

/// lm: local memory of ATTNG_BQ * D + ATTNG_TK * (D + 1) + ATTNG_TK * Dv + ATTNG_BQ * ATTNG_PS
/// + ATTNG_WG floats plus ATTNG_BQ ints (set by the host).
__kernel __attribute__((reqd_work_group_size(ATTNG_WG, 1, 1))) void
attention_gpu_f32_k(__global const float* q, long qo, __global const float* k, long ko,
                    __global const float* v, long vo, __global float* out, long oo,
                    __global const uchar* mask, long mbo, float scale, float softcap,
                    __global const long* meta, long mo, __local float* lm) {
  __global const long* m = meta + mo;
  const long H = m[1], KVH = m[2], Sq = m[3], Sk = m[4];
  // Head dims and every local-memory index in 32 bits (64-bit integer math is slow on a GPU; the
  // host bounds Dv by 256 and D by the local memory).
  const int D = (int)m[5], Dv = (int)m[6];
  const int l = get_local_id(0);
  const long bh = get_group_id(1), b = bh / H, h = bh % H, kh = h / (H / KVH);
  const long i0 = get_group_id(0) * ATTNG_BQ;
  const long i1 = min(i0 + ATTNG_BQ, Sq) - 1; // the group's last live row
  const attn_meta am = attn_meta_of(m, k, ko, v, vo, mask + mbo, scale, softcap, b, kh);

  // The union of the group's visible keys [glo, ghi).
  long ghi = Sk, glo = 0;
  if (am.kind == M_CAUSAL || am.kind == M_SLIDING)
    ghi = min(Sk, i1 + am.shift + 1);
  if (am.kind == M_SLIDING)
    glo = max(0L, i0 + am.shift - am.window + 1);

  const int Dp = D + 1;
  __local float* qs = lm;                    // [ATTNG_BQ][D]
  __local float* ks = qs + ATTNG_BQ * D;     // [ATTNG_TK][D + 1]
  __local float* vs = ks + ATTNG_TK * Dp;    // [ATTNG_TK][Dv]
  __local float* ps = vs + ATTNG_TK * Dv;    // [ATTNG_BQ][ATTNG_PS]: scores, then weights
  __local float* red = ps + ATTNG_BQ * ATTNG_PS; // [ATTNG_WG]: partial maxima / sums
  __local int* nanrow = (__local int*)(red + ATTNG_WG); // [ATTNG_BQ]: a NaN score was seen
  for (int rr = 0; rr < ATTNG_BQ; ++rr) { // no division per element: rows, then features
    __global const float* qr = q + qo + b * am.st[0] + (i0 + rr) * am.st[1] + h * am.st[2];
    for (int d = l; d < D; d += ATTNG_WG)
      qs[rr * D + d] = i0 + rr < Sq ? qr[d] : 0.0f;
  }
  if (l < ATTNG_BQ)
    nanrow[l] = 0;

  // This item's row and lane for the softmax and P·V; its row's visible keys [jbegin, jend).
  const int r = l / ATTNG_LANES, lane = l % ATTNG_LANES;
  const long i = i0 + r;
  const bool live = i < Sq;
  const int ndv = (Dv - lane + ATTNG_LANES - 1) / ATTNG_LANES; // features lane + 8t < Dv
  // The accumulator loops run to the constant ATTNG_NACC, fully unrolled with a guard, so that a
  // GPU compiler keeps acc[] in registers (a loop to the run-time ndv would index it dynamically
  // and place it in off-chip private memory).
  float acc[ATTNG_NACC];
#pragma unroll
  for (int t = 0; t < ATTNG_NACC; ++t)
    acc[t] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;

  for (long t0 = glo; t0 < ghi; t0 += ATTNG_TK) { // the same trip count for every item
    const int n = (int)min((long)ATTNG_TK, ghi - t0);
    barrier(CLK_LOCAL_MEM_FENCE); // the Q block is written; the previous tiles are used
    for (int jj = 0; jj < n; ++jj) { // no division per element: rows, then features
      __global const float* kr = am.kb + (t0 + jj) * am.st[4];
      __global const float* vr = am.vb + (t0 + jj) * am.st[7];
      for (int d = l; d < D; d += ATTNG_WG)
        ks[jj * Dp + d] = kr[d];
      for (int d = l; d < Dv; d += ATTNG_WG)
        vs[jj * Dv + d] = vr[d];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // Scores: item l takes key j = t0 + l against every row of the block.
    if (l < n) {
      const long j = t0 + l;
      float dot[ATTNG_BQ];
#pragma unroll
      for (int rr = 0; rr < ATTNG_BQ; ++rr)
        dot[rr] = 0.0f;
      for (int d = 0; d < D; ++d) {
        const float kv = ks[l * Dp + d];
#pragma unroll
        for (int rr = 0; rr < ATTNG_BQ; ++rr)
          dot[rr] = fma(qs[rr * D + d], kv, dot[rr]);
      }
      const bool kept = attn_kept(am, b * Sk + j);
#pragma unroll
      for (int rr = 0; rr < ATTNG_BQ; ++rr) {
        const long ir = i0 + rr;
        float sc = -INFINITY; // weight 0: not visible, padded out, a dead row or a -inf score
        const bool visible =
            ir < Sq && kept &&
            ((am.kind != M_CAUSAL && am.kind != M_SLIDING) || j < min(Sk, ir + am.shift + 1)) &&
            (am.kind != M_SLIDING || j >= ir + am.shift - am.window + 1);
        if (visible) {
          sc = attn_score(am, dot[rr], b, h, ir, j);
          if (isnan(sc)) {
            nanrow[rr] = 1;
            sc = -INFINITY;
          }
        }
        ps[rr * ATTNG_PS + l] = sc;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // The row's tile max: each lane over every ATTNG_LANES-th score, then across the lanes.
    float pm = -INFINITY;
    for (int jj = lane; jj < n; jj += ATTNG_LANES)
      pm = fmax(pm, ps[r * ATTNG_PS + jj]);
    red[l] = pm;
    barrier(CLK_LOCAL_MEM_FENCE);
    float tmax = -INFINITY;
    for (int x = 0; x < ATTNG_LANES; ++x)
      tmax = fmax(tmax, red[r * ATTNG_LANES + x]);
    const float mnew = fmax(mx, tmax);
    // Weights against the new max (in place), and the lane's part of their sum.
    float psum = 0.0f;
    for (int jj = lane; jj < n; jj += ATTNG_LANES) {
      const float s = ps[r * ATTNG_PS + jj];
      const float p = s == -INFINITY ? 0.0f : exp(s - mnew);
      ps[r * ATTNG_PS + jj] = p;
      psum += p;
    }
    barrier(CLK_LOCAL_MEM_FENCE); // every lane read red[] (the maxima) and wrote its weights
    red[l] = psum;
    barrier(CLK_LOCAL_MEM_FENCE);
    float tsum = 0.0f;
    for (int x = 0; x < ATTNG_LANES; ++x)
      tsum += red[r * ATTNG_LANES + x];
    if (mnew > mx) { // one rescale per tile; 0 while nothing was kept (mx = -inf)
      const float c = exp(mx - mnew);
      sum *= c;
#pragma unroll
      for (int t = 0; t < ATTNG_NACC; ++t)
        acc[t] *= c;
      mx = mnew;
    }
    sum += tsum;
    // P·V: the lane's features of its row.
    for (int jj = 0; jj < n; ++jj) {
      const float p = ps[r * ATTNG_PS + jj];
      __local const float* vr = vs + jj * Dv + lane;
#pragma unroll
      for (int t = 0; t < ATTNG_NACC; ++t)
        if (t < ndv)
          acc[t] = fma(p, vr[t * ATTNG_LANES], acc[t]);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE); // every NaN flag is written (also when no tile ran)
  if (!live)
    return;
  __global float* orow = out + oo + b * am.st[9] + i * am.st[10] + h * am.st[11];
  const bool nan = nanrow[r] != 0;
  const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;
#pragma unroll
  for (int t = 0; t < ATTNG_NACC; ++t)
    if (t < ndv)
      orow[lane + t * ATTNG_LANES] = nan ? NAN : acc[t] * inv;
}
