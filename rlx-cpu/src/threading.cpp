// threading.cpp: sizing oneDNN's OpenMP pool and OpenBLAS's pool.
#include "threading.hpp"

#include <cblas.h>
#include <dlfcn.h>

namespace rlx::cpu {

void set_openmp_threads(int n) {
  using SetThreads = void (*)(int);
  static const auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (fn)
    fn(n);
}

void configure_library_threads(int n) {
  if (openblas_get_num_threads() != n)
    openblas_set_num_threads(n);
}

} // namespace rlx::cpu
