// stats.cpp: FLOP counting over the lowered graph, and the process's peak RSS.
#include "rlx/runtime/stats.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"

#include <sys/resource.h>

namespace rlx::runtime {
namespace {

double product(const std::vector<ir::Dim>& dims, std::size_t from, std::size_t to) {
  double p = 1;
  for (std::size_t i = from; i < to; ++i)
    p *= static_cast<double>(dims[i].size());
  return p;
}

} // namespace

double count_flops(const ir::Graph& g, const ir::Bindings& bindings) {
  const ir::Graph lowered = ir::has_hir_ops(g) ? ir::lower_hir(g) : g;
  const ir::Graph bound = bindings.empty() ? lowered : lowered.bind(bindings);
  double flops = 0;
  try {
    for (const ir::Node& n : bound.nodes()) {
      if (n.op == ir::OpKind::MatMul) {
        // out [..., M, N]; K is the contracted dim of the lhs.
        const auto& a = bound.shape(n.inputs[0]);
        const auto& at = n.attr<ir::MatMulAttrs>();
        const ir::Dim& k = at.transpose_a ? a[a.rank() - 2] : a[a.rank() - 1];
        flops += 2.0 * product(n.shape.dims, 0, n.shape.rank()) * static_cast<double>(k.size());
      } else if (n.op == ir::OpKind::Attention) {
        // q [B, Sq, H, D] or [B, H, Sq, D]; k likewise with Sk.
        const auto& at = n.attr<ir::AttentionAttrs>();
        const auto& q = bound.shape(n.inputs[0]);
        const auto& k = bound.shape(n.inputs[1]);
        const bool bshd = at.layout == ir::AttnLayout::bshd;
        const double sk = static_cast<double>(k[bshd ? 1 : 2].size());
        flops += 4.0 * product(q.dims, 0, 4) * sk;
      }
    }
  } catch (const ir::ShapeError& e) {
    throw Error(std::string("count_flops: a dim is still symbolic (") + e.what() + ")");
  }
  return flops;
}

std::int64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0)
    return 0;
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024; // Linux reports kilobytes
}

} // namespace rlx::runtime
