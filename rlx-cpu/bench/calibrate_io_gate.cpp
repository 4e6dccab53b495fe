// calibrate_io_gate.cpp: measures the CPU's IO fusion-benefit gate knobs on this machine
// (rlx::cpu::calibrate_cpu_io_gate, the kernel profiler) in several rounds and prints the median
// of each knob next to the checked-in default, then the same medians as the C++ body of
// cpu_io_gate_defaults() (what to paste into src/io_gate_calibration.cpp after measuring on the
// machine the defaults should describe).
// Usage: rlx_cpu_calibrate_io_gate [threads (default 0 = every core)] [rounds (default 5)]
#include "rlx/cpu/backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  rlx::cpu::CpuOptions o;
  if (argc > 1)
    o.num_threads = std::atoi(argv[1]);
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < rounds; ++r) {
    const rlx::fusion::IoFusionGate m = rlx::cpu::calibrate_cpu_io_gate(o);
    samples["dispatch_ns"].push_back(m.dispatch_ns);
    samples["memory_bytes_per_ns"].push_back(m.memory_bytes_per_ns);
    for (const auto& [key, ns] : m.ns_per_element)
      samples[key].push_back(ns);
  }
  const rlx::fusion::IoFusionGate d = rlx::cpu::cpu_io_gate_defaults();
  auto default_of = [&](const std::string& key) {
    if (key == "dispatch_ns")
      return d.dispatch_ns;
    if (key == "memory_bytes_per_ns")
      return d.memory_bytes_per_ns;
    auto it = d.ns_per_element.find(key);
    return it == d.ns_per_element.end() ? 0.0 : it->second;
  };
  std::printf("threads %d, median of %d rounds\n", o.num_threads, rounds);
  std::printf("%-36s %12s %12s %12s %12s\n", "knob", "measured", "min", "max", "default");
  std::map<std::string, double> med;
  for (const auto& [key, v] : samples) {
    med[key] = median(v);
    std::printf("%-36s %12.4f %12.4f %12.4f %12.4f\n", key.c_str(), med[key],
                *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()),
                default_of(key));
  }
  std::printf("\n// cpu_io_gate_defaults():\n");
  std::printf("  g.dispatch_ns = %.0f;\n", med["dispatch_ns"]);
  std::printf("  g.memory_bytes_per_ns = %.1f;\n", med["memory_bytes_per_ns"]);
  std::printf("  g.ns_per_element = {\n");
  for (const auto& [key, v] : med)
    if (key != "dispatch_ns" && key != "memory_bytes_per_ns")
      std::printf("      {\"%s\", %.3f},\n", key.c_str(), v);
  std::printf("  };\n");
  return 0;
}
