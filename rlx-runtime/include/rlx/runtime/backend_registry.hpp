// backend_registry.hpp: BackendRegistry, the explicit table of backend factories by device kind.
//
// There are no static initialisers: a registry is filled by explicit calls. builtin_backends()
// registers the backends linked into rlx-runtime (the CPU backend, and OpenCL when built with it),
// and a program may register its own backend for a device kind (replacing the builtin one).
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/runtime/device.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::runtime {

/// Backend factories by device kind.
class BackendRegistry {
public:
  /// Creates the backend of one device; throws Error when the device cannot be used.
  using Factory = std::function<std::unique_ptr<compile::Backend>(const Device&)>;

  /// Registers \p factory for \p kind, replacing any earlier one. \p config describes the options
  /// the factory bakes in (e.g. "gemm=onednn threads=2"); it is part of every compile-cache key,
  /// so caches shared between sessions never mix backends configured differently.
  void add(DeviceKind kind, Factory factory, std::string config = {});
  /// \returns whether a factory is registered for \p kind.
  bool has(DeviceKind kind) const;
  /// Creates the backend of \p device; throws Error naming the device and the registered kinds
  /// when none is registered, or the factory's Error when the device is unusable.
  std::unique_ptr<compile::Backend> create(const Device& device) const;
  /// The config string registered with \p kind ("" when none).
  std::string config(DeviceKind kind) const;
  /// The registered kinds, in enum order.
  std::vector<DeviceKind> kinds() const;
  /// \returns whether nothing is registered.
  bool empty() const { return entries_.empty(); }

private:
  struct Entry {
    Factory factory;
    std::string config;
  };
  std::map<DeviceKind, Entry> entries_;
};

/// Registers the CPU backend with options \p opts in \p registry (device "cpu" only; "cpu:1" is an
/// error).
void register_cpu_backend(BackendRegistry& registry, const cpu::CpuOptions& opts = {});

/// Registers the OpenCL backend in \p registry (devices "opencl:N"); throws Error in a build
/// without OpenCL (RLX_WITH_OPENCL=OFF).
void register_opencl_backend(BackendRegistry& registry);

/// A registry holding every backend built into rlx-runtime: the CPU backend with options \p cpu,
/// and the OpenCL backend when the build has it.
BackendRegistry builtin_backends(const cpu::CpuOptions& cpu = {});

} // namespace rlx::runtime
