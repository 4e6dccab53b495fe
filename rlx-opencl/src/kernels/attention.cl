// attention.cl: flash-style attention (online softmax, never a materialised score matrix). One
// item per (batch, head, query row) walks the visible keys once, keeping the running max, the
// running sum and a private Dv-accumulator. Every mask kind, GQA, both layouts, scale, softcap and
// Sq != Sk (queries aligned to the last keys).
#define ATTN_MAX_DV 256

// Mask kinds (the order of rlx::ir::MaskKind).
#define M_NONE 0
#define M_CAUSAL 1
#define M_SLIDING 2
#define M_PADDING 3
#define M_BIAS 4

/// Whether element \p i of a padding mask of dtype \p dt at byte address \p p is nonzero.
inline bool mask_keeps(__global const uchar* p, long i, int dt) {
  switch (dt) {
  case DT_F32: return ((__global const float*)p)[i] != 0.0f;
  case DT_F64: return (((__global const ulong*)p)[i] << 1) != 0; // nonzero or NaN
  case DT_F16:
  case DT_BF16: return (((__global const ushort*)p)[i] & 0x7fff) != 0;
  case DT_I32: return ((__global const int*)p)[i] != 0;
  case DT_I64: return ((__global const long*)p)[i] != 0;
  default: return p[i] != 0; // i8, u8, bool
  }
}

/// meta: B, H, KVH, Sq, Sk, D, Dv, then (batch, seq, head) strides of q, k, v and out, then the
/// mask kind, window, the padding mask's dtype, then the bias's (b, h, i, j) strides. The mask
/// operand (byte address) is a [B, Sk] padding mask or an f32 additive bias, else unused.
/// softcap <= 0 means none.
__kernel void attention_f32_k(__global const float* q, long qo, __global const float* k, long ko,
                              __global const float* v, long vo, __global float* out, long oo,
                              __global const uchar* mask, long mbo, float scale, float softcap,
                              __global const long* meta, long mo) {
  __global const long* m = meta + mo;
  const long B = m[0], H = m[1], KVH = m[2], Sq = m[3], Sk = m[4], D = m[5], Dv = m[6];
  const long gid = get_global_id(0);
  if (gid >= B * H * Sq)
    return;
  const long i = gid % Sq, h = (gid / Sq) % H, b = gid / (Sq * H);
  const long kh = h / (H / KVH);
  __global const long* st = m + 7;
  __global const float* qr = q + qo + b * st[0] + i * st[1] + h * st[2];
  __global const float* kb = k + ko + b * st[3] + kh * st[5];
  __global const float* vb = v + vo + b * st[6] + kh * st[8];
  __global float* orow = out + oo + b * st[9] + i * st[10] + h * st[11];
  const int kind = (int)m[19];
  const long window = m[20];
  const int mdt = (int)m[21];
  __global const long* bs = m + 22;
  const long shift = Sk - Sq;

  long jend = Sk, jbegin = 0;
  if (kind == M_CAUSAL || kind == M_SLIDING)
    jend = min(Sk, i + shift + 1);
  if (kind == M_SLIDING)
    jbegin = max(0L, i + shift - window + 1);

  float acc[ATTN_MAX_DV];
  for (long d = 0; d < Dv; ++d)
    acc[d] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  bool nan = false;
  for (long j = jbegin; j < jend; ++j) {
    if (kind == M_PADDING && !mask_keeps(mask + mbo, b * Sk + j, mdt))
      continue;
    __global const float* kr = kb + j * st[4];
    float dot = 0.0f;
    for (long d = 0; d < D; ++d)
      dot = fma(qr[d], kr[d], dot);
    float s = scale * dot;
    if (softcap > 0.0f)
      s = softcap * tanh(s / softcap);
    if (kind == M_BIAS)
      s += ((__global const float*)(mask + mbo))[b * bs[0] + h * bs[1] + i * bs[2] + j * bs[3]];
    if (isnan(s)) {
      nan = true;
      continue;
    }
    if (s == -INFINITY)
      continue; // weight 0 (unless every kept score is -inf: then the row is 0)
    __global const float* vr = vb + j * st[7];
    if (s > mx) {
      const float c = exp(mx - s); // 0 for the first key (mx = -inf)
      sum *= c;
      for (long d = 0; d < Dv; ++d)
        acc[d] *= c;
      mx = s;
    }
    const float p = exp(s - mx);
    sum += p;
    for (long d = 0; d < Dv; ++d)
      acc[d] = fma(p, vr[d], acc[d]);
  }
  if (nan) {
    for (long d = 0; d < Dv; ++d)
      orow[d] = NAN;
    return;
  }
  const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;
  for (long d = 0; d < Dv; ++d)
    orow[d] = acc[d] * inv;
}
