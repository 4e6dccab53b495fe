// opencl.cpp: a downstream program against the installed rlx-opencl (which brings rlx-compile,
// rlx-fusion and rlx-ir): lists the OpenCL devices and, when there is one, compiles and runs a
// small graph on device 0 and checks it against the reference interpreter. A machine without an
// OpenCL device is not a failure of the package: it prints why and exits 0.
#include <rlx/compile/pipeline.hpp>
#include <rlx/ir/builder.hpp>
#include <rlx/ir/reference.hpp>
#include <rlx/opencl/backend.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

int main() {
  try {
    // pocl keeps its kernel cache under POCL_CACHE_DIR (default ~/.cache/pocl): use a temporary
    // folder unless the environment names one.
    const auto tmp = std::filesystem::temp_directory_path() / "rlx-consumer-opencl";
    ::setenv("POCL_CACHE_DIR", (tmp / "pocl").c_str(), 0);
    std::string why;
    const auto devices = rlx::opencl::list_devices(&why);
    if (devices.empty()) {
      std::printf("consumer_opencl: no OpenCL device (%s)\n", why.c_str());
      return 0;
    }
    for (const auto& d : devices)
      std::printf("consumer_opencl: opencl:%d %s (%s)\n", d.index, d.name.c_str(),
                  d.platform.c_str());

    rlx::ir::Graph g;
    rlx::ir::Builder b(g);
    auto x = b.input("x", rlx::ir::Shape::of({4, 8}));
    auto w = b.param("w", rlx::ir::Shape::of({3, 8}));
    b.output(b.softmax(b.matmul(x, w, false, true)));
    rlx::opencl::OpenClOptions opts;
    opts.cache_dir = (tmp / "programs").string();
    rlx::opencl::OpenClBackend backend(opts);
    auto exe = backend.compile(rlx::compile::CompilePipeline(backend).run(g).lir);
    rlx::ir::Tensor xv(rlx::ir::Shape::of({4, 8})), wv(rlx::ir::Shape::of({3, 8}));
    for (std::int64_t i = 0; i < xv.numel(); ++i)
      xv.set_f64(i, 0.1 * static_cast<double>(i % 7) - 0.3);
    for (std::int64_t i = 0; i < wv.numel(); ++i)
      wv.set_f64(i, 0.05 * static_cast<double>(i % 5) - 0.1);
    exe->set_input("x", xv);
    exe->set_param("w", wv);
    exe->execute();
    const auto want = rlx::ir::reference::evaluate(g, {{"x", xv}}, {{"w", wv}})[0];
    const double err = rlx::ir::max_abs_diff(exe->output(0), want);
    std::printf("consumer_opencl: max |opencl - reference| = %g\n", err);
    return err < 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_opencl: %s\n", e.what());
    return 1;
  }
}
