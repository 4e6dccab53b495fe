// threading.hpp: how the CPU backend's three thread pools share the cores, and the process
// environment that makes them share well (see rlx-cpu/DESIGN.md, "Threading").
//
// Our own kernels run on a TBB arena, oneDNN on its OpenMP (libgomp) pool, OpenBLAS on its pthread
// pool; a run alternates between them, one pool per kernel, never nested. An idle libgomp thread
// spins for a while after every parallel region by default, taking a core from whichever pool runs
// next: on 2 cores that made a BERT layer up to 5× slower. With OMP_WAIT_POLICY=PASSIVE idle OpenMP
// threads sleep at once. libgomp reads its environment when it is loaded, before main(), so the
// setting must be in the environment the process starts with.
#pragma once

#include <span>
#include <string_view>

namespace rlx::cpu {

/// One environment variable the CPU backend wants set when the process starts.
struct EnvSetting {
  std::string_view name;  ///< the variable ("OMP_WAIT_POLICY")
  std::string_view value; ///< the value it should have ("PASSIVE")
};

/// The settings: OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep instead of spinning).
std::span<const EnvSetting> threading_environment();

/// \returns whether this process started with passive OpenMP waiting: OMP_WAIT_POLICY=PASSIVE, or
/// GOMP_SPINCOUNT=0.
bool passive_waiting_active();

/// For a program's main(): when the environment has no OpenMP wait setting of the user's own
/// (OMP_WAIT_POLICY and GOMP_SPINCOUNT both unset) and RLX_NO_REEXEC is unset, adds
/// threading_environment() to it and re-executes the program (/proc/self/exe with \p argv), so
/// that libgomp starts with passive waiting. \returns false when nothing was changed (already set,
/// a user choice, opted out, or the re-exec failed); on success it does not return.
bool reexec_with_threading_environment(char** argv);

} // namespace rlx::cpu
