// control_flow.cpp: If and While run for real on the CPU: only the chosen branch, and the body only
// while the condition holds.
//
// At compile time every sub-graph (If's branches, While's cond and body) is compiled through the
// same CompilePipeline for a CPU backend with the parent's options into its own nested
// CpuExecutable (kernel list + arena), with its symbols bound from the parent's operand types.
// Nested control flow nests executables. At run time:
//  - If reads its bool predicate, copies the captures into the chosen branch's inputs, runs that
//    executable and copies its output into the node's slot. The other branch never runs, so a
//    guarded `d != 0 ? x / d : 0` never divides by zero.
//  - While copies the initial carries into its own carry buffers (allocated at compile time), then
//    repeats: feed the carries to cond, run it, stop when it is false or max_iterations bodies
//    have run; feed them to body, run it, copy its outputs back into the carries. The node's value
//    is carry output_index. This is the reference interpreter's loop exactly.
// Nothing is allocated while running: the copies go between planned slots and fixed buffers.
#include "executable.hpp"
#include "lower.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/error.hpp"

#include <cstring>
#include <set>

namespace rlx::cpu {
namespace {

/// A sub-graph compiled into its own executable, with its Input names in positional order.
struct Nested {
  std::unique_ptr<CpuExecutable> exe;
  std::vector<std::string> inputs;
  std::vector<ir::Shape> outputs;
};

/// Binds the symbols of \p sub's Inputs from the static types \p args of the values they receive;
/// throws Error on a count, dtype, rank or size mismatch or a contradictory symbol.
ir::Bindings bind_from_args(const ir::Graph& sub, const std::vector<ir::Shape>& args,
                            const std::string& what) {
  const std::vector<ir::NodeId> ins = sub.inputs();
  if (ins.size() != args.size())
    throw Error("rlx-cpu: " + what + ": sub-graph '" + sub.name() + "' takes " +
                std::to_string(ins.size()) + " inputs, got " + std::to_string(args.size()));
  ir::Bindings b;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const ir::Shape& want = sub.shape(ins[i]);
    const ir::Shape& got = args[i];
    auto mismatch = [&] {
      return Error("rlx-cpu: " + what + ": sub-graph '" + sub.name() + "' input " +
                   std::to_string(i) + " has type " + want.str() + " but receives " + got.str());
    };
    if (want.dtype != got.dtype || want.rank() != got.rank())
      throw mismatch();
    for (std::size_t d = 0; d < want.rank(); ++d) {
      if (want[d].is_static()) {
        if (want[d].size() != got[d].size())
          throw mismatch();
        continue;
      }
      auto [it, fresh] = b.emplace(want[d].symbol(), got[d].size());
      if (!fresh && it->second != got[d].size())
        throw mismatch();
    }
  }
  return b;
}

/// Compiles \p sub for the CPU into a nested executable whose inputs receive values of types
/// \p args and whose outputs must have types \p outs (when given).
Nested compile_subgraph(const ir::Graph& sub, const std::vector<ir::Shape>& args,
                        const CpuBackend& backend, const std::string& what) {
  if (!sub.params().empty())
    throw Error("rlx-cpu: " + what + ": sub-graph '" + sub.name() +
                "' holds params; sub-graphs take every value as an input");
  compile::CompileOptions opts;
  opts.bindings = bind_from_args(sub, args, what);
  compile::CompileResult r = compile::CompilePipeline(backend, opts).run(sub);
  Nested n;
  const ir::Graph& g = r.lir.graph();
  std::set<std::string> seen;
  for (ir::NodeId id : sub.inputs()) {
    const std::string& name = sub.node(id).attr<ir::LeafAttrs>().name;
    if (!seen.insert(name).second)
      throw Error("rlx-cpu: " + what + ": sub-graph '" + sub.name() + "' has two inputs named '" +
                  name + "'");
    n.inputs.push_back(name);
  }
  for (ir::NodeId o : g.outputs())
    n.outputs.push_back(g.shape(o));
  n.exe = std::make_unique<CpuExecutable>(r.lir, backend);
  return n;
}

/// The operand types of a node, from index \p first on.
std::vector<ir::Shape> operand_types(const NodeView& v, std::size_t first) {
  std::vector<ir::Shape> out;
  for (std::size_t i = first; i < v.arity(); ++i)
    out.push_back(v.in(i));
  return out;
}

/// A CPU backend with the parent's options and thread count, for the nested compiles.
std::unique_ptr<CpuBackend> nested_backend(const LowerContext& c) {
  CpuOptions o = c.opts;
  o.num_threads = c.threads;
  return std::make_unique<CpuBackend>(o);
}

/// Expects nested output \p index of \p n to have \p type.
void expect_output(const Nested& n, std::size_t index, const ir::Shape& type,
                   const std::string& what) {
  if (index >= n.outputs.size() || n.outputs[index] != type)
    throw Error("rlx-cpu: " + what + ": sub-graph output " + std::to_string(index) +
                " does not have the type " + type.str());
}

class IfKernel final : public Kernel {
public:
  explicit IfKernel(const LowerContext& c) : backend_(nested_backend(c)) {
    const auto& a = c.node().attr<ir::IfAttrs>();
    const std::vector<ir::Shape> args = operand_types(c, 1);
    const std::string what = c.what();
    then_ = compile_subgraph(*a.then_branch, args, *backend_, what + " then branch");
    else_ = compile_subgraph(*a.else_branch, args, *backend_, what + " else branch");
    expect_output(then_, 0, c.out(), what);
    expect_output(else_, 0, c.out(), what);
    pred_ = c.src(0);
    for (std::size_t i = 1; i < c.arity(); ++i)
      captures_.push_back(c.src(i));
    dst_ = c.dst();
  }

  void run(ExecContext&) override {
    Nested& branch = *pred_ != std::byte{0} ? then_ : else_;
    for (std::size_t i = 0; i < captures_.size(); ++i)
      branch.exe->write_input(branch.inputs[i], captures_[i]);
    branch.exe->execute();
    branch.exe->read_output(0, dst_);
  }

private:
  std::unique_ptr<CpuBackend> backend_;
  Nested then_, else_;
  const std::byte* pred_ = nullptr;
  std::vector<const std::byte*> captures_;
  std::byte* dst_ = nullptr;
};

class WhileKernel final : public Kernel {
public:
  explicit WhileKernel(const LowerContext& c) : backend_(nested_backend(c)) {
    const auto& a = c.node().attr<ir::WhileAttrs>();
    const std::vector<ir::Shape> carries = operand_types(c, 0);
    const std::string what = c.what();
    cond_ = compile_subgraph(*a.cond, carries, *backend_, what + " cond");
    body_ = compile_subgraph(*a.body, carries, *backend_, what + " body");
    expect_output(cond_, 0, ir::Shape::scalar(ir::DType::boolean), what + " cond");
    if (body_.outputs.size() != carries.size())
      throw Error("rlx-cpu: " + what + ": body returns " + std::to_string(body_.outputs.size()) +
                  " values for " + std::to_string(carries.size()) + " carries");
    for (std::size_t j = 0; j < carries.size(); ++j) {
      expect_output(body_, j, carries[j], what + " body");
      init_.push_back(c.src(j));
      carry_.emplace_back(static_cast<std::size_t>(carries[j].bytes()));
    }
    max_iterations_ = a.max_iterations;
    out_ = static_cast<std::size_t>(a.output_index);
    if (out_ >= carries.size())
      throw Error("rlx-cpu: " + what + ": output_index is out of range");
    dst_ = c.dst();
  }

  void run(ExecContext&) override {
    for (std::size_t j = 0; j < carry_.size(); ++j)
      copy(carry_[j].data(), init_[j], carry_[j].size());
    for (std::int64_t it = 0; it < max_iterations_; ++it) {
      feed(cond_);
      cond_.exe->execute();
      std::byte go{0};
      cond_.exe->read_output(0, &go);
      if (go == std::byte{0})
        break;
      feed(body_);
      body_.exe->execute();
      for (std::size_t j = 0; j < carry_.size(); ++j)
        body_.exe->read_output(j, carry_[j].data());
    }
    copy(dst_, carry_[out_].data(), carry_[out_].size());
  }

private:
  static void copy(std::byte* dst, const std::byte* src, std::size_t n) {
    if (n > 0)
      std::memcpy(dst, src, n);
  }
  void feed(Nested& n) {
    for (std::size_t j = 0; j < carry_.size(); ++j)
      n.exe->write_input(n.inputs[j], carry_[j].data());
  }

  std::unique_ptr<CpuBackend> backend_;
  Nested cond_, body_;
  std::vector<const std::byte*> init_;
  std::vector<std::vector<std::byte>> carry_;
  std::int64_t max_iterations_ = 0;
  std::size_t out_ = 0;
  std::byte* dst_ = nullptr;
};

constexpr KernelImpl kIf[] = {
    {"nested", accept_all, nullptr,
     [](const LowerContext& c) -> std::unique_ptr<Kernel> {
       return std::make_unique<IfKernel>(c);
     }},
};
constexpr KernelImpl kWhile[] = {
    {"nested", accept_all, nullptr,
     [](const LowerContext& c) -> std::unique_ptr<Kernel> {
       return std::make_unique<WhileKernel>(c);
     }},
};

} // namespace

std::span<const KernelImpl> if_impls() {
  return kIf;
}

std::span<const KernelImpl> while_impls() {
  return kWhile;
}

} // namespace rlx::cpu
