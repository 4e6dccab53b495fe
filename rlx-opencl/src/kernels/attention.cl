// attention.cl: flash-style attention (online softmax, never a materialised score matrix). One
// item per (batch, head, query row) walks the visible keys once, keeping the running max, the
// running sum and a private Dv-accumulator. Every mask kind, GQA, both layouts, scale, softcap and
// Sq != Sk (queries aligned to the last keys).
//
// It also holds what the three attention kernels share (the program holds attention.cl before
// attention_gpu.cl and attention_tiled.cl): the mask kinds, mask_keeps, the metadata decoder
// attn_meta_of, attn_kept (is a key padded out), attn_score (a score from its dot product) and
// attn_write_row (a row's outputs from its online softmax; the gpu kernel writes its own).
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

/// What every attention kernel decodes beside the shapes (the metadata's layout: see
/// attention_f32_k) for the keys and values of one (batch, KV head), with the mask operand and the
/// score's scale and softcap.
typedef struct {
  __global const long* st;    // the (batch, seq, head) strides of q, k, v and out (12 entries)
  __global const float* kb;   // the keys of (b, kh): key j's row at kb + j * st[4]
  __global const float* vb;   // the values of (b, kh): value j's row at vb + j * st[7]
  int kind;                   // the mask kind (M_*)
  long window;                // M_SLIDING: a row sees its last `window` keys
  int mdt;                    // M_PADDING: the padding mask's dtype
  __global const long* bs;    // M_BIAS: the bias's (b, h, i, j) strides
  long shift;                 // Sk - Sq: query row i is aligned to key i + shift
  __global const uchar* mask; // the mask operand's bytes: a padding mask or the f32 bias
  float scale, softcap;       // a score is scale * q·k, then softcap * tanh(s / softcap) if > 0
} attn_meta;

/// Decodes the attention metadata at \p m for batch \p b, KV head \p kh of keys \p k (offset
/// \p ko) and values \p v (offset \p vo); \p mask is the mask operand's first byte, \p scale and
/// \p softcap the kernel's (see attn_score).
inline attn_meta attn_meta_of(__global const long* m, __global const float* k, long ko,
                              __global const float* v, long vo, __global const uchar* mask,
                              float scale, float softcap, long b, long kh) {
  attn_meta a;
  a.st = m + 7;
  a.kb = k + ko + b * a.st[3] + kh * a.st[5];
  a.vb = v + vo + b * a.st[6] + kh * a.st[8];
  a.kind = (int)m[19];
  a.window = m[20];
  a.mdt = (int)m[21];
  a.bs = m + 22;
  a.shift = m[4] - m[3];
  a.mask = mask;
  a.scale = scale;
  a.softcap = softcap;
  return a;
}

/// Whether element \p bj (= b * Sk + j) of \p a's [B, Sk] padding mask keeps key j of batch b;
/// true under the other mask kinds.
inline bool attn_kept(attn_meta a, long bj) {
  return a.kind != M_PADDING || mask_keeps(a.mask, bj, a.mdt);
}

/// Score (\p b, \p h, \p i, \p j) from its dot product \p dot: scaled, soft-capped, plus the
/// additive bias under M_BIAS.
inline float attn_score(attn_meta a, float dot, long b, long h, long i, long j) {
  float s = a.scale * dot;
  if (a.softcap > 0.0f)
    s = a.softcap * tanh(s / a.softcap);
  if (a.kind == M_BIAS)
    s += ((__global const float*)a.mask)[b * a.bs[0] + h * a.bs[1] + i * a.bs[2] + j * a.bs[3]];
  return s;
}

/// Writes a row's \p Dv outputs to \p orow from its online softmax: the accumulator \p acc over
/// the sum \p sum of its weights; NaN where a score was NaN (\p nan); 0 where no key was kept (the
/// running max \p mx is still -inf).
inline void attn_write_row(__global float* orow, const float* acc, long Dv, bool nan, float mx,
                           float sum) {
  if (nan) {
    for (long d = 0; d < Dv; ++d)
      orow[d] = NAN;
    return;
  }
  const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;
  for (long d = 0; d < Dv; ++d)
    orow[d] = acc[d] * inv;
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
  const attn_meta am = attn_meta_of(m, k, ko, v, vo, mask + mbo, scale, softcap, b, kh);
  __global const float* qr = q + qo + b * am.st[0] + i * am.st[1] + h * am.st[2];
  __global float* orow = out + oo + b * am.st[9] + i * am.st[10] + h * am.st[11];

  long jend = Sk, jbegin = 0;
  if (am.kind == M_CAUSAL || am.kind == M_SLIDING)
    jend = min(Sk, i + am.shift + 1);
  if (am.kind == M_SLIDING)
    jbegin = max(0L, i + am.shift - am.window + 1);

  float acc[ATTN_MAX_DV];
  for (long d = 0; d < Dv; ++d)
    acc[d] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  bool nan = false;
  for (long j = jbegin; j < jend; ++j) {
    if (!attn_kept(am, b * Sk + j))
      continue;
    __global const float* kr = am.kb + j * am.st[4];
    float dot = 0.0f;
    for (long d = 0; d < D; ++d)
      dot = fma(qr[d], kr[d], dot);
    const float s = attn_score(am, dot, b, h, i, j);
    if (isnan(s)) {
      nan = true;
      continue;
    }
    if (s == -INFINITY)
      continue; // weight 0 (unless every kept score is -inf: then the row is 0)
    __global const float* vr = am.vb + j * am.st[7];
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
  attn_write_row(orow, acc, Dv, nan, mx, sum);
}
