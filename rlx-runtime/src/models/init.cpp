// init.cpp: seeded random parameters (scaled by how each parameter is used) and inputs.
#include "rlx/runtime/init.hpp"

#include "rlx/ir/hir.hpp"

#include <cmath>
#include <random>

namespace rlx::runtime {
namespace {

using ir::NodeId;
using ir::OpKind;

/// How a parameter is initialised.
struct InitRule {
  enum Kind { uniform, normal, near_one } kind = uniform;
  double scale = 0.1; ///< half-width (uniform, near_one) or standard deviation (normal)
};

/// FNV-1a of \p s mixed with \p seed: one independent stream per parameter name.
std::uint64_t stream_seed(std::uint64_t seed, const std::string& s) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// The contracted dim of MatMul operand \p slot (0 = lhs, 1 = rhs).
std::int64_t fan_in(const ir::Graph& g, NodeId mm, std::size_t slot) {
  const auto& a = g.node(mm).attr<ir::MatMulAttrs>();
  const ir::Shape& s = g.shape(g.node(mm).inputs[slot]);
  const std::size_t r = s.rank();
  const bool last = slot == 0 ? !a.transpose_a : a.transpose_b; // contracted axis is the last one
  const ir::Dim& d = s[last ? r - 1 : r - 2];
  return d.is_static() ? std::max<std::int64_t>(d.size(), 1) : 1;
}

/// The rule for the parameter at \p id of the (MIR) graph \p g, from its first recognised use.
InitRule rule_for(const ir::Graph& g, NodeId id) {
  for (NodeId u : g.users(id)) {
    const ir::Node& n = g.node(u);
    for (std::size_t slot = 0; slot < n.inputs.size(); ++slot) {
      if (n.inputs[slot] != id)
        continue;
      switch (n.op) {
      case OpKind::MatMul:
        return {InitRule::uniform, 1.0 / std::sqrt(static_cast<double>(fan_in(g, u, slot)))};
      case OpKind::LayerNorm:
      case OpKind::RmsNorm:
        if (slot == 1)
          return {InitRule::near_one, 0.1};
        if (slot == 2)
          return {InitRule::uniform, 0.1};
        break;
      case OpKind::Gather:
        if (slot == 0)
          return {InitRule::normal, 1.0};
        break;
      case OpKind::Conv2d:
        if (slot == 1) {
          const auto sizes = g.shape(id).sizes();
          double fan = 1;
          for (std::size_t i = 1; i < sizes.size(); ++i)
            fan *= static_cast<double>(sizes[i]);
          return {InitRule::uniform, 1.0 / std::sqrt(std::max(fan, 1.0))};
        }
        break;
      case OpKind::Add: {
        NodeId other = n.inputs[1 - slot];
        if (g.node(other).op == OpKind::MatMul)
          return {InitRule::uniform, 1.0 / std::sqrt(static_cast<double>(fan_in(g, other, 1)))};
        break;
      }
      default:
        break;
      }
    }
  }
  return {};
}

void fill(ir::Tensor& t, const InitRule& r, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::normal_distribution<double> nrm(0.0, 1.0);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    double v = 0;
    switch (r.kind) {
    case InitRule::uniform:
      v = r.scale * uni(rng);
      break;
    case InitRule::normal:
      v = r.scale * nrm(rng);
      break;
    case InitRule::near_one:
      v = 1.0 + r.scale * uni(rng);
      break;
    }
    t.set_f64(i, v);
  }
}

} // namespace

TensorMap init_params(const ir::Graph& g, std::uint64_t seed) {
  const ir::Graph mir = ir::has_hir_ops(g) ? ir::lower_hir(g) : g;
  TensorMap out;
  for (NodeId id : mir.params()) {
    const auto& leaf = mir.node(id).attr<ir::LeafAttrs>();
    if (!leaf.shape.is_static())
      throw Error("init_params: param '" + leaf.name + "' has symbolic shape " + leaf.shape.str() +
                  "; bind it first");
    ir::Tensor t(leaf.shape);
    std::mt19937_64 rng(stream_seed(seed, leaf.name));
    fill(t, rule_for(mir, id), rng);
    out.emplace(leaf.name, std::move(t));
  }
  return out;
}

TensorMap random_inputs(const ir::Graph& g, const ir::Bindings& bindings, std::uint64_t seed) {
  TensorMap out;
  for (NodeId id : g.inputs()) {
    const auto& leaf = g.node(id).attr<ir::LeafAttrs>();
    const ir::Shape shape = leaf.shape.bind(bindings);
    if (!shape.is_static())
      throw Error("random_inputs: input '" + leaf.name + "' has unbound dims in " + shape.str());
    ir::Tensor t(shape);
    std::mt19937_64 rng(stream_seed(seed, leaf.name));
    if (ir::is_float(shape.dtype)) {
      fill(t, {InitRule::normal, 1.0}, rng);
    } else {
      // Gather indices range over the table's rows; everything else (masks) is all ones.
      std::int64_t rows = 0;
      for (NodeId u : g.users(id)) {
        const ir::Node& n = g.node(u);
        if (n.op == OpKind::Gather && n.inputs[1] == id) {
          const ir::Shape& table = g.shape(n.inputs[0]);
          auto axis = static_cast<std::size_t>(
              ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, table.rank(), "gather"));
          if (table[axis].is_static())
            rows = table[axis].size();
        }
      }
      std::uniform_int_distribution<std::int64_t> pick(0, std::max<std::int64_t>(rows - 1, 0));
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_i64(i, rows > 0 ? pick(rng) : 1);
    }
    out.emplace(leaf.name, std::move(t));
  }
  return out;
}

} // namespace rlx::runtime
