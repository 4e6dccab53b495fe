// elementwise.cl: unary and binary f32 math (binary with NumPy broadcasting through strides),
// Compare, Where and Cast.

__kernel void unary_f32_k(__global const float* x, long xo, __global float* y, long yo, long n,
                          int op) {
  const long i = get_global_id(0);
  if (i < n)
    y[yo + i] = unary_f32(op, x[xo + i]);
}

/// SwiGlu: y = silu(gate) * up over equal shapes (silu rounded once, as its decomposition).
__kernel void swiglu_f32_k(__global const float* gate, long go, __global const float* up, long uo,
                           __global float* y, long yo, long n) {
  const long i = get_global_id(0);
  if (i < n)
    y[yo + i] = unary_f32(U_SILU, gate[go + i]) * up[uo + i];
}

/// y[i] = a[.] op b[.]; meta: rank, dims, a strides, b strides (output contiguous).
__kernel void binary_f32_k(__global const float* a, long ao, __global const float* b, long bo,
                           __global float* y, long yo, long n, int op, __global const long* meta,
                           long mo) {
  const long i = get_global_id(0);
  if (i >= n)
    return;
  __global const long* m = meta + mo;
  y[yo + i] = binary_f32(op, a[ao + strided_offset(m, i, 0)], b[bo + strided_offset(m, i, 1)]);
}

/// Compare into bool (uchar 0 / 1) of f32 or integer operands of dtype dt (byte addresses,
/// element strides in meta: rank, dims, a strides, b strides). NaN compares unequal to everything.
__kernel void compare_k(__global const uchar* a, long ao, __global const uchar* b, long bo, int dt,
                        __global uchar* y, long yo, long n, int op, __global const long* meta,
                        long mo) {
  const long i = get_global_id(0);
  if (i >= n)
    return;
  __global const long* m = meta + mo;
  const long ia = strided_offset(m, i, 0), ib = strided_offset(m, i, 1);
  int r;
  if (dt == DT_F32) {
    const float x = ((__global const float*)(a + ao))[ia], z = ((__global const float*)(b + bo))[ib];
    r = compare_op(op, x == z, x < z, x > z);
  } else {
    const long x = load_int(a + ao, ia, dt), z = load_int(b + bo, ib, dt);
    r = compare_op(op, x == z, x < z, x > z);
  }
  y[yo + i] = (uchar)r;
}

/// Where for elements of one storage type T (any dtype of that size); meta: rank, dims, cond
/// strides, a strides, b strides.
#define RLX_WHERE(T)                                                                               \
  __kernel void where_##T(__global const uchar* c, long co, __global const T* a, long ao,          \
                          __global const T* b, long bo, __global T* y, long yo, long n,            \
                          __global const long* meta, long mo) {                                    \
    const long i = get_global_id(0);                                                               \
    if (i >= n)                                                                                    \
      return;                                                                                      \
    __global const long* m = meta + mo;                                                            \
    y[yo + i] = c[co + strided_offset(m, i, 0)] ? a[ao + strided_offset(m, i, 1)]                  \
                                                : b[bo + strided_offset(m, i, 2)];                 \
  }
RLX_WHERE(uchar)
RLX_WHERE(ushort)
RLX_WHERE(uint)
RLX_WHERE(ulong)

/// Cast between f32, i8, i32, i64, u8 and bool (byte offsets): float -> int truncates and
/// saturates (NaN -> 0), int -> narrower int wraps, -> bool tests != 0, -> f32 rounds to nearest.
__kernel void cast_k(__global const uchar* x, long xo, int st, __global uchar* y, long yo, int dt,
                     long n) {
  const long i = get_global_id(0);
  if (i >= n)
    return;
  __global const uchar* p = x + xo;
  __global uchar* q = y + yo;
  if (st == DT_F32) {
    const float v = ((__global const float*)p)[i];
    switch (dt) {
    case DT_F32: ((__global float*)q)[i] = v; break;
    case DT_I8: ((__global char*)q)[i] = convert_char_sat_rtz(v); break;
    case DT_I32: ((__global int*)q)[i] = convert_int_sat_rtz(v); break;
    case DT_I64: ((__global long*)q)[i] = convert_long_sat_rtz(v); break;
    case DT_U8: ((__global uchar*)q)[i] = convert_uchar_sat_rtz(v); break;
    case DT_BOOL: q[i] = v != 0.0f ? 1 : 0; break;
    }
    return;
  }
  long v = 0;
  switch (st) {
  case DT_I8: v = ((__global const char*)p)[i]; break;
  case DT_I32: v = ((__global const int*)p)[i]; break;
  case DT_I64: v = ((__global const long*)p)[i]; break;
  case DT_U8:
  case DT_BOOL: v = p[i]; break;
  }
  switch (dt) {
  case DT_F32: ((__global float*)q)[i] = convert_float_rte(v); break;
  case DT_I8: ((__global char*)q)[i] = (char)v; break;
  case DT_I32: ((__global int*)q)[i] = (int)v; break;
  case DT_I64: ((__global long*)q)[i] = v; break;
  case DT_U8: ((__global uchar*)q)[i] = (uchar)v; break;
  case DT_BOOL: q[i] = v != 0 ? 1 : 0; break;
  }
}

/// Dequantize i8 -> f32: (q - zp) * scale, per tensor (channels = 1) or per channel (channel
/// (i / inner) % channels). meta: per channel its zero point, its scale's f64 bits and its f32
/// bits; computed in double where the device has it, rounded once.
__kernel void dequantize_k(__global const char* q, long qo, __global float* y, long yo, long n,
                           long inner, long channels, __global const long* meta, long mo) {
  const long i = get_global_id(0);
  if (i >= n)
    return;
  __global const long* m = meta + mo + 3 * ((i / inner) % channels);
#ifdef cl_khr_fp64
  y[yo + i] = (float)(((double)q[qo + i] - (double)m[0]) * as_double(m[1]));
#else
  y[yo + i] = (float)(q[qo + i] - m[0]) * as_float((int)m[2]);
#endif
}
