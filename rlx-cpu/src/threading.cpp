// threading.cpp: sizing oneDNN's OpenMP pool and OpenBLAS's pool; the process environment for
// passive OpenMP waiting.
#include "pools.hpp"

#include "rlx/cpu/threading.hpp"

#include <cblas.h>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <strings.h>
#include <unistd.h>

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

namespace rlx::cpu {

namespace {
constexpr EnvSetting kSettings[] = {{"OMP_WAIT_POLICY", "PASSIVE"}};
} // namespace

std::span<const EnvSetting> threading_environment() {
  return kSettings;
}

bool passive_waiting_active() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  return (policy && strcasecmp(policy, "passive") == 0) || (spin && std::strcmp(spin, "0") == 0);
}

bool reexec_with_threading_environment(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") ||
      std::getenv("RLX_NO_REEXEC") || argv == nullptr || argv[0] == nullptr)
    return false;
  for (const EnvSetting& s : kSettings)
    setenv(std::string(s.name).c_str(), std::string(s.value).c_str(), 1);
  setenv("RLX_NO_REEXEC", "1", 1); // never loop, whatever happens next
  execv("/proc/self/exe", argv);
  return false; // exec failed: continue with the settings libgomp already read
}

} // namespace rlx::cpu
