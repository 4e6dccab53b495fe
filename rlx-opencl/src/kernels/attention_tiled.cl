// attention_tiled.cl: flash-style attention with local-memory tiles. A work-group of ATTN_TQ
// items takes ATTN_TQ consecutive query rows of one (batch, head), its Q tile in local memory
// (rows padded by one float against bank conflicts); the keys its rows can see stream through
// local memory ATTN_TK at a time (K and V tiles loaded once by the whole group, each element
// read from global memory once per group instead of once per row). Each item keeps its row's
// online softmax: the tile's scores in registers, one rescale per tile (by the tile's max), a
// private Dv-accumulator. Same operands, metadata, masks (every kind), GQA, layouts, scale and
// softcap as attention_f32_k (attention.cl); the host picks one of the two (lower.cpp).
#define ATTN_TQ 16
#define ATTN_TK 16

/// lm: local memory of ATTN_TQ * (D + 1) + ATTN_TK * (D + Dv) floats (set by the host).
__kernel __attribute__((reqd_work_group_size(ATTN_TQ, 1, 1))) void
attention_tiled_f32_k(__global const float* q, long qo, __global const float* k, long ko,
                      __global const float* v, long vo, __global float* out, long oo,
                      __global const uchar* mask, long mbo, float scale, float softcap,
                      __global const long* meta, long mo, __local float* lm) {
  __global const long* m = meta + mo;
  const long H = m[1], KVH = m[2], Sq = m[3], Sk = m[4], D = m[5], Dv = m[6];
  const int l = get_local_id(0);
  const long bh = get_group_id(1), b = bh / H, h = bh % H, kh = h / (H / KVH);
  const long i0 = get_group_id(0) * ATTN_TQ, i = i0 + l;
  const long i1 = min(i0 + ATTN_TQ, Sq) - 1; // the group's last row
  const bool live = i < Sq;
  const attn_meta am = attn_meta_of(m, k, ko, v, vo, mask + mbo, scale, softcap, b, kh);

  // This row's visible keys [jbegin, jend), and the union over the group's rows [glo, ghi).
  long jend = Sk, jbegin = 0, ghi = Sk, glo = 0;
  if (am.kind == M_CAUSAL || am.kind == M_SLIDING) {
    jend = min(Sk, i + am.shift + 1);
    ghi = min(Sk, i1 + am.shift + 1);
  }
  if (am.kind == M_SLIDING) {
    jbegin = max(0L, i + am.shift - am.window + 1);
    glo = max(0L, i0 + am.shift - am.window + 1);
  }

  const long Dp = D + 1;
  __local float* qs = lm;                 // [ATTN_TQ][D + 1]
  __local float* ks = qs + ATTN_TQ * Dp;  // [ATTN_TK][D]
  __local float* vs = ks + ATTN_TK * D;   // [ATTN_TK][Dv]
  for (long e = l; e < ATTN_TQ * D; e += ATTN_TQ) {
    const long r = e / D, d = e % D;
    qs[r * Dp + d] =
        i0 + r < Sq ? q[qo + b * am.st[0] + (i0 + r) * am.st[1] + h * am.st[2] + d] : 0.0f;
  }

  float acc[ATTN_MAX_DV];
  for (long d = 0; d < Dv; ++d)
    acc[d] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  bool nan = false;
  for (long t0 = glo; t0 < ghi; t0 += ATTN_TK) { // the same trip count for every item
    const int n = (int)min((long)ATTN_TK, ghi - t0);
    barrier(CLK_LOCAL_MEM_FENCE); // the Q tile is written; the previous K / V tiles are used
    for (long e = l; e < n * D; e += ATTN_TQ)
      ks[e] = am.kb[(t0 + e / D) * am.st[4] + e % D];
    for (long e = l; e < n * Dv; e += ATTN_TQ)
      vs[e] = am.vb[(t0 + e / Dv) * am.st[7] + e % Dv];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live)
      continue;
    float s[ATTN_TK];
    float tmax = -INFINITY;
    for (int jj = 0; jj < n; ++jj) {
      const long j = t0 + jj;
      s[jj] = -INFINITY; // weight 0: not visible, padded out, or a -inf score
      if (j < jbegin || j >= jend || !attn_kept(am, b * Sk + j))
        continue;
      float dot = 0.0f;
      for (long d = 0; d < D; ++d)
        dot = fma(qs[l * Dp + d], ks[jj * D + d], dot);
      const float sc = attn_score(am, dot, b, h, i, j);
      if (isnan(sc)) {
        nan = true;
        continue;
      }
      s[jj] = sc;
      tmax = fmax(tmax, sc);
    }
    if (tmax > mx) { // one rescale per tile
      const float c = exp(mx - tmax); // 0 while nothing was kept (mx = -inf)
      sum *= c;
      for (long d = 0; d < Dv; ++d)
        acc[d] *= c;
      mx = tmax;
    }
    for (int jj = 0; jj < n; ++jj) {
      if (s[jj] == -INFINITY)
        continue;
      const float p = exp(s[jj] - mx);
      sum += p;
      for (long d = 0; d < Dv; ++d)
        acc[d] = fma(p, vs[jj * Dv + d], acc[d]);
    }
  }
  if (!live)
    return;
  __global float* orow = out + oo + b * am.st[9] + i * am.st[10] + h * am.st[11];
  attn_write_row(orow, acc, Dv, nan, mx, sum);
}
