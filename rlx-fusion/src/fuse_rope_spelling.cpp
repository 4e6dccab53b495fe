// fuse_rope_spelling.cpp: the fuse-rope-spelling pass, a recogniser. PyTorch's ONNX export of a
// LLaMA / HF rotary embedding ("rotate_half" layout) spells it with constant cos / sin tables:
//
//   x [B, H, S, D]      r = concat(-x[..., D/2:], x[..., :D/2], last axis)
//   out = x * cos + r * sin,  cos / sin [S, D] (or [1, 1, S, D]) constants   -> rope(x) bhsd
//
// Patterns: rope_spelling (the above, any operand order of the Muls and the Add) and rope_bshd
// (Rope bhsd of a Transpose {0,2,1,3} becomes a Transpose of Rope bshd, so that fuse-attention's
// attention_bshd finds the head Transposes right at the attention and drops them).
//
// rlx's Rope computes its angles p * theta^(-2k/D) itself, so the tables must be exactly those of
// one theta. theta is read off the slowest-turning pair at position 1 (rounded to an integer when
// within 1e-4 of one, as bases are) and every entry is checked against cos / sin of the exact
// angle within the rounding of an exporter computing the angles in the tables' dtype:
// eps * (8 + 4p) at position p (eps of the dtype). Tables that are not RoPE's for any theta are an
// attribute_mismatch miss. Other preconditions: x is 4-D with a static, even last dim and tables
// of [S, D] (shape_mismatch); every inner node has one use; the backend claims Rope.
#include "fusion_pass_list.hpp"
#include "pattern_pass.hpp"

#include <cmath>
#include <limits>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

bool last_axis(const Graph& g, NodeId id, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(g.shape(id).rank());
  return axis == -1 || axis == rank - 1;
}

/// Narrow of the last axis: the low half (\p high false) or the high half of an even dim.
bool half_narrow(const Graph& g, NodeId id, bool high) {
  const auto& a = g.node(id).attr<ir::NarrowAttrs>();
  const ir::Shape& x = g.shape(g.node(id).inputs[0]);
  if (!last_axis(g, id, a.axis) || x.rank() == 0 || !x.dims.back().is_static())
    return false;
  const std::int64_t d = x.dims.back().size();
  return d % 2 == 0 && a.length == d / 2 && a.start == (high ? d / 2 : 0);
}

bool is_constant(const Graph& g, NodeId id) {
  return g.node(id).op == OpKind::Constant;
}

/// The theta whose RoPE tables \p cos / \p sin ([S, D]) are, or nothing.
std::optional<double> theta_of(const ir::Tensor& cos, const ir::Tensor& sin, std::int64_t s_len,
                               std::int64_t d) {
  const std::int64_t h = d / 2;
  double theta = 10000.0; // any theta gives the same tables at one position or one pair
  if (s_len >= 2 && h >= 2) {
    const double a1 = std::atan2(sin.get_f64(d + h - 1), cos.get_f64(d + h - 1));
    if (!(a1 > 0 && a1 < 1))
      return std::nullopt;
    theta = std::pow(a1, -static_cast<double>(d) / (2.0 * static_cast<double>(h - 1)));
    const double r = std::round(theta);
    if (std::abs(r - theta) <= 1e-4 * theta)
      theta = r;
  }
  const double eps = cos.dtype() == ir::DType::f64 ? std::numeric_limits<double>::epsilon()
                                                   : std::numeric_limits<float>::epsilon();
  for (std::int64_t p = 0; p < s_len; ++p) {
    const double tol = eps * (8.0 + 4.0 * static_cast<double>(p));
    for (std::int64_t j = 0; j < d; ++j) {
      const double angle =
          static_cast<double>(p) *
          std::pow(theta, -2.0 * static_cast<double>(j % h) / static_cast<double>(d));
      if (!(std::abs(cos.get_f64(p * d + j) - std::cos(angle)) <= tol) ||
          !(std::abs(sin.get_f64(p * d + j) - std::sin(angle)) <= tol))
        return std::nullopt;
    }
  }
  return theta;
}

/// The tables fit x [B, H, S, D]: [S, D] or [1, .., 1, S, D], of x's dtype.
bool table_fits(const ir::Shape& t, const ir::Shape& x) {
  if (t.dtype != x.dtype || t.rank() < 2 || t.rank() > 4 || !t.is_static())
    return false;
  for (std::size_t i = 0; i + 2 < t.rank(); ++i)
    if (t[i].size() != 1)
      return false;
  return t.dims[t.rank() - 2] == x[2] && t.dims.back() == x[3];
}

std::optional<Miss> check_spelling(const Graph& g, const Match& m) {
  const ir::Shape& x = g.shape(m["x"]);
  if (x.rank() != 4 || !x.is_static())
    return Miss{MissReason::shape_mismatch, "x " + x.str() + " is not a static [B, H, S, D]"};
  for (const char* t : {"cos", "sin"})
    if (!table_fits(g.shape(m[t]), x))
      return Miss{MissReason::shape_mismatch, std::string(t) + " table " + g.shape(m[t]).str() +
                                                  " is not [S, D] for x " + x.str()};
  if (g.shape(m.root) != x)
    return Miss{MissReason::shape_mismatch, "the result broadcasts x " + x.str() + " up"};
  const auto& c = g.node(m["cos"]).attr<ir::ConstantAttrs>().value;
  const auto& s = g.node(m["sin"]).attr<ir::ConstantAttrs>().value;
  if (!theta_of(c, s, x[2].size(), x[3].size()))
    return Miss{MissReason::attribute_mismatch,
                "the cos / sin tables are not RoPE's p * theta^(-2k/D) for any theta"};
  return std::nullopt;
}

Pattern rope_spelling() {
  Pat lo = Pat::op(OpKind::Narrow, {Pat::same("x")});
  lo.structurally([](const Graph& g, NodeId id) { return half_narrow(g, id, false); }).one_use();
  Pat hi = Pat::op(OpKind::Narrow, {Pat::same("x")});
  hi.structurally([](const Graph& g, NodeId id) { return half_narrow(g, id, true); }).one_use();
  Pat neg = Pat::op(OpKind::Neg, {std::move(hi)});
  neg.one_use();
  Pat rot = Pat::op(OpKind::Concat, {std::move(neg), std::move(lo)});
  rot.structurally([](const Graph& g, NodeId id) {
       return last_axis(g, id, g.node(id).attr<ir::AxisAttrs>().axis);
     })
      .one_use();
  Pat xc = Pat::op(OpKind::Mul,
                   {Pat::any().bind("x"), Pat::any().bind("cos").structurally(is_constant)});
  xc.one_use();
  Pat rs = Pat::op(OpKind::Mul, {std::move(rot), Pat::any().bind("sin").structurally(is_constant)});
  rs.one_use();
  Pattern p;
  p.name = "rope_spelling";
  p.root = Pat::op(OpKind::Add, {std::move(xc), std::move(rs)});
  p.root.float_dtype();
  p.check = check_spelling;
  p.emits = {OpKind::Rope};
  p.rewrite = [](ir::Builder& b, const Match& m) {
    const Graph& g = b.graph();
    const ir::Shape& x = g.shape(m["x"]);
    ir::RopeAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.style = ir::RopeStyle::half;
    a.n_rot = x[3].size();
    a.theta = *theta_of(g.node(m["cos"]).attr<ir::ConstantAttrs>().value,
                        g.node(m["sin"]).attr<ir::ConstantAttrs>().value, x[2].size(), x[3].size());
    return b.op(OpKind::Rope, {m["x"]}, a, g.node(m.root).name);
  };
  return p;
}

bool heads_transpose(const Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  return n.op == OpKind::Transpose &&
         n.attr<ir::TransposeAttrs>().perm == std::vector<std::int64_t>{0, 2, 1, 3};
}

Pattern rope_bshd() {
  Pattern p;
  p.name = "rope_bshd";
  Pat t = Pat::op(OpKind::Transpose).bind("t");
  t.structurally(heads_transpose).one_use();
  p.root = Pat::op(OpKind::Rope, {std::move(t)});
  p.root.structurally([](const Graph& g, NodeId id) {
    return g.node(id).attr<ir::RopeAttrs>().layout == ir::AttnLayout::bhsd;
  });
  p.emits = {OpKind::Rope, OpKind::Transpose};
  p.rewrite = [](ir::Builder& b, const Match& m) {
    const Graph& g = b.graph();
    auto a = g.node(m.root).attr<ir::RopeAttrs>();
    a.layout = ir::AttnLayout::bshd;
    const NodeId y = b.op(OpKind::Rope, {g.node(m["t"]).inputs[0]}, a, g.node(m.root).name);
    return b.transpose(y, {0, 2, 1, 3});
  };
  return p;
}

} // namespace

std::unique_ptr<Pass> make_fuse_rope_spelling() {
  return std::make_unique<PatternPass>("fuse-rope-spelling",
                                       std::vector<Pattern>{rope_spelling(), rope_bshd()});
}

} // namespace rlx::fusion
