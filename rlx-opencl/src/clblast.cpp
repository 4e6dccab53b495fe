// clblast.cpp: CLBlast's SGEMM as a step of the executable, where rlx-opencl was built with CLBlast
// (optional: RLX_OPENCL_HAVE_CLBLAST) and the backend's GEMM choice asks for it.
#include "lower.hpp"

#include "rlx/ir/error.hpp"

#ifdef RLX_OPENCL_HAVE_CLBLAST
#include <clblast_c.h>
#endif

namespace rlx::opencl {

bool have_clblast() {
#ifdef RLX_OPENCL_HAVE_CLBLAST
  return true;
#else
  return false;
#endif
}

GemmPath gemm_path(GemmKernel k, const std::string& device_type, std::int64_t M, std::int64_t N,
                   std::int64_t K, bool k_contiguous, bool library_ok) {
  const bool clblast_ok = library_ok && M > 0 && N > 0 && K > 0;
  switch (k) {
  case GemmKernel::rows:
    return GemmPath::rows;
  case GemmKernel::tiled:
    return GemmPath::tiled;
  case GemmKernel::clblast:
    if (!have_clblast())
      throw Error("rlx-opencl: GemmKernel::clblast was asked for, but rlx-opencl was built "
                  "without CLBlast (install libclblast-dev and reconfigure)");
    return clblast_ok ? GemmPath::clblast : M >= 64 ? GemmPath::tiled : GemmPath::rows;
  case GemmKernel::automatic:
    break;
  }
  // Below 8 rows the rows kernel wins everywhere it was measured (a tile is mostly padding).
  // On a CPU device (pocl) its float4 path beat CLBlast and the tiled kernel at every anchor
  // shape up to 128 rows too. Elsewhere (a GPU: unmeasured) CLBlast, tuned per device, else the
  // tiled kernel from 64 rows.
  if (M < 8 || (device_type == "cpu" && k_contiguous))
    return GemmPath::rows;
  if (clblast_ok && have_clblast())
    return GemmPath::clblast;
  return M >= 64 ? GemmPath::tiled : GemmPath::rows;
}

void clblast_gemm(Lowerer& L, ir::NodeId a, ir::NodeId b, bool transpose_a, bool transpose_b,
                  std::int64_t M, std::int64_t N, std::int64_t K) {
#ifdef RLX_OPENCL_HAVE_CLBLAST
  const Loc la = L.loc(a), lb = L.loc(b), lc = L.loc(L.node());
  const auto el = [](std::int64_t bytes) { return static_cast<std::size_t>(bytes / 4); };
  // Row-major: A is [M, K] (ld K) or, transposed, stored [K, M] (ld M); B likewise.
  const std::size_t lda = static_cast<std::size_t>(transpose_a ? M : K);
  const std::size_t ldb = static_cast<std::size_t>(transpose_b ? K : N);
  const std::string label = ir::describe(L.graph(), L.node());
  L.call(
      [=](cl_command_queue q) {
        cl_command_queue queue = q;
        const CLBlastStatusCode st = CLBlastSgemm(
            CLBlastLayoutRowMajor, transpose_a ? CLBlastTransposeYes : CLBlastTransposeNo,
            transpose_b ? CLBlastTransposeYes : CLBlastTransposeNo, static_cast<std::size_t>(M),
            static_cast<std::size_t>(N), static_cast<std::size_t>(K), 1.0f, la.mem, el(la.offset),
            lda, lb.mem, el(lb.offset), ldb, 0.0f, lc.mem, el(lc.offset),
            static_cast<std::size_t>(N), &queue, nullptr);
        if (st != CLBlastSuccess)
          throw Error("execute: " + label + ": CLBlast SGEMM failed (status " +
                      std::to_string(static_cast<int>(st)) + ")");
      },
      "clblast sgemm " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
#else
  (void)L, (void)a, (void)b, (void)transpose_a, (void)transpose_b, (void)M, (void)N, (void)K;
  throw Error("rlx-opencl: built without CLBlast");
#endif
}

} // namespace rlx::opencl
