// device_choice.cpp: measure_device_cost and rank_devices, the machinery of `--device auto`.
#include "rlx/runtime/device_choice.hpp"

#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/runtime/devices.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>

namespace rlx::runtime {

namespace {

using ir::DType;
using ir::Shape;

/// Median seconds of 7 runs of \p g (inputs "a", "b" filled with small values) after a warm-up.
double time_graph(const Session& session, const ir::Graph& g) {
  Executable exe = session.compile(g);
  std::map<std::string, ir::Tensor> in;
  for (const auto& [name, type] : exe.inputs()) {
    ir::Tensor t(type);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, 0.001 * static_cast<double>(i % 97));
    in.emplace(name, std::move(t));
  }
  (void)exe.run(in);
  std::vector<double> s;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)exe.run(in);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(s.begin(), s.begin() + 3, s.end());
  return s[3];
}

ir::Graph add_graph(std::int64_t n) {
  ir::Graph g("calibrate_add");
  ir::Builder b(g);
  const ir::NodeId a = b.input("a", Shape::of({n}, DType::f32));
  const ir::NodeId c = b.input("b", Shape::of({n}, DType::f32));
  b.output(b.add(a, c));
  return g;
}

ir::Graph matmul_graph(std::int64_t n) {
  ir::Graph g("calibrate_matmul");
  ir::Builder b(g);
  const ir::NodeId a = b.input("a", Shape::of({n, n}, DType::f32));
  const ir::NodeId c = b.input("b", Shape::of({n, n}, DType::f32));
  b.output(b.matmul(a, c));
  return g;
}

} // namespace

compile::DeviceCost measure_device_cost(const Session& session) {
  static std::mutex mu;
  static std::map<Device, compile::DeviceCost> memo;
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(session.device()); it != memo.end())
      return it->second;
  }
  constexpr std::int64_t kElems = std::int64_t{1} << 22, kGemm = 512;
  const double launch = time_graph(session, add_graph(1));
  const double add = time_graph(session, add_graph(kElems));
  const double gemm = time_graph(session, matmul_graph(kGemm));
  compile::DeviceCost c;
  c.launch_s = launch;
  // What the large runs spend beyond one kernel's fixed cost (never below a tenth of the run,
  // so a noisy fixed cost cannot make a rate infinite).
  c.bytes_per_s = 3.0 * 4 * static_cast<double>(kElems) / std::max(add - launch, 0.1 * add);
  c.flops_per_s =
      2.0 * static_cast<double>(kGemm * kGemm * kGemm) / std::max(gemm - launch, 0.1 * gemm);
  std::lock_guard lock(mu);
  memo.emplace(session.device(), c);
  return c;
}

std::vector<DevicePrediction> rank_devices(const ir::Graph& g, const ir::Bindings& bindings,
                                           const CompileOptions& opts,
                                           const SessionOptions& session_opts) {
  std::vector<DevicePrediction> out;
  for (const DeviceDescription& d : available_devices()) {
    DevicePrediction p;
    p.device = d.device;
    p.name = d.name;
    p.seconds = std::numeric_limits<double>::infinity();
    try {
      Session session(d.device, session_opts);
      compile::CompileOptions co;
      co.bindings = bindings;
      co.fold_constants = opts.fold_constants;
      co.fuse = opts.fuse;
      const ir::Module lir = compile::CompilePipeline(session.backend(), co).run(g).lir;
      p.kernels = static_cast<int>(compile::kernel_work(lir).size());
      p.cost = measure_device_cost(session);
      p.seconds = compile::predict_seconds(lir, p.cost);
    } catch (const Error& e) {
      p.why_not = e.what();
    }
    out.push_back(std::move(p));
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const DevicePrediction& a, const DevicePrediction& b) { return a.seconds < b.seconds; });
  if (out.empty() || !out.front().why_not.empty())
    throw Error("--device auto: no device can run graph '" + g.name() + "'" +
                (out.empty() ? std::string()
                             : ": " + out.front().device.str() + ": " + out.front().why_not));
  return out;
}

} // namespace rlx::runtime
