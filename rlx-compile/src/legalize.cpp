// legalize.cpp: legalisation against a claim set (rewrite until legal) and the legalize pass.
//
// Rounds over the graph: every live non-leaf node the claim set does not support is replaced by a
// decomposition from rlx-ir's table (rlx/ir/decompose.hpp). When an op has several, the first whose
// emitted ops are all supported wins; failing that, the first whose emitted ops are supported or
// decomposable in turn; failing that, the first that applies (its leftovers are reported). New
// nodes are visited in the next round, so decompositions chain (silu -> sigmoid -> exp, div ...).
// The loop stops when a round changes nothing (at most 32 rounds, which bounds a cyclic table).
// Then every node is counted: leaves and supported nodes are native, the rest unsupported.
#include "rlx/compile/legalize.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

#include <unordered_map>

namespace rlx::compile {

namespace {

constexpr int kMaxRounds = 32;
constexpr std::size_t kMaxNamedInError = 8;

bool supported(const ir::ClaimSet& claims, const ir::Graph& g, ir::NodeId id) {
  return ir::is_leaf(g.node(id).op) || claims.supports(g, id);
}

std::string type_text(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  std::string out(ir::dtype_name(n.shape.dtype));
  if (!n.inputs.empty() && g.shape(n.inputs[0]).dtype != n.shape.dtype)
    out = std::string(ir::dtype_name(g.shape(n.inputs[0]).dtype)) + " -> " + out;
  return out;
}

DispatchReport run(ir::Graph& g, const ir::ClaimSet& claims, std::string_view backend,
                   const fusion::PassOptions& opts, bool strict) {
  DispatchReport rep;
  rep.backend = std::string(backend);
  g.compact();
  std::unordered_map<std::uint32_t, std::string> why_not;
  for (int round = 0; round < kMaxRounds; ++round) {
    why_not.clear();
    bool changed = false;
    const std::size_t n = g.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      const ir::NodeId id(i);
      if (g.use_count(id) == 0 || supported(claims, g, id))
        continue;
      const ir::OpKind op = g.node(id).op;
      const auto fns = ir::decompositions(op);
      if (fns.empty()) {
        why_not[i] = "no decomposition into other ops";
        continue;
      }
      std::vector<ir::NodeId> chosen; // one value, or one per part of a tuple-typed op
      int chosen_rank = 3; // 0 all emitted supported, 1 supported or decomposable, 2 applicable
      std::string why;
      for (const ir::Decomposition& form : fns) {
        const std::size_t mark = g.size();
        ir::Builder b(g);
        std::string reason;
        std::vector<ir::NodeId> r = ir::emit_decomposition(form, b, id, opts.decompose, reason);
        if (r.empty()) {
          why += (why.empty() ? "" : "; ") + reason;
          continue;
        }
        int rank = 0;
        for (std::size_t j = mark; j < g.size(); ++j) {
          const ir::NodeId nj(static_cast<std::uint32_t>(j));
          if (!supported(claims, g, nj))
            rank = std::max(rank, ir::has_decomposition(g.node(nj).op) ? 1 : 2);
        }
        if (rank < chosen_rank) {
          chosen = std::move(r);
          chosen_rank = rank;
        }
        if (rank == 0)
          break;
      }
      if (chosen.empty()) {
        why_not[i] = "its decomposition does not apply: " + why;
        continue;
      }
      ir::replace_by_values(g, id, chosen);
      ++rep.by_op[op].rewritten;
      changed = true;
    }
    if (!changed)
      break;
    g.compact();
  }
  for (ir::NodeId id : g.ids()) {
    const ir::OpKind op = g.node(id).op;
    if (supported(claims, g, id)) {
      ++rep.by_op[op].native;
      continue;
    }
    ++rep.by_op[op].unsupported;
    auto it = why_not.find(id.v);
    rep.unsupported_nodes.push_back(
        ir::describe(g, id) + " (" + type_text(g, id) + "): not claimed, " +
        (it != why_not.end() ? it->second : std::string("its decomposition did not converge")));
  }
  if (strict && !rep.unsupported_nodes.empty()) {
    std::string msg = "backend '" + rep.backend + "' cannot run " +
                      std::to_string(rep.unsupported_nodes.size()) + " node(s) of graph '" +
                      g.name() + "': ";
    for (std::size_t i = 0; i < rep.unsupported_nodes.size() && i < kMaxNamedInError; ++i)
      msg += (i ? "; " : "") + rep.unsupported_nodes[i];
    if (rep.unsupported_nodes.size() > kMaxNamedInError)
      msg += "; and " + std::to_string(rep.unsupported_nodes.size() - kMaxNamedInError) + " more";
    throw Error(msg);
  }
  return rep;
}

} // namespace

DispatchReport legalize(ir::Graph& g, const ir::ClaimSet& claims, std::string_view backend,
                        const fusion::PassOptions& opts) {
  return run(g, claims, backend, opts, /*strict=*/true);
}

DispatchReport legalize_partial(ir::Graph& g, const ir::ClaimSet& claims, std::string_view backend,
                                const fusion::PassOptions& opts) {
  return run(g, claims, backend, opts, /*strict=*/false);
}

bool LegalizePass::run(ir::Graph& g, fusion::PassContext& ctx) {
  if (!ctx.claims)
    return false;
  const std::uint64_t before = g.hash();
  DispatchReport rep = legalize(g, *ctx.claims, ctx.backend, ctx.options);
  const bool changed = rep.total().rewritten > 0 || g.hash() != before;
  if (out_)
    *out_ = std::move(rep);
  return changed;
}

} // namespace rlx::compile
