// 00_common.cl: definitions every kernel file shares (this file is embedded first).
//
// Conventions of the whole program:
// - Every tensor argument is a (buffer, offset) pair: the arena chunk that holds it and the
//   tensor's offset in that chunk, in elements of the pointer's type (bytes for uchar pointers).
// - Shapes and strides that do not fit in a few scalars live in the executable's metadata buffer:
//   a kernel gets (meta, mo), the buffer and the index of its first entry.
// - Floating-point: f32 storage, f32 arithmetic unless a row of ops.def needs more; where the
//   device has cl_khr_fp64, sums and pow are computed in double (acc_t) and rounded once.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

// DType codes (the order of rlx::ir::DType).
#define DT_F32 0
#define DT_F64 1
#define DT_F16 2
#define DT_BF16 3
#define DT_I8 4
#define DT_I32 5
#define DT_I64 6
#define DT_U8 7
#define DT_BOOL 8

// Status codes a kernel reports through the executable's status word (first error wins).
#define STATUS_INDEX_OUT_OF_RANGE 1

/// Records error \p code of kernel record \p tag in the status word (the first error wins).
inline void report_error(__global int* status, int tag, int code) {
  if (atomic_cmpxchg(status, 0, code) == 0)
    status[1] = tag;
}

/// Offset of linear element \p i of a strided view: meta holds rank, dims[rank], then stride
/// arrays; \p which selects the stride array (0 = the first after the dims).
inline long strided_offset(__global const long* m, long i, int which) {
  const long r = m[0];
  __global const long* st = m + 1 + r * (1 + which);
  long off = 0;
  for (long d = r - 1; d >= 0; --d) {
    const long dim = m[1 + d];
    off += (i % dim) * st[d];
    i /= dim;
  }
  return off;
}

/// Reads element \p i of integer dtype \p dt (i8, i32, i64, u8, bool) at byte address \p p.
inline long load_int(__global const uchar* p, long i, int dt) {
  switch (dt) {
  case DT_I8: return ((__global const char*)p)[i];
  case DT_I32: return ((__global const int*)p)[i];
  case DT_I64: return ((__global const long*)p)[i];
  default: return p[i]; // u8, bool
  }
}
