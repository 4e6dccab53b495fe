// program_cache.hpp (private): builds the kernel program once per process and device, and keeps
// its binary on disk, keyed by device, driver and source hash.
#pragma once

#include "cl.hpp"

#include <cstdint>
#include <string>

namespace rlx::opencl {

/// Where a program came from.
enum class ProgramOrigin : std::uint8_t { source, disk_cache };

/// The 64-bit FNV-1a hash of \p text.
std::uint64_t fnv1a(const std::string& text);

/// The on-disk cache folder: \p configured, else $RLX_OPENCL_CACHE_DIR, else
/// $XDG_CACHE_HOME/rlx/opencl, else $HOME/.cache/rlx/opencl ("" when none can be named).
std::string program_cache_dir(const std::string& configured);

/// The cache key of a program: platform, device name, device and driver versions, build options
/// and source.
std::string program_cache_key(const DeviceInfo& dev, const std::string& options,
                              const std::string& source);

/// Builds \p source with \p options for \p dev in \p ctx: from the binary cached under \p dir when
/// there is one and it loads, else from source (then stores the binary there; a cache folder that
/// cannot be written only costs the next process a rebuild). Throws Error with the build log when
/// the source does not build.
Program build_program(cl_context ctx, const FoundDevice& dev, const std::string& source,
                      const std::string& options, const std::string& dir, ProgramOrigin* origin);

} // namespace rlx::opencl
