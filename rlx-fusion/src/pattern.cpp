// pattern.cpp: the pattern matcher (structure with commutative backtracking, then constraints)
// and the apply_patterns() driver.
#include "rlx/fusion/pattern.hpp"

#include "rlx/ir/effects.hpp"
#include <cstdio>

#include "rlx/ir/error.hpp"

#include <algorithm>
#include <array>

namespace rlx::fusion {

// ---- Match
// ---------------------------------------------------------------------------------------

ir::NodeId Match::operator[](std::string_view name) const {
  for (const auto& [n, id] : caps_)
    if (n == name)
      return id;
  throw Error("pattern match has no capture named '" + std::string(name) + "'");
}

bool Match::has(std::string_view name) const {
  return std::any_of(caps_.begin(), caps_.end(), [&](const auto& c) { return c.first == name; });
}

// ---- Pat
// -----------------------------------------------------------------------------------------

Pat Pat::any() {
  return Pat{};
}

Pat Pat::op(ir::OpKind k, std::vector<Pat> operands) {
  Pat p;
  p.kind_ = Kind::op;
  p.op_ = k;
  p.operands_ = std::move(operands);
  return p;
}

Pat Pat::splat(double value) {
  Pat p;
  p.kind_ = Kind::splat;
  p.splat_ = value;
  return p;
}

Pat Pat::same(std::string name) {
  Pat p;
  p.kind_ = Kind::same;
  p.same_ = std::move(name);
  return p;
}

Pat& Pat::bind(std::string name) {
  capture_ = std::move(name);
  return *this;
}

Pat& Pat::structurally(NodePredicate pred) {
  structural_.push_back(std::move(pred));
  return *this;
}

Pat& Pat::one_use() {
  constraints_.push_back(Constraint{nullptr, MissReason::multiple_consumers, {}, true});
  return *this;
}

Pat& Pat::dtype(ir::DType t) {
  return where([t](const ir::Graph& g, ir::NodeId id) { return g.shape(id).dtype == t; },
               MissReason::dtype_mismatch, "dtype is not " + std::string(ir::dtype_name(t)));
}

Pat& Pat::float_dtype() {
  return where([](const ir::Graph& g, ir::NodeId id) { return ir::is_float(g.shape(id).dtype); },
               MissReason::dtype_mismatch, "dtype is not a float type");
}

Pat& Pat::rank(std::size_t r) {
  return where([r](const ir::Graph& g, ir::NodeId id) { return g.shape(id).rank() == r; },
               MissReason::shape_mismatch, "rank is not " + std::to_string(r));
}

Pat& Pat::where(NodePredicate pred, MissReason reason, std::string detail) {
  constraints_.push_back(Constraint{std::move(pred), reason, std::move(detail), false});
  return *this;
}

// ---- matcher
// -------------------------------------------------------------------------------------

namespace {

// A non-owning reference to a `bool()` callable (continuations without allocation).
class Cont {
public:
  template <class F>
  explicit Cont(F& f) : obj_(&f), fn_([](void* o) { return (*static_cast<F*>(o))(); }) {}
  bool operator()() const { return fn_(obj_); }

private:
  void* obj_;
  bool (*fn_)(void*);
};

bool is_splat(const ir::Graph& g, ir::NodeId id, double v) {
  const ir::Node& n = g.node(id);
  if (n.op != ir::OpKind::Constant)
    return false;
  const ir::Tensor& t = n.attr<ir::ConstantAttrs>().value;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.get_f64(i) != v)
      return false;
  return true;
}

struct Matcher {
  const ir::Graph& g;
  const Pattern& p;
  const ir::ClaimSet* claims;
  Match m;
  std::vector<std::pair<const Pat*, ir::NodeId>> obligations;
  std::optional<Miss> first_miss;

  // Checks every constraint of the structural match found so far; records the first failure.
  bool finish() {
    auto refuse = [&](Miss miss) {
      if (!first_miss)
        first_miss = std::move(miss);
      return false;
    };
    for (const auto& [pat, id] : obligations) {
      for (const auto& c : pat->constraints()) {
        if (c.one_use) {
          int uses = g.use_count(id);
          if (uses != 1) {
            bool out = g.is_output(id) && uses > 1;
            return refuse(Miss{out ? MissReason::is_graph_output : MissReason::multiple_consumers,
                               ir::describe(g, id) + " has " + std::to_string(uses) + " uses" +
                                   (out ? " (one is a graph output)" : "")});
          }
        } else if (!c.pred(g, id)) {
          return refuse(Miss{c.reason, ir::describe(g, id) + ": " + c.detail});
        }
      }
    }
    if (p.check)
      if (auto miss = p.check(g, m))
        return refuse(std::move(*miss));
    if (claims) {
      ir::DType t = g.shape(m.root).dtype;
      for (ir::OpKind k : p.emits)
        if (!claims->claims(k, t))
          return refuse(Miss{MissReason::not_claimed, "the backend does not claim " +
                                                          std::string(ir::op_name(k)) + " for " +
                                                          std::string(ir::dtype_name(t))});
    }
    return true;
  }

  bool operands(const std::vector<Pat>& pats, std::span<const ir::NodeId> ins, std::size_t i,
                Cont k) {
    if (i == pats.size())
      return k();
    auto next = [&] { return operands(pats, ins, i + 1, k); };
    return node(pats[i], ins[i], Cont(next));
  }

  bool node(const Pat& pat, ir::NodeId id, Cont k) {
    const ir::Node& n = g.node(id);
    switch (pat.kind()) {
    case Pat::Kind::any:
      break;
    case Pat::Kind::op:
      if (n.op != pat.op_kind() || ir::has_effects(n))
        return false; // a node with effects is never rewritten away (effects.hpp)
      if (!pat.operands().empty() && pat.operands().size() != n.inputs.size())
        return false;
      break;
    case Pat::Kind::splat:
      if (!is_splat(g, id, pat.splat_value()))
        return false;
      break;
    case Pat::Kind::same:
      if (!m.has(pat.same_as()) || m[pat.same_as()] != id)
        return false;
      break;
    }
    for (const auto& pred : pat.structural())
      if (!pred(g, id))
        return false;
    const std::size_t mark = m.size();
    const std::size_t omark = obligations.size();
    if (!pat.capture().empty())
      m.bind(pat.capture(), id);
    if (!pat.constraints().empty())
      obligations.emplace_back(&pat, id);
    bool ok = false;
    if (pat.kind() == Pat::Kind::op && !pat.operands().empty()) {
      ok = operands(pat.operands(), n.inputs, 0, k);
      if (!ok && n.inputs.size() == 2 && ir::is_commutative(n.op)) {
        m.truncate(mark + (pat.capture().empty() ? 0 : 1));
        obligations.resize(omark + (pat.constraints().empty() ? 0 : 1));
        std::array<ir::NodeId, 2> swapped{n.inputs[1], n.inputs[0]};
        ok = operands(pat.operands(), swapped, 0, k);
      }
    } else {
      ok = k();
    }
    if (!ok) {
      m.truncate(mark);
      obligations.resize(omark);
    }
    return ok;
  }
};

} // namespace

MatchResult match_pattern(const Pattern& p, const ir::Graph& g, ir::NodeId root,
                          const ir::ClaimSet* claims) {
  if (p.root.kind() != Pat::Kind::op)
    throw Error("pattern '" + p.name + "': the root must be an op pattern");
  Matcher mt{g, p, claims, {}, {}, {}};
  mt.m.root = root;
  auto done = [&] { return mt.finish(); };
  MatchResult r;
  r.applies = mt.node(p.root, root, Cont(done));
  if (r.applies)
    r.match = std::move(mt.m);
  else
    r.miss = std::move(mt.first_miss);
  return r;
}

// ---- driver
// --------------------------------------------------------------------------------------

int apply_patterns(ir::Graph& g, std::span<const Pattern> patterns, const ApplyOptions& opts) {
  std::vector<std::vector<const Pattern*>> by_op(ir::kNumOps);
  for (const auto& p : patterns) {
    if (p.root.kind() != Pat::Kind::op)
      throw Error("pattern '" + p.name + "': the root must be an op pattern");
    if (!p.rewrite)
      throw Error("pattern '" + p.name + "' has no rewrite");
    by_op[static_cast<std::size_t>(p.root.op_kind())].push_back(&p);
  }
  for (auto& v : by_op)
    std::stable_sort(v.begin(), v.end(),
                     [](const Pattern* a, const Pattern* b) { return a->benefit > b->benefit; });

  int total = 0;
  std::vector<MissedFusion> misses;
  for (int sweep = 0; sweep < opts.max_sweeps; ++sweep) {
    misses.clear();
    bool changed = false;
    std::size_t n = g.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      ir::NodeId id(i);
      const auto& cands = by_op[static_cast<std::size_t>(g.node(id).op)];
      if (cands.empty() || g.use_count(id) == 0)
        continue;
      for (const Pattern* p : cands) {
        MatchResult r = match_pattern(*p, g, id, opts.claims);
        if (!r.applies) {
          if (r.miss)
            misses.push_back(MissedFusion{p->name, ir::describe(g, id), r.miss->reason,
                                          std::move(r.miss->detail)});
          continue;
        }
        // Rewrite in place; the nodes it built are [built_from, size).
        const std::size_t built_from = g.size();
        ir::Builder b(g);
        ir::NodeId repl = p->rewrite(b, r.match);
        if (repl == id)
          continue;
        if (opts.gate && p->gated) {
          // Judge the rewrite: before, what dies with the root; after, the nodes it built.
          std::vector<ir::NodeId> built;
          for (std::size_t k = built_from; k < g.size(); ++k)
            built.emplace_back(static_cast<std::uint32_t>(k));
          const GraphIoProfile before = profile_graph_io(g, dying_with(g, id), *opts.gate);
          const GraphIoProfile after = profile_graph_io(g, built, *opts.gate);
          const double score = opts.gate->score_ns(fusion_benefit(before, after));
          if (score < opts.gate->min_gain_ns) {
            char detail[200];
            std::snprintf(detail, sizeof detail,
                          "the IO gate models %.0f ns saved, under %.0f (launches %lld -> %lld, "
                          "bytes %lld -> %lld)",
                          score, opts.gate->min_gain_ns,
                          static_cast<long long>(before.kernel_launches),
                          static_cast<long long>(after.kernel_launches),
                          static_cast<long long>(before.device_traffic_bytes),
                          static_cast<long long>(after.device_traffic_bytes));
            misses.push_back(
                MissedFusion{p->name, ir::describe(g, id), MissReason::not_profitable, detail});
            // Undo: the built nodes are dead; compacting drops them (and the uses they added,
            // which would turn later one-use checks into false misses). Compaction renumbers, so
            // the scan goes on from the root's new id over the whole compacted list (nodes
            // added earlier in this sweep may be visited in it; the fixed point is the same).
            // Only a refusal pays for it: no graph copy per judged match.
            const std::vector<ir::NodeId> remap = g.compact();
            id = remap[id.v];
            i = id.v;
            n = g.size();
            continue; // the root's other candidate patterns
          }
        }
        if (!(g.shape(repl) == g.shape(id)))
          throw Error("pattern '" + p->name + "' replaced " + ir::describe(g, id) + " of type " +
                      g.shape(id).str() + " by " + ir::describe(g, repl) + " of type " +
                      g.shape(repl).str());
        g.replace_all_uses(id, repl);
        ++total;
        changed = true;
        if (opts.report)
          opts.report->record_applied(p->name);
        break;
      }
    }
    if (!changed)
      break;
    g.compact();
  }
  if (opts.report)
    for (auto& m : misses)
      opts.report->record_missed(std::move(m));
  return total;
}

} // namespace rlx::fusion
