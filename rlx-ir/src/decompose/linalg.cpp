// linalg.cpp: decomposition of DotGeneral to Transpose / Reshape / MatMul (the lower-dot-general
// pass of rlx-compile and legalisation both use it).
//
// DotGeneral's output is [batch..., lhs free..., rhs free...]. The lowering permutes the lhs to
// [batch, free, contracting] and the rhs to [batch, contracting, free], merges each group into one
// dim with a Reshape ([B..., M, K] x [B..., K, N]), multiplies, and reshapes the [B..., M, N]
// product to the output. No-op transposes and reshapes are not emitted, and a rhs (or lhs) whose
// free and contracting groups are merely swapped uses MatMul's transpose flag instead of a
// Transpose. Without batch dims, a single contracting dim and a single rhs free dim, several lhs
// free dims stay separate (MatMul broadcasts them as batch dims), so [b, s, k] . [n, k] needs no
// reshape even when b and s are symbolic. Otherwise a group of several dims must be static to be
// merged; a symbolic one makes the node not lowerable (an error naming it).
#include "families.hpp"

#include "rlx/ir/error.hpp"

#include <algorithm>
#include <optional>

namespace rlx::ir {

namespace {

using Dims = std::vector<std::int64_t>;

Dims concat(std::initializer_list<const Dims*> parts) {
  Dims out;
  for (const Dims* p : parts)
    out.insert(out.end(), p->begin(), p->end());
  return out;
}

bool identity(const Dims& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<std::int64_t>(i))
      return false;
  return true;
}

Dims free_dims(std::size_t rank, const Dims& batch, const Dims& contracting) {
  Dims out;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(rank); ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end())
      out.push_back(i);
  return out;
}

NodeId transpose_unless_identity(Builder& b, NodeId x, const Dims& perm) {
  return identity(perm) ? x : b.transpose(x, perm);
}

NodeId reshape_unless_same(Builder& b, NodeId x, const std::vector<Dim>& dims) {
  return b.shape(x).dims == dims ? x : b.reshape(x, dims);
}

/// The one dim standing for the dims \p group of \p s, or nullopt when it cannot be formed.
std::optional<Dim> merged(const Shape& s, const Dims& group) {
  if (group.empty())
    return Dim(1);
  if (group.size() == 1)
    return s[static_cast<std::size_t>(group[0])];
  std::int64_t n = 1;
  for (std::int64_t d : group) {
    const Dim& dim = s[static_cast<std::size_t>(d)];
    if (dim.is_symbolic())
      return std::nullopt;
    n *= dim.size();
  }
  return Dim(n);
}

} // namespace

NodeId lower_dot_general(Builder& b, NodeId id, const DecomposeOptions&, std::string& why) {
  const Node n = b.graph().node(id);
  const auto& a = n.attr<DotGeneralAttrs>();
  const NodeId lhs = n.inputs[0], rhs = n.inputs[1];
  const Shape ls = b.shape(lhs), rs = b.shape(rhs);
  const Dims lf = free_dims(ls.rank(), a.lhs_batch, a.lhs_contracting);
  const Dims rf = free_dims(rs.rank(), a.rhs_batch, a.rhs_contracting);
  const Dims& lb = a.lhs_batch;
  const Dims& lc = a.lhs_contracting;
  const Dims& rb = a.rhs_batch;
  const Dims& rc = a.rhs_contracting;

  // The rhs as [.., K, N] or, with transpose_b, as [.., N, K].
  auto rhs_operand = [&](bool& transpose_b) {
    Dims kn = concat({&rb, &rc, &rf}), nk = concat({&rb, &rf, &rc});
    transpose_b = !identity(kn) && identity(nk);
    return transpose_b ? rhs : transpose_unless_identity(b, rhs, kn);
  };

  if (lb.empty() && lc.size() == 1 && rf.size() == 1 && lf.size() >= 2) {
    Dims lperm = concat({&lf, &lc});
    NodeId l = transpose_unless_identity(b, lhs, lperm);
    bool tb = false;
    NodeId r = rhs_operand(tb);
    return b.matmul(l, r, false, tb);
  }

  const auto m = merged(ls, lf), k = merged(ls, lc), nn = merged(rs, rf);
  if (!m || !k || !nn) {
    why = "it contracts or keeps several dims of which one is symbolic; bind the symbols first";
    return {};
  }
  std::vector<Dim> batch;
  for (std::int64_t d : lb)
    batch.push_back(ls[static_cast<std::size_t>(d)]);

  // lhs as [B.., M, K] (or [B.., K, M] with transpose_a when only the two groups are swapped).
  Dims mk = concat({&lb, &lf, &lc}), km = concat({&lb, &lc, &lf});
  const bool ta = !identity(mk) && identity(km) && lf.size() <= 1 && lc.size() <= 1;
  NodeId l = ta ? lhs : transpose_unless_identity(b, lhs, mk);
  std::vector<Dim> ldims = batch;
  ldims.push_back(ta ? *k : *m);
  ldims.push_back(ta ? *m : *k);
  l = reshape_unless_same(b, l, ldims);

  Dims kn = concat({&rb, &rc, &rf}), nk = concat({&rb, &rf, &rc});
  const bool tb = !identity(kn) && identity(nk) && rf.size() <= 1 && rc.size() <= 1;
  NodeId r = tb ? rhs : transpose_unless_identity(b, rhs, kn);
  std::vector<Dim> rdims = batch;
  rdims.push_back(tb ? *nn : *k);
  rdims.push_back(tb ? *k : *nn);
  r = reshape_unless_same(b, r, rdims);

  NodeId p = b.matmul(l, r, ta, tb);
  return reshape_unless_same(b, p, n.shape.dims);
}

namespace decompose_detail {

void add_linalg_decompositions(DecompositionTable& t) {
  t.set(OpKind::DotGeneral, {{"lower_dot_general", lower_dot_general}});
}

} // namespace decompose_detail

} // namespace rlx::ir
