// vmap_rules.cpp: the batching rule table, one row per non-leaf op of ops.def.
//
// Every batched value carries the batch dim at axis 0. Elementwise ops align a batched operand's
// rank with a reshape (a view) and let NumPy broadcasting share the unbatched ones; axis-taking
// ops shift their axis past the batch dim; ops with a fixed-rank batch dim of their own (Attention,
// Rope, Conv2d, Pool2d, SoftmaxCrossEntropy) fold the vmap batch into it; Gather / ScatterAdd
// with batched data and indices flatten the batch into the indexed axis.
#include "helpers.hpp"
#include "vmap_internal.hpp"

#include <array>
#include <optional>

namespace rlx::autodiff {

using namespace detail;
using ir::Dim;
using ir::OpKind;

namespace {

using Ctx = VmapContext;

std::int64_t axis_after_batch(std::int64_t axis, std::size_t rank) {
  return ir::normalize_axis(axis, rank, "vmap") + 1;
}

std::int64_t static_size(Ctx& c, const Dim& d, const char* what) {
  if (!d.is_static())
    c.fail(std::string("needs a static ") + what + " (give VmapOptions::size), got " + d.str());
  return d.size();
}

// ---- elementwise ------------------------------------------------------------------------------

NodeId elementwise(Ctx& c) {
  std::size_t r = 0;
  for (std::size_t i = 0; i < c.in.size(); ++i)
    r = std::max(r, c.rank(i));
  std::vector<NodeId> ins;
  for (std::size_t i = 0; i < c.in.size(); ++i)
    ins.push_back(c.aligned(i, r));
  ir::Attrs attrs = c.node.attrs;
  if (auto* q = std::get_if<ir::QuantAttrs>(&attrs); q && q->axis)
    q->axis = axis_after_batch(*q->axis, r);
  return c.b.op(c.node.op, std::move(ins), attrs);
}

// ---- movement ---------------------------------------------------------------------------------

/// [B] + the node's per-example dims: a Reshape / Expand target with its -1 entries resolved (an
/// inferred Reshape dim needs static inputs, which a symbolic batch is not).
std::vector<Dim> batched_dims(Ctx& c) {
  std::vector<Dim> t{c.size};
  t.insert(t.end(), c.node.shape.dims.begin(), c.node.shape.dims.end());
  return t;
}

NodeId reshape(Ctx& c) {
  return c.b.reshape(c.in[0], batched_dims(c));
}

NodeId expand(Ctx& c) {
  return c.b.expand(c.aligned(0, c.node.shape.rank()), batched_dims(c));
}

NodeId transpose(Ctx& c) {
  std::vector<std::int64_t> perm{0};
  for (auto p : c.node.attr<ir::TransposeAttrs>().perm)
    perm.push_back(ir::normalize_axis(p, c.rank(0), "vmap transpose") + 1);
  return c.b.transpose(c.in[0], perm);
}

NodeId narrow(Ctx& c) {
  ir::NarrowAttrs a = c.node.attr<ir::NarrowAttrs>();
  a.axis = axis_after_batch(a.axis, c.rank(0));
  return c.b.op(OpKind::Narrow, {c.in[0]}, a);
}

NodeId concat(Ctx& c) {
  std::vector<NodeId> xs;
  for (std::size_t i = 0; i < c.in.size(); ++i)
    xs.push_back(c.lifted(i)); // a concatenated value is part of every slice
  return c.b.concat(xs, axis_after_batch(c.node.attr<ir::AxisAttrs>().axis, c.rank(0)));
}

NodeId split(Ctx& c) {
  ir::SplitAttrs a = c.node.attr<ir::SplitAttrs>();
  a.axis = axis_after_batch(a.axis, c.rank(0));
  return c.b.op(OpKind::Split, {c.in[0]}, a);
}

NodeId get(Ctx& c) {
  return c.b.op(OpKind::Get, {c.in[0]}, c.node.attrs);
}

/// Batched data [B, t...] indexed along per-example axis \p a by batched indices [B, i...]: the
/// batch folded into the indexed axis ([B * t_a, rest...]) and each slice's indices offset by
/// b * t_a. An index outside [0, t_a) maps to B * t_a, outside the folded axis, so it stays an
/// error (never a read of another slice).
struct Flat {
  NodeId data;     ///< [B * t_a, t[:a], t[a+1:]]
  NodeId indices;  ///< [B, i...]
  std::int64_t ta; ///< t_a
};

std::vector<std::int64_t> to_front(std::size_t rank, std::size_t a) {
  // [0, a+1, 1..a, a+2..rank): batch, the indexed axis, then the others in order
  std::vector<std::int64_t> p{0, static_cast<std::int64_t>(a + 1)};
  for (std::size_t i = 1; i < rank; ++i)
    if (i != a + 1)
      p.push_back(static_cast<std::int64_t>(i));
  return p;
}

std::vector<std::int64_t> inverse(const std::vector<std::int64_t>& p) {
  std::vector<std::int64_t> r(p.size());
  for (std::size_t i = 0; i < p.size(); ++i)
    r[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
  return r;
}

Flat flatten(Ctx& c, NodeId data, NodeId idx, std::size_t a) {
  Builder& b = c.b;
  const std::int64_t B = static_size(c, c.size, "batch size");
  const Shape ds = b.shape(data);
  const std::int64_t ta = static_size(c, ds[a + 1], "size of the indexed axis");
  NodeId t = b.transpose(data, to_front(ds.rank(), a));
  std::vector<Dim> fd{Dim(B * ta)};
  const Shape ts = b.shape(t);
  fd.insert(fd.end(), ts.dims.begin() + 2, ts.dims.end());
  t = b.reshape(t, fd);
  if (b.shape(idx).dtype != DType::i64) // the folded index B * t_a may not fit a narrow type
    idx = b.cast(idx, DType::i64);
  const Shape is = b.shape(idx);
  std::vector<std::int64_t> osz(is.rank(), 1);
  osz[0] = B;
  ir::Tensor off(Shape::of(osz, is.dtype));
  for (std::int64_t k = 0; k < B; ++k)
    off.set_i64(k, k * ta);
  NodeId out_of_range = b.scalar(static_cast<double>(B * ta), is.dtype);
  NodeId shifted = b.add(idx, b.constant(off));
  NodeId ok_lo = b.compare(ir::CmpOp::ge, idx, b.scalar(0, is.dtype));
  NodeId ok_hi = b.compare(ir::CmpOp::lt, idx, b.scalar(static_cast<double>(ta), is.dtype));
  NodeId guarded = b.where(ok_lo, b.where(ok_hi, shifted, out_of_range), out_of_range);
  return {t, guarded, ta};
}

NodeId gather(Ctx& c) {
  Builder& b = c.b;
  const std::size_t rt = c.rank(0), k = c.rank(1);
  const auto a = static_cast<std::size_t>(
      ir::normalize_axis(c.node.attr<ir::AxisAttrs>().axis, rt, "vmap gather"));
  if (!c.batched[1])
    return b.gather(c.in[0], c.in[1], static_cast<std::int64_t>(a + 1));
  if (!c.batched[0]) // table[:a] + [B, i...] + table[a+1:]
    return move_axis(b, b.gather(c.in[0], c.in[1], static_cast<std::int64_t>(a)), a, 0);
  Flat f = flatten(c, c.in[0], c.in[1], a);
  NodeId g = b.gather(f.data, f.indices, 0); // [B, i..., t[:a], t[a+1:]]
  std::vector<std::int64_t> perm{0};
  for (std::size_t i = 0; i < a; ++i)
    perm.push_back(static_cast<std::int64_t>(k + 1 + i));
  for (std::size_t i = 0; i < k; ++i)
    perm.push_back(static_cast<std::int64_t>(1 + i));
  for (std::size_t i = a + 1; i < rt; ++i)
    perm.push_back(static_cast<std::int64_t>(k + i));
  return b.transpose(g, perm);
}

NodeId scatter_add(Ctx& c) {
  Builder& b = c.b;
  const std::size_t rt = c.rank(0), k = c.rank(1);
  const auto a = static_cast<std::size_t>(
      ir::normalize_axis(c.node.attr<ir::AxisAttrs>().axis, rt, "vmap scatter_add"));
  NodeId target = c.lifted(0), upd = c.lifted(2);
  if (!c.batched[1]) // the same indices for every slice: scatter along the shifted axis
    return b.scatter_add(target, c.in[1], upd, static_cast<std::int64_t>(a + 1));
  Flat f = flatten(c, target, c.in[1], a);
  // updates [B, t[:a], i..., t[a+1:]] -> [B, i..., t[:a], t[a+1:]]
  std::vector<std::int64_t> perm{0};
  for (std::size_t i = 0; i < k; ++i)
    perm.push_back(static_cast<std::int64_t>(a + 1 + i));
  for (std::size_t i = 0; i < a; ++i)
    perm.push_back(static_cast<std::int64_t>(1 + i));
  for (std::size_t i = a + 1; i < rt; ++i)
    perm.push_back(static_cast<std::int64_t>(k + i));
  NodeId s = b.scatter_add(f.data, f.indices, b.transpose(upd, perm), 0);
  const Shape ts = b.shape(target);
  std::vector<std::int64_t> p = to_front(ts.rank(), a);
  std::vector<Dim> unflat{ts[0], ts[a + 1]};
  for (std::size_t i = 2; i < p.size(); ++i)
    unflat.push_back(ts[static_cast<std::size_t>(p[i])]);
  return b.transpose(b.reshape(s, unflat), inverse(p));
}

// ---- reductions and normalisation --------------------------------------------------------------

NodeId reduce(Ctx& c) {
  const auto& a = c.node.attr<ir::ReduceAttrs>();
  const std::size_t r = c.rank(0);
  if (r == 0) // a reduction of one element is that element
    return c.in[0];
  std::vector<std::int64_t> axes;
  for (auto x : reduced_axes(a.axes, r))
    axes.push_back(x + 1);
  return c.b.reduce(a.op, c.in[0], axes, a.keep_dims);
}

NodeId softmax_like(Ctx& c) {
  return c.b.op(c.node.op, {c.in[0]},
                ir::AxisAttrs{axis_after_batch(c.node.attr<ir::AxisAttrs>().axis, c.rank(0))});
}

NodeId argmax(Ctx& c) {
  ir::ArgMaxAttrs a = c.node.attr<ir::ArgMaxAttrs>();
  a.axis = axis_after_batch(a.axis, c.rank(0));
  return c.b.op(OpKind::ArgMax, {c.in[0]}, a);
}

/// TopK: the same selection along the shifted axis; both parts (values, indices) are batched
/// like the operand.
NodeId topk(Ctx& c) {
  ir::TopKAttrs a = c.node.attr<ir::TopKAttrs>();
  a.axis = axis_after_batch(a.axis, c.rank(0));
  return c.b.op(OpKind::TopK, {c.in[0]}, a);
}

/// LayerNorm / RmsNorm: the statistics run over the last axis, which the batch dim never is; a
/// batched gamma / beta is applied after a norm with unit gamma (the op takes [D] vectors only).
NodeId norm(Ctx& c) {
  bool affine_batched = false;
  for (std::size_t i = 1; i < c.in.size(); ++i)
    affine_batched = affine_batched || c.batched[i];
  if (!affine_batched)
    return c.b.op(c.node.op, c.in, c.node.attrs);
  Builder& b = c.b;
  const std::size_t r = c.rank(0);
  const Shape xs = b.shape(c.in[0]);
  NodeId ones = full(b, Shape({xs.dims.back()}, xs.dtype), 1.0);
  NodeId y = b.op(c.node.op, {c.in[0], ones}, c.node.attrs);
  y = b.mul(y, c.aligned(1, r));
  if (c.in.size() == 3)
    y = b.add(y, c.aligned(2, r));
  return y;
}

// ---- linear algebra ---------------------------------------------------------------------------

NodeId matmul(Ctx& c) {
  const std::size_t r = std::max(c.rank(0), c.rank(1));
  return c.b.op(OpKind::MatMul, {c.aligned(0, r), c.aligned(1, r)}, c.node.attrs);
}

NodeId dot_general(Ctx& c) {
  ir::DotGeneralAttrs a = c.node.attr<ir::DotGeneralAttrs>();
  const std::size_t rl = c.rank(0), rr = c.rank(1);
  auto norm_shift = [](std::vector<std::int64_t>& v, std::size_t rank, bool shift) {
    for (auto& d : v)
      d = ir::normalize_axis(d, rank, "vmap dot_general") + (shift ? 1 : 0);
  };
  norm_shift(a.lhs_batch, rl, c.batched[0]);
  norm_shift(a.lhs_contracting, rl, c.batched[0]);
  norm_shift(a.rhs_batch, rr, c.batched[1]);
  norm_shift(a.rhs_contracting, rr, c.batched[1]);
  const std::size_t nb = a.lhs_batch.size();
  if (c.batched[0] && c.batched[1]) {
    a.lhs_batch.insert(a.lhs_batch.begin(), 0);
    a.rhs_batch.insert(a.rhs_batch.begin(), 0);
    return c.b.dot_general(c.in[0], c.in[1], a);
  }
  // One side batched: its dim 0 is its first free dim in the output.
  NodeId y = c.b.dot_general(c.in[0], c.in[1], a);
  std::size_t at = nb;
  if (c.batched[1])
    at += rl - nb - a.lhs_contracting.size();
  return move_axis(c.b, y, at, 0);
}

NodeId dense_solve(Ctx& c) {
  return c.b.dense_solve(c.lifted(0), c.lifted(1)); // batch dims must be equal, not broadcast
}

// ---- ops with a batch dim of their own: fold the vmap batch into it ---------------------------

/// [Bv, N, r...] -> [Bv * N, r...].
NodeId fold(Ctx& c, NodeId x) {
  const Shape s = c.b.shape(x);
  std::int64_t bv = static_size(c, s[0], "batch size");
  std::int64_t n = static_size(c, s[1], "leading dim to fold the batch into");
  std::vector<Dim> d{Dim(bv * n)};
  d.insert(d.end(), s.dims.begin() + 2, s.dims.end());
  return c.b.reshape(x, d);
}

/// [Bv * N, r...] -> [Bv, N, r...].
NodeId unfold(Ctx& c, NodeId y, const Dim& n) {
  const Shape s = c.b.shape(y);
  std::vector<Dim> d{c.size, n};
  d.insert(d.end(), s.dims.begin() + 1, s.dims.end());
  return c.b.reshape(y, d);
}

NodeId attention(Ctx& c) {
  Builder& b = c.b;
  const auto& a = c.node.attr<ir::AttentionAttrs>();
  std::vector<NodeId> ins;
  for (std::size_t i = 0; i < 3; ++i)
    ins.push_back(fold(c, c.lifted(i)));
  const Dim n = c.node.shape[0];
  if (c.in.size() == 4) {
    if (a.mask == ir::MaskKind::padding) {
      ins.push_back(fold(c, c.lifted(3)));
    } else { // bias, broadcastable to [N, H, Sq, Sk]
      const std::size_t rb = c.rank(3);
      const Shape bs = b.shape(c.in[3]);
      bool per_row = rb == 4 && !(bs[c.batched[3] ? 1 : 0] == Dim(1));
      if (!c.batched[3] && !per_row) {
        ins.push_back(c.in[3]); // shared by every row of the folded batch
      } else {
        NodeId m = c.batched[3] ? c.aligned(3, 4) : c.in[3];
        std::vector<Dim> t{c.size, n, Dim(-1), Dim(-1), Dim(-1)};
        ins.push_back(fold(c, b.expand(m, t)));
      }
    }
  }
  return unfold(c, b.attention(ins[0], ins[1], ins[2], a, ins.size() == 4 ? ins[3] : NodeId{}), n);
}

NodeId rope(Ctx& c) {
  return unfold(c, c.b.rope(fold(c, c.in[0]), c.node.attr<ir::RopeAttrs>()), c.node.shape[0]);
}

NodeId pool2d(Ctx& c) {
  return unfold(c, c.b.pool2d(fold(c, c.in[0]), c.node.attr<ir::Pool2dAttrs>()), c.node.shape[0]);
}

NodeId conv2d(Ctx& c) { // weight and bias unbatched here (decompose_when sends the rest away)
  NodeId bias = c.in.size() == 3 ? c.in[2] : NodeId{};
  return unfold(c, c.b.conv2d(fold(c, c.in[0]), c.in[1], bias, c.node.attr<ir::Conv2dAttrs>()),
                c.node.shape[0]);
}

bool conv_weight_batched(const ir::Node&, std::uint32_t batched) {
  return (batched & ~1u) != 0;
}

NodeId softmax_cross_entropy(Ctx& c) {
  return unfold(c, c.b.softmax_cross_entropy(fold(c, c.lifted(0)), fold(c, c.lifted(1))),
                c.node.shape[0]);
}

// ---- control flow -----------------------------------------------------------------------------

/// If with an unbatched predicate: an If over the vmapped branches (only the chosen one runs). A
/// batched predicate is sent to the decomposition (a select of both branches) by if_pred_batched.
NodeId if_op(Ctx& c) {
  const auto& a = c.node.attr<ir::IfAttrs>();
  std::vector<bool> bat(c.batched.begin() + 1, c.batched.end());
  std::vector<NodeId> caps(c.in.begin() + 1, c.in.end());
  return c.b.if_(c.in[0], caps, vmap_body(*a.then_branch, bat, c.size),
                 vmap_body(*a.else_branch, bat, c.size));
}

bool if_pred_batched(const ir::Node&, std::uint32_t batched) {
  return (batched & 1u) != 0;
}

/// Which outputs of sub-graph \p g depend on its Inputs marked in \p in.
std::vector<bool> outputs_reached(const ir::Graph& g, const std::vector<bool>& in) {
  std::vector<char> reach(g.size(), 0);
  std::size_t k = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.node(NodeId(i));
    if (n.op == OpKind::Input) {
      reach[i] = k < in.size() && in[k];
      ++k;
    }
    for (NodeId x : n.inputs)
      reach[i] = reach[i] || reach[x.v];
  }
  std::vector<bool> r;
  for (NodeId o : g.outputs())
    r.push_back(reach[o.v] != 0);
  return r;
}

/// The batched carries of a While: the batched operands, closed under the body (a carry the body
/// computes from a batched carry is batched from the second iteration on).
std::vector<bool> while_batched(const ir::Node& n, std::vector<bool> bat) {
  const ir::Graph& body = *n.attr<ir::WhileAttrs>().body;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<bool> out = outputs_reached(body, bat);
    for (std::size_t j = 0; j < out.size() && j < bat.size(); ++j)
      if (out[j] && !bat[j]) {
        bat[j] = true;
        changed = true;
      }
  }
  return bat;
}

/// Whether the loop condition reads a batched carry (then slices may stop at different
/// iterations, and the While is unrolled with per-slice guards).
bool while_cond_batched(const ir::Node& n, std::uint32_t mask) {
  std::vector<bool> bat(n.inputs.size());
  for (std::size_t i = 0; i < bat.size(); ++i)
    bat[i] = i < 32 && ((mask >> i) & 1u);
  return outputs_reached(*n.attr<ir::WhileAttrs>().cond, while_batched(n, bat))[0];
}

/// While whose condition reads only unbatched carries: every slice runs the same iterations, so
/// the loop stays a While over the vmapped body (batched carries lifted once, before the loop).
NodeId while_op(Ctx& c) {
  const auto& a = c.node.attr<ir::WhileAttrs>();
  std::vector<bool> bat = while_batched(c.node, c.batched);
  if (outputs_reached(*a.cond, bat)[0])
    c.fail("internal: the loop condition reads a batched carry");
  std::vector<NodeId> init;
  for (std::size_t i = 0; i < c.in.size(); ++i)
    init.push_back(bat[i] ? c.lifted(i) : c.in[i]);
  NodeId y = c.b.while_(init, vmap_body(*a.cond, bat, c.size, {false}),
                        vmap_body(*a.body, bat, c.size, bat), a.max_iterations, a.output_index);
  if (bat[static_cast<std::size_t>(a.output_index)])
    return y;
  std::vector<Dim> dims{c.size};
  const Shape ys = c.b.shape(y);
  dims.insert(dims.end(), ys.dims.begin(), ys.dims.end());
  return c.b.expand(y, dims);
}

/// CustomFn: a CustomFn over the vmapped body, and over the vmapped VJP body (d_output batched),
/// whose gradients of unbatched inputs are summed over the batch (every slice contributes), so the
/// gradient of a vmapped graph still goes through the user's VJP.
NodeId custom_fn(Ctx& c) {
  const auto& a = c.node.attr<ir::CustomFnAttrs>();
  std::optional<ir::Graph> vjp;
  if (a.vjp) {
    std::vector<bool> in_bat = c.batched;
    in_bat.push_back(true);
    ir::Graph v = vmap_body(*a.vjp, in_bat, c.size);
    Builder vb(v);
    std::vector<NodeId> outs(v.outputs().begin(), v.outputs().end());
    for (std::size_t i = 0; i < outs.size() && i < c.batched.size(); ++i)
      if (!c.batched[i])
        outs[i] = vb.sum(outs[i], {0});
    v.set_outputs(outs);
    v.compact();
    vjp = std::move(v);
  }
  return c.b.custom_fn(c.in, vmap_body(*a.body, c.batched, c.size), std::move(vjp));
}

using Table = std::array<BatchRule, ir::kNumOps>;

void set(Table& t, OpKind k, BatchFn fn) {
  t[static_cast<std::size_t>(k)].fn = fn;
}

Table make_table() {
  Table t{};
  // Elementwise and broadcasting ops, the quantisers included (a per-channel axis shifts).
  ir::for_each_op([&](OpKind k) {
    if (!ir::is_leaf(k) && ir::is_elementwise(k) && !ir::has_flag(k, ir::kFused))
      set(t, k, elementwise);
  });
  set(t, OpKind::Expand, expand); // a broadcast op with a target shape
  set(t, OpKind::Reshape, reshape);
  set(t, OpKind::Transpose, transpose);
  set(t, OpKind::Narrow, narrow);
  set(t, OpKind::Concat, concat);
  set(t, OpKind::Gather, gather);
  set(t, OpKind::ScatterAdd, scatter_add);
  set(t, OpKind::Split, split);
  set(t, OpKind::Get, get);
  set(t, OpKind::Reduce, reduce);
  set(t, OpKind::Softmax, softmax_like);
  set(t, OpKind::LogSoftmax, softmax_like);
  set(t, OpKind::ArgMax, argmax);
  set(t, OpKind::TopK, topk);
  set(t, OpKind::LayerNorm, norm);
  set(t, OpKind::RmsNorm, norm);
  set(t, OpKind::MatMul, matmul);
  set(t, OpKind::DotGeneral, dot_general);
  set(t, OpKind::DenseSolve, dense_solve);
  set(t, OpKind::Attention, attention);
  set(t, OpKind::Rope, rope);
  set(t, OpKind::SoftmaxCrossEntropy, softmax_cross_entropy);
  set(t, OpKind::Pool2d, pool2d);
  set(t, OpKind::Conv2d, conv2d);
  t[static_cast<std::size_t>(OpKind::Conv2d)].decompose_when = conv_weight_batched;
  set(t, OpKind::If, if_op);
  t[static_cast<std::size_t>(OpKind::If)].decompose_when = if_pred_batched;
  // Batched through their decompositions: HIR blocks, fused ops, regions.
  ir::for_each_op([&](OpKind k) {
    if (ir::is_hir(k) || ir::has_flag(k, ir::kFused))
      t[static_cast<std::size_t>(k)].via_decomposition = true;
  });
  set(t, OpKind::While, while_op);
  t[static_cast<std::size_t>(OpKind::While)].decompose_when = while_cond_batched;
  set(t, OpKind::CustomFn, custom_fn);
  t[static_cast<std::size_t>(OpKind::ElementwiseRegion)].via_decomposition = true;
  t[static_cast<std::size_t>(OpKind::Custom)].unbatchable =
      "a user op from the CustomOpRegistry: its kernel sees one example and declares no batching";
  return t;
}

} // namespace

const BatchRule* batch_rule(OpKind op) {
  static const Table table = make_table();
  if (ir::is_leaf(op))
    return nullptr;
  return &table[static_cast<std::size_t>(op)];
}

} // namespace rlx::autodiff
