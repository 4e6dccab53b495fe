// calibrate_io_gate.cpp: prints the CPU's IO fusion-benefit gate knobs measured on this machine
// (rlx::cpu::calibrate_cpu_io_gate) next to the checked-in defaults.
// Usage: rlx_cpu_calibrate_io_gate [threads]
#include "rlx/cpu/backend.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  rlx::cpu::CpuOptions o;
  if (argc > 1)
    o.num_threads = std::atoi(argv[1]);
  const rlx::fusion::IoFusionGate m = rlx::cpu::calibrate_cpu_io_gate(o);
  const rlx::fusion::IoFusionGate d = rlx::cpu::cpu_io_gate_defaults();
  std::printf("%-28s %12s %12s\n", "knob", "measured", "default");
  std::printf("%-28s %12.1f %12.1f\n", "dispatch_ns", m.dispatch_ns, d.dispatch_ns);
  std::printf("%-28s %12.2f %12.2f\n", "memory_bytes_per_ns", m.memory_bytes_per_ns,
              d.memory_bytes_per_ns);
  for (const auto& [key, ns] : m.ns_per_element) {
    auto it = d.ns_per_element.find(key);
    std::printf("%-28s %12.3f %12.3f  ns/element\n", key.c_str(), ns,
                it == d.ns_per_element.end() ? 0.0 : it->second);
  }
  return 0;
}
