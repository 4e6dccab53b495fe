// fd.cpp: finite-difference checking of grad_with_loss (see fd.hpp).
#include "fd.hpp"

#include "rlx/autodiff/vjp_rules.hpp"
#include "rlx/ir/builder.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>

namespace rlx::autodiff::testing {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

namespace {

using ir::is_float;

Shape widen(Shape s) {
  if (s.is_tuple()) {
    for (auto& p : s.parts)
      p = widen(p);
    s.dtype = s.parts[0].dtype;
    return s;
  }
  if (is_float(s.dtype))
    s.dtype = DType::f64;
  return s;
}

ir::SubGraph widen(const ir::SubGraph& s) {
  if (!s)
    return s;
  return ir::SubGraph{std::make_shared<const Graph>(to_f64(*s))};
}

} // namespace

Graph to_f64(const Graph& g) {
  Graph r(g.name());
  Builder b(r);
  std::vector<NodeId> map(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    Node n = g.node(NodeId(static_cast<std::uint32_t>(i)));
    std::vector<NodeId> ins;
    for (NodeId x : n.inputs)
      ins.push_back(map[x.v]);
    ir::Attrs a = n.attrs;
    if (auto* l = std::get_if<ir::LeafAttrs>(&a))
      l->shape = widen(l->shape);
    else if (auto* c = std::get_if<ir::ConstantAttrs>(&a))
      c->value = is_float(c->value.dtype()) ? c->value.cast(DType::f64) : c->value;
    else if (auto* ca = std::get_if<ir::CastAttrs>(&a))
      ca->to = is_float(ca->to) ? DType::f64 : ca->to;
    else if (auto* ia = std::get_if<ir::IfAttrs>(&a)) {
      ia->then_branch = widen(ia->then_branch);
      ia->else_branch = widen(ia->else_branch);
    } else if (auto* wa = std::get_if<ir::WhileAttrs>(&a)) {
      wa->cond = widen(wa->cond);
      wa->body = widen(wa->body);
    } else if (auto* fa = std::get_if<ir::CustomFnAttrs>(&a)) {
      fa->body = widen(fa->body);
      fa->vjp = widen(fa->vjp);
    }
    NodeId id = b.op(n.op, std::move(ins), std::move(a), n.name);
    const Shape& s = r.shape(id);
    if (!s.is_tuple() && is_float(s.dtype) && s.dtype != DType::f64)
      id = b.cast(id, DType::f64);
    map[i] = id;
  }
  std::vector<NodeId> outs;
  for (NodeId o : g.outputs())
    outs.push_back(map[o.v]);
  r.set_outputs(outs);
  return r;
}

TensorMap to_f64(const TensorMap& m) {
  TensorMap r;
  for (const auto& [k, v] : m)
    r[k] = is_float(v.dtype()) ? v.cast(DType::f64) : v;
  return r;
}

WeightedLoss weighted_sum_loss(const Graph& g, std::uint64_t seed) {
  WeightedLoss wl;
  wl.forward = g;
  Graph r = g;
  Builder b(r);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  NodeId loss;
  for (NodeId o : g.outputs()) {
    Shape s = r.shape(o);
    if (s.is_tuple() || !is_float(s.dtype) || !s.is_static()) {
      wl.weights.emplace_back();
      continue;
    }
    Tensor w(s);
    for (std::int64_t i = 0; i < w.numel(); ++i)
      w.set_f64(i, u(rng));
    wl.weights.push_back(w);
    NodeId term = b.sum(b.mul(o, b.constant(w)), {}, false);
    if (s.rank() == 0)
      term = b.mul(o, b.constant(w));
    loss = loss.valid() ? b.add(loss, term) : term;
  }
  if (!loss.valid())
    return WeightedLoss();
  r.set_outputs({loss});
  wl.loss = std::move(r);
  return wl;
}

std::vector<Wrt> differentiable_leaves(const Graph& hir) {
  const Graph g = prepare_graph_for_ad(hir);
  std::vector<char> excluded(g.size(), 0);
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    std::uint32_t nd = non_differentiable_operands(n);
    for (std::size_t s = 0; s < n.inputs.size(); ++s)
      if ((nd >> s) & 1u)
        excluded[n.inputs[s].v] = 1;
  }
  std::vector<Wrt> r;
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    if ((n.op == OpKind::Input || n.op == OpKind::Param) && is_float(n.shape.dtype) &&
        !excluded[id.v])
      r.push_back({n.attr<ir::LeafAttrs>().name, n.op == OpKind::Param});
  }
  return r;
}

double fd_step(DType t) {
  switch (t) {
  case DType::f64:
    return 1e-5; // cbrt(2^-53) ≈ 4.8e-6
  case DType::f32:
    return 5e-3; // cbrt(2^-24) ≈ 3.9e-3
  default:
    return 5e-2;
  }
}

FdResult check_gradients(const WeightedLoss& l, const TensorMap& inputs, const TensorMap& params,
                         const std::vector<Wrt>& wrt, std::int64_t per_leaf, double h) {
  GradOptions opts;
  opts.on_missing = MissingGradient::zeros;
  Graph gg = grad_with_loss(l.loss, wrt, opts);
  std::vector<Tensor> ad = ir::reference::evaluate(gg, inputs, params);
  FdResult res;
  auto outputs_at = [&](const TensorMap& in, const TensorMap& pa) {
    return ir::reference::evaluate(l.forward, in, pa);
  };
  const std::vector<Tensor> y0 = outputs_at(inputs, params);
  /// sum_k sum_e w_k[e] (a_k[e] - b_k[e]), over the elements that differ
  auto contract = [&](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    double r = 0;
    for (std::size_t o = 0; o < l.weights.size(); ++o) {
      const Tensor& wt = l.weights[o];
      for (std::int64_t e = 0; e < wt.numel(); ++e)
        if (double d = a[o].get_f64(e) - b[o].get_f64(e); d != 0)
          r += wt.get_f64(e) * d;
    }
    return r;
  };
  for (std::size_t w = 0; w < wrt.size(); ++w) {
    const TensorMap& src = wrt[w].param ? params : inputs;
    const Tensor& base = src.at(wrt[w].name);
    const Tensor& grad = ad.at(w + 1);
    std::int64_t n = base.numel();
    std::int64_t count = std::min(n, per_leaf);
    for (std::int64_t k = 0; k < count; ++k) {
      std::int64_t j = count == n ? k : (k * (n - 1)) / std::max<std::int64_t>(count - 1, 1);
      TensorMap in = inputs, pa = params;
      TensorMap& dst = wrt[w].param ? pa : in;
      Tensor plus = base.clone(), minus = base.clone();
      plus.set_f64(j, base.get_f64(j) + h);
      minus.set_f64(j, base.get_f64(j) - h);
      dst[wrt[w].name] = plus;
      std::vector<Tensor> yp = outputs_at(in, pa);
      dst[wrt[w].name] = minus;
      std::vector<Tensor> ym = outputs_at(in, pa);
      double fd = contract(yp, ym) / (2 * h);
      // A kink within h (relu at 0, a max / min switching operand) shows as one-sided
      // differences that disagree by far more than h |f''|: finite differences say nothing there.
      double fwd = contract(yp, y0) / h, bwd = contract(y0, ym) / h;
      if (std::fabs(fwd - bwd) > 1e-2 * std::max(1.0, std::fabs(fd))) {
        ++res.kinks;
        continue;
      }
      double got = grad.get_f64(j);
      double err = std::fabs(got - fd) / std::max(1.0, std::fabs(fd));
      if (!(err <= res.max_err) || std::isnan(err)) {
        res.max_err = std::isnan(err) ? INFINITY : err;
        std::ostringstream os;
        os << (wrt[w].param ? "param " : "input ") << wrt[w].name << "[" << j << "]: autodiff "
           << got << ", finite differences " << fd;
        res.worst = os.str();
      }
      ++res.checked;
    }
  }
  return res;
}

} // namespace rlx::autodiff::testing

#include "rlx/autodiff/jvp.hpp"

namespace rlx::autodiff::testing {
namespace {

/// Random directions for \p wrt (same types as the leaves), by name.
TensorMap directions(const TensorMap& inputs, const TensorMap& params,
                     const std::vector<Wrt>& wrt) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  TensorMap d;
  for (const Wrt& w : wrt) {
    Tensor t((w.param ? params : inputs).at(w.name).shape());
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, u(rng));
    d[w.name] = t;
  }
  return d;
}

/// The values moved by \p s along the directions.
std::pair<TensorMap, TensorMap> moved(const TensorMap& inputs, const TensorMap& params,
                                      const std::vector<Wrt>& wrt, const TensorMap& dir, double s) {
  TensorMap in = inputs, pa = params;
  for (const Wrt& w : wrt) {
    TensorMap& m = w.param ? pa : in;
    Tensor t = m.at(w.name).clone();
    const Tensor& d = dir.at(w.name);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, t.get_f64(i) + s * d.get_f64(i));
    m[w.name] = t;
  }
  return {in, pa};
}

/// Elementwise comparison of \p got with the central difference of \p f over [first, end) outputs.
/// The allowed error adds the truncation estimate |fd(h) - fd(2h)| (Richardson: fd(h) is off by
/// about a third of it), which matters only where f''' is huge (sqrt near 0).
void compare(FdResult& res, const std::vector<Tensor>& got, std::size_t got_at,
             const std::vector<Tensor>& yp, const std::vector<Tensor>& y0,
             const std::vector<Tensor>& ym, const std::vector<Tensor>& yp2,
             const std::vector<Tensor>& ym2, std::size_t first, std::size_t end, double h) {
  for (std::size_t o = first; o < end; ++o) {
    if (!is_float(yp[o].dtype()))
      continue;
    const Tensor& g = got.at(got_at + (o - first));
    for (std::int64_t e = 0; e < yp[o].numel(); ++e) {
      double fd = (yp[o].get_f64(e) - ym[o].get_f64(e)) / (2 * h);
      double fwd = (yp[o].get_f64(e) - y0[o].get_f64(e)) / h;
      double bwd = (y0[o].get_f64(e) - ym[o].get_f64(e)) / h;
      if (std::fabs(fwd - bwd) > 1e-2 * std::max(1.0, std::fabs(fd))) {
        ++res.kinks;
        continue;
      }
      double fd2 = (yp2[o].get_f64(e) - ym2[o].get_f64(e)) / (4 * h);
      double err =
          std::fabs(g.get_f64(e) - fd) / (std::max(1.0, std::fabs(fd)) + 1e6 * std::fabs(fd - fd2));
      if (!(err <= res.max_err)) {
        res.max_err = std::isnan(err) ? INFINITY : err;
        std::ostringstream os;
        os << "output " << o << "[" << e << "]: autodiff " << g.get_f64(e)
           << ", finite differences " << fd;
        res.worst = os.str();
      }
      ++res.checked;
    }
  }
}

TensorMap with_tangents(TensorMap in, const std::vector<Wrt>& wrt, const TensorMap& dir) {
  for (const Wrt& w : wrt)
    in[tangent_name(w.name)] = dir.at(w.name);
  return in;
}

} // namespace

FdResult check_jvp(const Graph& g, const TensorMap& inputs, const TensorMap& params,
                   const std::vector<Wrt>& wrt, double h) {
  TensorMap dir = directions(inputs, params, wrt);
  Graph j = jvp(g, wrt);
  auto got = ir::reference::evaluate(j, with_tangents(inputs, wrt, dir), params);
  auto [ip, pp] = moved(inputs, params, wrt, dir, h);
  auto [im, pm] = moved(inputs, params, wrt, dir, -h);
  auto [ip2, pp2] = moved(inputs, params, wrt, dir, 2 * h);
  auto [im2, pm2] = moved(inputs, params, wrt, dir, -2 * h);
  auto yp = ir::reference::evaluate(g, ip, pp), ym = ir::reference::evaluate(g, im, pm);
  auto yp2 = ir::reference::evaluate(g, ip2, pp2), ym2 = ir::reference::evaluate(g, im2, pm2);
  auto y0 = ir::reference::evaluate(g, inputs, params);
  FdResult res;
  compare(res, got, g.outputs().size(), yp, y0, ym, yp2, ym2, 0, yp.size(), h);
  return res;
}

FdResult check_hvp(const Graph& loss_graph, const TensorMap& inputs, const TensorMap& params,
                   const std::vector<Wrt>& wrt, double h) {
  TensorMap dir = directions(inputs, params, wrt);
  GradOptions opts;
  opts.on_missing = MissingGradient::zeros;
  Graph hv = hvp(loss_graph, wrt, opts);
  Graph gg = grad_with_loss(loss_graph, wrt, opts);
  auto got = ir::reference::evaluate(hv, with_tangents(inputs, wrt, dir), params);
  auto [ip, pp] = moved(inputs, params, wrt, dir, h);
  auto [im, pm] = moved(inputs, params, wrt, dir, -h);
  auto [ip2, pp2] = moved(inputs, params, wrt, dir, 2 * h);
  auto [im2, pm2] = moved(inputs, params, wrt, dir, -2 * h);
  auto gp = ir::reference::evaluate(gg, ip, pp), gm = ir::reference::evaluate(gg, im, pm);
  auto gp2 = ir::reference::evaluate(gg, ip2, pp2), gm2 = ir::reference::evaluate(gg, im2, pm2);
  auto g0 = ir::reference::evaluate(gg, inputs, params);
  FdResult res;
  compare(res, got, 1 + wrt.size(), gp, g0, gm, gp2, gm2, 1, gp.size(), h);
  return res;
}

} // namespace rlx::autodiff::testing
