// movement.cl: data movement for elements of any dtype, by storage size: one strided copy serves
// Transpose (permuted source strides), Expand (zero strides), Narrow (an offset and the source's
// strides) and each operand of Concat (the destination's strides); Gather.

/// y[dst(i)] = x[src(i)] for i < n; meta: rank, dims, source strides, destination strides.
#define RLX_COPY(T)                                                                                \
  __kernel void copy_##T(__global const T* x, long xo, __global T* y, long yo, long n,             \
                         __global const long* meta, long mo) {                                     \
    const long i = get_global_id(0);                                                               \
    if (i >= n)                                                                                    \
      return;                                                                                      \
    __global const long* m = meta + mo;                                                            \
    y[yo + strided_offset(m, i, 1)] = x[xo + strided_offset(m, i, 0)];                             \
  }
RLX_COPY(uchar)
RLX_COPY(ushort)
RLX_COPY(uint)
RLX_COPY(ulong)

/// out[o, j, r] = table[o, idx[j], r] with table [outer, rows, inner] and n = outer * nidx * inner;
/// an index outside [0, rows) reports STATUS_INDEX_OUT_OF_RANGE (and writes 0).
#define RLX_GATHER(T)                                                                              \
  __kernel void gather_##T(__global const T* table, long to, __global const uchar* idx, long io,   \
                           int idt, __global T* y, long yo, long outer, long rows, long nidx,      \
                           long inner, __global int* status, int tag) {                            \
    const long i = get_global_id(0);                                                               \
    if (i >= outer * nidx * inner)                                                                 \
      return;                                                                                      \
    const long r = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);                      \
    const long k = load_int(idx + io, j, idt);                                                   \
    if (k < 0 || k >= rows) {                                                                      \
      report_error(status, tag, STATUS_INDEX_OUT_OF_RANGE);                                        \
      y[yo + i] = 0;                                                                               \
      return;                                                                                      \
    }                                                                                              \
    y[yo + i] = table[to + (o * rows + k) * inner + r];                                            \
  }
RLX_GATHER(uchar)
RLX_GATHER(ushort)
RLX_GATHER(uint)
RLX_GATHER(ulong)

/// ScatterAdd: out[o, v, r] = target[o, v, r] + the updates[o, j, r] of every j with idx[j] == v,
/// in j order (deterministic, no atomics: one item per output element walks the indices). Target,
/// updates and out of dtype dt (f32, summed in acc_t and rounded once; or an integer type, summed
/// in long and wrapped to its width), byte-addressed; target [outer, rows, inner], updates
/// [outer, nidx, inner]. An index outside [0, rows) reports STATUS_INDEX_OUT_OF_RANGE.
__kernel void scatter_add_k(__global const uchar* target, long to, __global const uchar* idx,
                            long io, int idt, __global const uchar* upd, long uo,
                            __global uchar* y, long yo, int dt, long outer, long rows, long nidx,
                            long inner, __global int* status, int tag) {
  const long i = get_global_id(0);
  if (i >= outer * rows * inner)
    return;
  const long r = i % inner, v = (i / inner) % rows, o = i / (inner * rows);
  __global const uchar* ip = idx + io;
  if (dt == DT_F32) {
    __global const float* u = (__global const float*)(upd + uo) + o * nidx * inner + r;
    acc_t a = ((__global const float*)(target + to))[i];
    for (long j = 0; j < nidx; ++j) {
      const long k = load_int(ip, j, idt);
      if (k < 0 || k >= rows)
        report_error(status, tag, STATUS_INDEX_OUT_OF_RANGE);
      else if (k == v)
        a += u[j * inner];
    }
    ((__global float*)(y + yo))[i] = (float)a;
    return;
  }
  long a = load_int(target + to, i, dt);
  for (long j = 0; j < nidx; ++j) {
    const long k = load_int(ip, j, idt);
    if (k < 0 || k >= rows)
      report_error(status, tag, STATUS_INDEX_OUT_OF_RANGE);
    else if (k == v)
      a = (long)((ulong)a + (ulong)load_int(upd + uo, (o * nidx + j) * inner + r, dt));
  }
  switch (dt) {
  case DT_I8: ((__global char*)(y + yo))[i] = (char)a; break;
  case DT_I32: ((__global int*)(y + yo))[i] = (int)a; break;
  case DT_I64: ((__global long*)(y + yo))[i] = a; break;
  default: (y + yo)[i] = (uchar)a; break;
  }
}
