// pools.hpp (private): how the three thread pools (TBB for our kernels, oneDNN's OpenMP, and
// OpenBLAS's pthreads) are sized. See rlx-cpu/DESIGN.md, "Threading".
#pragma once

namespace rlx::cpu {

/// Sets the OpenMP thread count of the calling thread's next parallel regions (oneDNN's pool) to
/// \p n. oneDNN here is built on libgomp, which rlx does not link directly: the function is looked
/// up at run time and the call is skipped when OpenMP is absent.
void set_openmp_threads(int n);

/// Sets OpenBLAS's (process-wide) thread count to \p n when it differs (a cheap check; called
/// before every run, so executables with different thread counts can share the process).
void configure_library_threads(int n);

} // namespace rlx::cpu
