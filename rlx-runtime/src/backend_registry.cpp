// backend_registry.cpp: the backend registry and the registration of the builtin backends.
#include "rlx/runtime/backend_registry.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::runtime {

void BackendRegistry::add(DeviceKind kind, Factory factory, std::string config) {
  if (!factory)
    throw Error("BackendRegistry::add: empty factory for " + std::string(device_kind_name(kind)));
  entries_[kind] = Entry{std::move(factory), std::move(config)};
}

bool BackendRegistry::has(DeviceKind kind) const {
  return entries_.count(kind) != 0;
}

std::unique_ptr<compile::Backend> BackendRegistry::create(const Device& device) const {
  auto it = entries_.find(device.kind);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [k, e] : entries_)
      known += (known.empty() ? "" : ", ") + std::string(device_kind_name(k));
    throw Error("no backend for device '" + device.str() +
                "' (this build has: " + (known.empty() ? std::string("none") : known) + ")");
  }
  auto backend = it->second.factory(device);
  if (!backend)
    throw Error("the backend factory for '" + device.str() + "' returned nothing");
  return backend;
}

std::string BackendRegistry::config(DeviceKind kind) const {
  auto it = entries_.find(kind);
  return it == entries_.end() ? std::string() : it->second.config;
}

std::vector<DeviceKind> BackendRegistry::kinds() const {
  std::vector<DeviceKind> out;
  for (const auto& [k, e] : entries_)
    out.push_back(k);
  return out;
}

void register_cpu_backend(BackendRegistry& registry, const cpu::CpuOptions& opts) {
  std::string config =
      std::string("gemm=") + std::string(cpu::gemm_provider_name(opts.gemm)) +
      " threads=" + std::to_string(opts.num_threads) + " io_gate=" +
      (opts.use_io_gate ? (opts.io_gate ? *opts.io_gate : cpu::cpu_io_gate_defaults()).fingerprint()
                        : std::string("off"));
  registry.add(
      DeviceKind::cpu,
      [opts](const Device& d) {
        if (d.index != 0)
          throw Error("device '" + d.str() + "': there is one CPU device, 'cpu'");
        return cpu::make_cpu_backend(opts);
      },
      std::move(config));
}

BackendRegistry builtin_backends(const cpu::CpuOptions& cpu) {
  BackendRegistry r;
  register_cpu_backend(r, cpu);
#ifdef RLX_HAS_OPENCL
  register_opencl_backend(r);
#endif
  return r;
}

} // namespace rlx::runtime
