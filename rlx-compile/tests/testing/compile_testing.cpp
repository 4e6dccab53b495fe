// compile_testing.cpp: test backends, equivalence checks and small HIR models.
#include "testing/compile_testing.hpp"

#include "rlx/compile/passes.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace rlx::compile::testing {

ir::ClaimSet claim_everything() {
  ir::ClaimSet c;
  ir::for_each_op([&](ir::OpKind k) { c.claim(k); });
  return c;
}

ir::ClaimSet claim_all_but(std::initializer_list<ir::OpKind> ops) {
  ir::ClaimSet c = claim_everything();
  for (ir::OpKind k : ops)
    c.unclaim(k);
  return c;
}

namespace {

/// Runs an LIR graph with the reference interpreter.
class ReferenceExecutable : public Executable {
public:
  explicit ReferenceExecutable(const ir::Module& lir)
      : g_(lir.graph()), bytes_(lir.plan().arena_size) {}
  void set_input(const std::string& name, const ir::Tensor& value) override {
    set(name, value, /*param=*/false, inputs_);
  }
  void set_param(const std::string& name, const ir::Tensor& value) override {
    set(name, value, /*param=*/true, params_);
  }
  void execute() override { outs_ = ir::reference::evaluate(g_, inputs_, params_); }
  ir::Tensor output(std::size_t index) const override { return outs_.at(index); }
  std::int64_t device_bytes() const override { return bytes_; }

private:
  void set(const std::string& name, const ir::Tensor& v, bool param,
           ir::reference::TensorMap& into) {
    ir::NodeId id = g_.find_leaf(name, param);
    if (!id.valid())
      throw Error(std::string(param ? "param" : "input") + " '" + name + "' does not exist");
    if (!(g_.shape(id) == v.shape()))
      throw Error("'" + name + "' has type " + g_.shape(id).str() + ", got " + v.shape().str());
    into[name] = v;
  }
  ir::Graph g_;
  std::int64_t bytes_;
  ir::reference::TensorMap inputs_, params_;
  std::vector<ir::Tensor> outs_;
};

} // namespace

TestBackend::TestBackend(std::string name, ir::ClaimSet claims, fusion::BroadcastPolicy broadcast,
                         std::int64_t scratch_per_matmul)
    : name_(std::move(name)), claims_(std::move(claims)), broadcast_(broadcast),
      scratch_per_matmul_(scratch_per_matmul) {}

std::int64_t TestBackend::scratch_bytes(const ir::Graph& g, ir::NodeId id) const {
  const ir::OpKind k = g.node(id).op;
  return k == ir::OpKind::MatMul || k == ir::OpKind::MatMulBiasAct ? scratch_per_matmul_ : 0;
}

std::unique_ptr<Executable> TestBackend::compile(const ir::Module& lir) const {
  for (ir::NodeId id : lir.graph().ids())
    if (!ir::is_leaf(lir.graph().node(id).op) && !claims_.supports(lir.graph(), id))
      throw Error("backend '" + name_ + "' cannot run " + ir::describe(lir.graph(), id));
  return std::make_unique<ReferenceExecutable>(lir);
}

void expect_equivalent(const ir::Graph& before, const ir::Graph& after, double tol,
                       std::uint64_t seed) {
  ir::reference::TensorMap in = ir::testing::random_inputs(before, seed);
  ir::reference::TensorMap params = ir::testing::random_params(before, seed);
  ir::reference::TensorMap in_after, params_after;
  for (const auto& [name, t] : in)
    if (after.find_leaf(name).valid())
      in_after[name] = t;
  for (const auto& [name, t] : params)
    if (after.find_leaf(name, /*param=*/true).valid())
      params_after[name] = t;
  std::vector<ir::Tensor> a = ir::reference::evaluate(before, in, params);
  std::vector<ir::Tensor> b = ir::reference::evaluate(after, in_after, params_after);
  ASSERT_EQ(a.size(), b.size()) << "output counts differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << "output " << i;
    double scale = 0;
    for (std::int64_t k = 0; k < a[i].numel(); ++k)
      scale = std::max(scale, std::fabs(a[i].get_f64(k)));
    const double err = ir::max_abs_diff(a[i], b[i]);
    EXPECT_LE(err, tol * (1 + scale))
        << "output " << i << " differs by " << err << " (scale " << scale << ")";
    EXPECT_FALSE(std::isnan(err)) << "output " << i;
  }
}

ir::Graph expect_rewrite(std::string_view before, std::string_view pipeline, std::string_view after,
                         double tol, fusion::PassContext ctx) {
  const ir::Graph in = ir::parse(before);
  ir::Graph out = in;
  run_pipeline(out, pipeline, ctx);
  const ir::Graph want = ir::parse(after);
  EXPECT_EQ(ir::print(out), ir::print(want)) << "after " << pipeline;
  expect_equivalent(in, out, tol);
  return out;
}

void expect_error(std::string_view accepted, const std::function<void()>& run,
                  std::initializer_list<std::string_view> fragments) {
  try {
    run();
    ADD_FAILURE() << accepted;
  } catch (const Error& e) {
    const std::string_view what = e.what();
    for (std::string_view f : fragments)
      EXPECT_NE(what.find(f), std::string_view::npos) << "'" << f << "' not in: " << what;
  }
}

} // namespace rlx::compile::testing
