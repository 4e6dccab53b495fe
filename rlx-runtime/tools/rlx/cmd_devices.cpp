// cmd_devices.cpp: `rlx devices`: the CPU and every OpenCL platform / device (name, memory,
// compute units, extensions), with the names `--device` takes.
#include "commands.hpp"
#include "report.hpp"
#include "rlx/runtime/devices.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace rlx::cli {

namespace {

struct Devices {
  bool json = false;
  bool extensions = false;

  int run() {
    std::string note;
    const auto devices = runtime::available_devices(&note);
    if (json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& d : devices)
        j.push_back({{"device", d.device.str()},
                     {"name", d.name},
                     {"platform", d.platform},
                     {"type", d.type},
                     {"memory_bytes", d.memory_bytes},
                     {"compute_units", d.compute_units},
                     {"extensions", d.extensions}});
      nlohmann::json out{{"devices", j}};
      if (!note.empty())
        out["opencl_note"] = note;
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    for (const auto& d : devices) {
      std::cout << d.device.str() << "\t" << d.name;
      if (!d.platform.empty())
        std::cout << " [" << d.platform << "]";
      std::cout << ", " << d.type << ", " << d.compute_units << " compute units";
      if (d.memory_bytes > 0)
        std::cout << ", " << format_bytes(d.memory_bytes);
      std::cout << "\n";
      if (extensions && !d.extensions.empty())
        std::cout << "\textensions: " << d.extensions << "\n";
    }
    if (!note.empty())
      std::cout << "opencl: " << note << "\n";
    return 0;
  }
};

} // namespace

Command add_devices(CLI::App& root) {
  auto d = std::make_shared<Devices>();
  CLI::App* app = root.add_subcommand("devices", "list the devices rlx can run on (--device)");
  app->add_flag("--json", d->json, "machine-readable output");
  app->add_flag("--extensions", d->extensions, "also list each OpenCL device's extensions");
  return {app, [d] { return d->run(); }};
}

} // namespace rlx::cli
