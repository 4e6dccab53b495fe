// program_cache.cpp: the on-disk program cache.
#include "program_cache.hpp"

#include "rlx/ir/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <unistd.h>

namespace rlx::opencl {

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string program_cache_dir(const std::string& configured) {
  if (!configured.empty())
    return configured;
  if (const char* d = std::getenv("RLX_OPENCL_CACHE_DIR"); d && *d)
    return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/rlx/opencl";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/rlx/opencl";
  return {};
}

std::string program_cache_key(const DeviceInfo& dev, const std::string& options,
                              const std::string& source) {
  const std::string id = dev.platform + '\n' + dev.name + '\n' + dev.version + '\n' + dev.driver +
                         '\n' + options + '\n';
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx-%016llx", static_cast<unsigned long long>(fnv1a(id)),
                static_cast<unsigned long long>(fnv1a(source)));
  return buf;
}

namespace {

std::string build_log(cl_program p, cl_device_id d) {
  std::size_t n = 0;
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n > 0)
    clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

Program from_binary(cl_context ctx, const FoundDevice& dev, const std::vector<unsigned char>& bin,
                    const std::string& options) {
  const unsigned char* ptr = bin.data();
  std::size_t size = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  Program p(clCreateProgramWithBinary(ctx, 1, &dev.id, &size, &ptr, &status, &err));
  if (err != CL_SUCCESS || status != CL_SUCCESS)
    return {};
  if (clBuildProgram(p.get(), 1, &dev.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return {};
  return p;
}

void store_binary(cl_program p, const std::string& dir, const std::string& file) {
  std::size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS ||
      size == 0)
    return;
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS)
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return;
  // Write to a private name, then rename: concurrent processes never read a partial file.
  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bin.data()), static_cast<std::streamsize>(size));
    if (!out)
      return;
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

} // namespace

Program build_program(cl_context ctx, const FoundDevice& dev, const std::string& source,
                      const std::string& options, const std::string& dir, ProgramOrigin* origin) {
  const std::string file = dir.empty()
                               ? std::string()
                               : dir + "/" + program_cache_key(dev.info, options, source) + ".bin";
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::vector<unsigned char> bin((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
      if (!bin.empty())
        if (Program p = from_binary(ctx, dev, bin, options)) {
          if (origin)
            *origin = ProgramOrigin::disk_cache;
          return p;
        }
    }
  }
  const char* src = source.c_str();
  std::size_t len = source.size();
  cl_int err = CL_SUCCESS;
  Program p(clCreateProgramWithSource(ctx, 1, &src, &len, &err));
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(p.get(), 1, &dev.id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS)
    throw Error("rlx-opencl: the kernel program does not build on " + dev.info.name + " (" +
                cl_error_name(err) + "):\n" + build_log(p.get(), dev.id));
  if (!file.empty())
    store_binary(p.get(), dir, file);
  if (origin)
    *origin = ProgramOrigin::source;
  return p;
}

} // namespace rlx::opencl
