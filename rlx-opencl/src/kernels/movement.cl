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
