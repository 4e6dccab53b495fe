// opt.cpp: a downstream program against the installed rlx-opt (which brings rlx-compile,
// rlx-fusion and rlx-ir): compiles a small HIR MLP for a backend that claims everything but ReLU
// (and the fused MatMulBiasAct, which would absorb it), and checks that legalisation rewrote the
// ReLUs and the memory plan covers the graph.
#include <rlx/ir/builder.hpp>
#include <rlx/opt.hpp>

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace {

class NoReluBackend : public rlx::opt::compile::Backend {
public:
  NoReluBackend() {
    rlx::ir::for_each_op([&](rlx::ir::OpKind k) { claims_.claim(k); });
    claims_.unclaim(rlx::ir::OpKind::Relu);
    claims_.unclaim(rlx::ir::OpKind::MatMulBiasAct);
  }
  std::string name() const override { return "consumer"; }
  const rlx::ir::ClaimSet& claims() const override { return claims_; }
  std::unique_ptr<rlx::opt::compile::Executable> compile(const rlx::ir::Module&) const override {
    throw std::logic_error("not used");
  }

private:
  rlx::ir::ClaimSet claims_;
};

} // namespace

int main() {
  using namespace rlx::ir;
  namespace compile = rlx::opt::compile;
  try {
    Graph g("consumer_mlp");
    Builder b(g);
    NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim(4)}));
    NodeId w1 = b.param("w1", Shape::of({8, 4}));
    NodeId w2 = b.param("w2", Shape::of({2, 8}));
    b.output(b.linear(b.linear(x, w1, {}, Activation::relu), w2));
    NoReluBackend backend;
    compile::CompileOptions opts;
    opts.bindings = {{"batch", 3}};
    compile::CompileResult r = compile::CompilePipeline(backend, opts).run(g);
    rlx::opt::fusion::FusionReport fusion = r.fusion;
    std::printf("%s%s", compile::format_compile_summary(r).c_str(), fusion.str().c_str());
    if (r.dispatch.by_op[OpKind::Relu].rewritten != 1 || r.lir.plan().arena_size <= 0) {
      std::fprintf(stderr, "consumer: unexpected compile result\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
