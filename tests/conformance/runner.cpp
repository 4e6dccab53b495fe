// runner.cpp: building, filling, compiling and checking conformance cases.
#include "op_cases.hpp"

#include "rlx/compile/legalize.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"

#include <cmath>
#include <sstream>

namespace rlx::conformance {
namespace {

/// splitmix64: a small, portable generator (the same values on every platform and compiler).
class Rng {
public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi].
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }

private:
  std::uint64_t s_;
};

/// FNV-1a of \p s: the seed of a case's inputs.
std::uint64_t hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s)
    h = (h ^ ch) * 1099511628211ull;
  return h;
}

ir::Tensor fill(const InputSpec& s, std::uint64_t seed) {
  ir::Tensor t(s.type);
  Rng rng(seed);
  auto lo = static_cast<std::int64_t>(std::ceil(s.lo));
  auto hi = static_cast<std::int64_t>(std::floor(s.hi));
  switch (s.fill) {
  case Fill::uniform:
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, s.lo + (s.hi - s.lo) * rng.uniform());
    break;
  case Fill::integers:
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_i64(i, rng.integer(lo, hi));
    break;
  case Fill::nonzero:
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      std::int64_t v = 0;
      while (v == 0)
        v = rng.integer(lo, hi);
      t.set_i64(i, v);
    }
    break;
  case Fill::keep_mask: {
    auto sizes = s.type.sizes();
    std::int64_t rows = sizes.empty() ? 1 : sizes[0];
    std::int64_t per_row = rows == 0 ? 0 : t.numel() / rows;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      bool last_row = rows > 1 && i / per_row == rows - 1;
      t.set_i64(i, !last_row && rng.uniform() < 0.75 ? 1 : 0);
    }
    break;
  }
  case Fill::diag_dominant: {
    auto sizes = s.type.sizes();
    std::int64_t n = sizes.back();
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      double v = s.lo + (s.hi - s.lo) * rng.uniform();
      std::int64_t r = (i / n) % n, c = i % n;
      t.set_f64(i, r == c ? v + static_cast<double>(n) : v);
    }
    break;
  }
  }
  return t;
}

/// "[1, 2, 0]" for element \p i of a tensor of \p sizes.
std::string index_str(std::int64_t i, const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> idx(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    idx[d] = sizes[d] == 0 ? 0 : i % sizes[d];
    i = sizes[d] == 0 ? 0 : i / sizes[d];
  }
  std::ostringstream os;
  os << '[';
  for (std::size_t d = 0; d < idx.size(); ++d)
    os << (d ? ", " : "") << idx[d];
  os << ']';
  return os.str();
}

CaseResult compare(const ir::Tensor& got, const ir::Tensor& want, const Tolerance& tol) {
  CaseResult r;
  if (got.shape() != want.shape()) {
    r.message = "output is " + got.shape().str() + ", the reference gives " + want.shape().str();
    return r;
  }
  bool exact = tol.atol == 0.0 && tol.rtol == 0.0;
  bool integral = !ir::is_float(want.dtype());
  std::int64_t bad = 0, first = -1;
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (integral) {
      ok = got.get_i64(i) == want.get_i64(i);
      r.max_abs_error = std::max(r.max_abs_error,
                                 std::fabs(static_cast<double>(got.get_i64(i) - want.get_i64(i))));
    } else {
      double a = got.get_f64(i), b = want.get_f64(i);
      if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
      } else if (std::isinf(a) || std::isinf(b)) {
        ok = a == b;
      } else {
        double err = std::fabs(a - b);
        r.max_abs_error = std::max(r.max_abs_error, err);
        ok = exact ? a == b : err <= tol.atol + tol.rtol * std::fabs(b);
      }
    }
    if (!ok) {
      ++bad;
      if (first < 0)
        first = i;
    }
  }
  std::ostringstream os;
  if (bad > 0) {
    auto sizes = want.shape().sizes();
    os << bad << " of " << want.numel() << " elements differ; first at " << index_str(first, sizes)
       << ": got " << got.get_f64(first) << ", reference " << want.get_f64(first) << " (atol "
       << tol.atol << ", rtol " << tol.rtol << "; max |error| " << r.max_abs_error << ")";
    r.message = os.str();
    return r;
  }
  os << "max |error| " << r.max_abs_error << " (atol " << tol.atol << ", rtol " << tol.rtol << ")";
  r.message = os.str();
  r.status = CaseResult::Status::passed;
  return r;
}

} // namespace

ir::Graph build_graph(const OpCase& c) {
  ir::Graph g(c.name);
  ir::Builder b(g);
  std::vector<ir::NodeId> ins;
  for (const InputSpec& s : c.inputs)
    ins.push_back(s.param ? b.param(s.name, s.type) : b.input(s.name, s.type));
  ir::NodeId out = c.build ? c.build(g, ins) : b.op(c.op, ins, c.attrs);
  b.output(out);
  return g;
}

CaseValues make_values(const OpCase& c) {
  CaseValues v;
  std::uint64_t seed = hash(c.name);
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& s = c.inputs[i];
    (s.param ? v.params : v.inputs)[s.name] = fill(s, seed + 0x9e37u * (i + 1));
  }
  return v;
}

CaseResult run_case(const OpCase& c, const compile::Backend& backend) {
  try {
    register_conformance_custom_ops();
    ir::Graph g = build_graph(c);

    // The only reason to skip: a node the claim set does not support even after legalisation.
    ir::Graph probe = ir::lower_hir(g);
    fusion::PassOptions po;
    po.broadcast = backend.broadcast_policy();
    compile::DispatchReport report =
        compile::legalize_partial(probe, backend.claims(), backend.name(), po);
    if (!report.unsupported_nodes.empty()) {
      CaseResult r;
      r.status = CaseResult::Status::skipped;
      r.message = "backend '" + backend.name() + "' does not support " +
                  report.unsupported_nodes.front() + " after legalisation";
      return r;
    }

    CaseValues v = make_values(c);
    std::vector<ir::Tensor> want = ir::reference::evaluate(g, v.inputs, v.params);

    compile::CompileOptions opts;
    opts.fold_constants = false;
    opts.fuse = false;
    compile::CompileResult compiled = compile::CompilePipeline(backend, opts).run(g);
    std::unique_ptr<compile::Executable> exe = backend.compile(compiled.lir);
    for (const auto& [name, t] : v.inputs)
      exe->set_input(name, t);
    for (const auto& [name, t] : v.params)
      exe->set_param(name, t);
    exe->execute();
    return compare(exe->output(0), want.at(0), c.tol);
  } catch (const std::exception& e) {
    CaseResult r;
    r.message = std::string("error: ") + e.what();
    return r;
  }
}

std::vector<CaseResult> run_conformance(const compile::Backend& backend) {
  std::vector<CaseResult> out;
  for (const OpCase& c : op_cases())
    out.push_back(run_case(c, backend));
  return out;
}

} // namespace rlx::conformance
