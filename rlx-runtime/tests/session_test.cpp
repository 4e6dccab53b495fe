// session_test.cpp: Session, Executable and the compile cache on the CPU backend: cache hits,
// one compile per binding, params reaching every variant, output names, the registry, errors.
#include "rlx/runtime/runtime.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

namespace rlx::runtime {
namespace {

using ir::Tensor;

/// A small BERT (2 layers, hidden 16, 2 heads) with symbolic batch and seq.
ir::Graph tiny_bert() {
  BertConfig c;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.ffn = 32;
  return build_bert(c);
}

/// y = relu(x W^T + b) with static shapes; "y" labelled when \p label.
ir::Graph static_mlp(bool label = true) {
  ir::Graph g("static_mlp");
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({2, 3}));
  auto w = b.param("w", ir::Shape::of({4, 3}));
  auto bias = b.param("b", ir::Shape::of({4}));
  auto y = b.op(ir::OpKind::Linear, {x, w, bias}, ir::LinearAttrs{ir::Activation::relu},
                label ? "y" : "");
  b.output(y);
  return g;
}

/// The message of the rlx::Error \p fn throws ("" when none).
template <class Fn> std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// max |exe.run(inputs)[y] - reference| for the graph's one output.
double parity(Executable& exe, const TensorMap& inputs, const TensorMap& params) {
  auto out = exe.run({inputs.begin(), inputs.end()});
  auto ref = ir::reference::evaluate(exe.graph(), inputs, params);
  return ir::max_abs_diff(out.at(exe.output_names()[0]), ref[0]);
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("opencl:2"), Device::opencl(2));
  EXPECT_EQ(Device::opencl(2).str(), "opencl:2");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_NE(error_of([] { Device::parse("gpu"); }).find("unknown device 'gpu'"), std::string::npos);
  EXPECT_NE(error_of([] { Device::parse("cpu:x"); }).find("bad device index"), std::string::npos);
  EXPECT_NE(error_of([] { Device::parse("cpu:-1"); }).find("bad device index"), std::string::npos);
}

#ifdef RLX_HAS_OPENCL
TEST(BackendRegistry, BuiltinHasTheCpuAndOpenCl) {
  BackendRegistry r = builtin_backends();
  EXPECT_TRUE(r.has(DeviceKind::cpu));
  EXPECT_TRUE(r.has(DeviceKind::opencl));
  EXPECT_NE(error_of([&] { r.create(Device::opencl(999)); }).find("no device opencl:999"),
            std::string::npos);
}
#else
TEST(BackendRegistry, BuiltinHasTheCpuOnly) {
  BackendRegistry r = builtin_backends();
  EXPECT_TRUE(r.has(DeviceKind::cpu));
  EXPECT_FALSE(r.has(DeviceKind::opencl));
  EXPECT_EQ(r.create(Device::cpu())->name(), "cpu");
  EXPECT_NE(error_of([&] {
              r.create(Device::opencl());
            }).find("no backend for device 'opencl' (this build has: cpu)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { r.create(Device::parse("cpu:1")); }).find("one CPU device"),
            std::string::npos);
  EXPECT_NE(error_of([] { Session s(Device::opencl()); }).find("no backend"), std::string::npos);
}
#endif

TEST(BackendRegistry, ACustomFactoryIsUsed) {
  int created = 0;
  SessionOptions so;
  so.backends.add(
      DeviceKind::cpu,
      [&](const Device&) {
        ++created;
        return cpu::make_cpu_backend({});
      },
      "custom");
  Session s(Device::cpu(), std::move(so));
  EXPECT_EQ(created, 1);
  EXPECT_EQ(s.backend().name(), "cpu");
}

TEST(Session, StaticGraphCompilesAtOnceAndRuns) {
  Session s;
  ir::Graph g = static_mlp();
  Executable exe = s.compile(g);
  EXPECT_EQ(s.cache().stats().misses, 1);
  ASSERT_EQ(exe.variants().size(), 1u);
  EXPECT_FALSE(exe.variants()[0]->cache_hit);
  EXPECT_EQ(exe.output_names(), (std::vector<std::string>{"y"}));
  exe.set_param("w", Tensor::from<float>({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}));
  exe.set_param("b", Tensor::from<float>({4}, {0, 0, -10, 1}));
  auto out = exe.run({{"x", Tensor::from<float>({2, 3}, {1, -2, 3, 4, 5, 6})}});
  // relu(x W^T + b): rows (1,-2,3) -> (1, 0, 0, 3); (4,5,6) -> (4, 5, 0, 16)
  EXPECT_TRUE(out.at("y").identical(Tensor::from<float>({2, 4}, {1, 0, 0, 3, 4, 5, 0, 16})));
}

TEST(Session, SecondCompileOfTheSameGraphIsACacheHit) {
  Session s;
  Executable a = s.compile(static_mlp());
  Executable b = s.compile(static_mlp());
  CacheStats st = s.cache().stats();
  EXPECT_EQ(st.misses, 1);
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.entries, 1);
  EXPECT_TRUE(b.variants()[0]->cache_hit);
  EXPECT_EQ(a.variants()[0]->compiled, b.variants()[0]->compiled); // one shared LIR
  // Other options are another key.
  CompileOptions no_fuse;
  no_fuse.fuse = false;
  s.compile(static_mlp(), no_fuse);
  EXPECT_EQ(s.cache().stats().misses, 2);
}

TEST(Session, EachExecutableOwnsItsWeights) {
  Session s;
  Executable a = s.compile(static_mlp());
  Executable b = s.compile(static_mlp());
  a.set_params(
      {{"w", Tensor(ir::Shape::of({4, 3}))}, {"b", Tensor::from<float>({4}, {1, 1, 1, 1})}});
  b.set_params(
      {{"w", Tensor(ir::Shape::of({4, 3}))}, {"b", Tensor::from<float>({4}, {2, 2, 2, 2})}});
  Tensor x(ir::Shape::of({2, 3}));
  EXPECT_EQ(a.run({{"x", x}}).at("y").get_f64(0), 1.0);
  EXPECT_EQ(b.run({{"x", x}}).at("y").get_f64(0), 2.0);
}

TEST(Session, SymbolicGraphCompilesOncePerBinding) {
  Session s;
  ir::Graph g = tiny_bert();
  const TensorMap params = init_params(g, 1);
  Executable exe = s.compile(g);
  EXPECT_EQ(exe.variants().size(), 0u); // nothing to compile before the sizes are known
  exe.set_params(params);

  auto in3 = random_inputs(g, {{"batch", 1}, {"seq", 3}}, 2);
  auto in5 = random_inputs(g, {{"batch", 2}, {"seq", 5}}, 3);
  EXPECT_LT(parity(exe, in3, params), 1e-4);
  EXPECT_EQ(s.cache().stats().misses, 1);
  EXPECT_LT(parity(exe, in3, params), 1e-4);
  EXPECT_EQ(exe.variants().size(), 1u);
  EXPECT_EQ(s.cache().stats().misses, 1);
  // Another seq: a second variant, compiled once, and the weights reach it.
  EXPECT_LT(parity(exe, in5, params), 1e-4);
  EXPECT_EQ(exe.variants().size(), 2u);
  EXPECT_EQ(s.cache().stats().misses, 2);
  ASSERT_NE(exe.variant({{"batch", 2}, {"seq", 5}}), nullptr);

  // A second executable of the same graph finds both variants in the cache.
  Executable again = s.compile(g);
  again.set_params(params);
  EXPECT_LT(parity(again, in5, params), 1e-4);
  EXPECT_EQ(s.cache().stats().hits, 1);
  EXPECT_TRUE(again.variants()[0]->cache_hit);
}

TEST(Session, SetParamReachesCompiledVariants) {
  Session s;
  ir::Graph g = tiny_bert();
  TensorMap params = init_params(g, 4);
  Executable exe = s.compile(g);
  exe.set_params(params);
  auto in = random_inputs(g, {{"batch", 1}, {"seq", 4}}, 5);
  EXPECT_LT(parity(exe, in, params), 1e-4);
  params = init_params(g, 6); // new weights after the variant exists
  exe.set_params(params);
  EXPECT_LT(parity(exe, in, params), 1e-4);
}

TEST(Session, CompileTimeBindingsFixSizes) {
  Session s;
  ir::Graph g = tiny_bert();
  CompileOptions co;
  co.bindings = {{"batch", 1}, {"seq", 4}};
  Executable exe = s.compile(g, co);
  EXPECT_EQ(exe.variants().size(), 1u); // every symbol bound: compiled at once
  exe.set_params(init_params(g, 1));
  auto bad = random_inputs(g, {{"batch", 1}, {"seq", 5}}, 1);
  EXPECT_NE(error_of([&] {
              exe.run({bad.begin(), bad.end()});
            }).find("symbol 'seq' is fixed to 4 at compile time, got 5"),
            std::string::npos);
  co.bindings = {{"heads", 2}};
  EXPECT_NE(error_of([&] { s.compile(g, co); }).find("does not use"), std::string::npos);
}

TEST(Session, OutputNamesComeFromLabels) {
  ir::Graph g("outs");
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({2}));
  auto e = b.op(ir::OpKind::Exp, {x}, ir::NoAttrs{}, "e");
  b.output(e);
  b.output(b.neg(x)); // unlabelled
  b.output(e);        // the label again
  Session s;
  Executable exe = s.compile(g);
  EXPECT_EQ(exe.output_names(), (std::vector<std::string>{"e", "output1", "output2"}));
  auto out = exe.run({{"x", Tensor::from<float>({2}, {0, 1})}});
  EXPECT_EQ(out.at("output1").get_f64(1), -1.0);
  EXPECT_EQ(out.at("output2").get_f64(0), 1.0);
}

TEST(Session, ParamAndInputErrorsNameTheProblem) {
  Session s;
  Executable exe = s.compile(static_mlp());
  EXPECT_NE(error_of([&] {
              exe.set_param("nope", Tensor(ir::Shape::of({4})));
            }).find("has no param 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              exe.set_param("b", Tensor(ir::Shape::of({5})));
            }).find("param 'b' is [4] f32, given [5] f32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              exe.set_param("b", Tensor(ir::Shape::of({4}, ir::DType::f64)));
            }).find("given [4] f64"),
            std::string::npos);
  Tensor x(ir::Shape::of({2, 3}));
  EXPECT_NE(error_of([&] {
              exe.run({{"x", x}});
            }).find("2 params never set: w, b"),
            std::string::npos);
  exe.set_params({{"w", Tensor(ir::Shape::of({4, 3}))}, {"b", Tensor(ir::Shape::of({4}))}});
  EXPECT_NE(error_of([&] { exe.run({}); }).find("missing input 'x'"), std::string::npos);
  EXPECT_NE(error_of([&] {
              exe.run({{"x", x}, {"z", x}});
            }).find("unknown input 'z'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              exe.run({{"x", Tensor(ir::Shape::of({2, 4}))}});
            }).find("input 'x'"),
            std::string::npos);
}

TEST(Session, LoadParamsFromSafetensors) {
  Session s;
  ir::Graph g = tiny_bert();
  TensorMap params = init_params(g, 9);
  const auto dir = std::filesystem::temp_directory_path();
  const auto path = dir / "rlx_session_weights.safetensors";
  write_safetensors(path, params);
  Executable exe = s.compile(g);
  exe.load_params(path);
  EXPECT_TRUE(exe.missing_params().empty());
  auto in = random_inputs(g, {{"batch", 1}, {"seq", 3}}, 1);
  EXPECT_LT(parity(exe, in, params), 1e-4);

  // A checkpoint with a prefix, an extra tensor, and f16 weights.
  TensorMap hf;
  for (const auto& [name, t] : params) { // legacy LayerNorm.gamma / .beta spelling, as in
    std::string n = name;                // bert-base-uncased
    if (n.ends_with("LayerNorm.weight"))
      n.replace(n.size() - 6, 6, "gamma");
    if (n.ends_with("LayerNorm.bias"))
      n.replace(n.size() - 4, 4, "beta");
    hf["bert." + n] = t.cast(ir::DType::f16);
  }
  hf["bert.pooler.dense.bias"] = Tensor(ir::Shape::of({16}));
  write_safetensors(path, hf);
  Executable e2 = s.compile(g);
  std::string msg = error_of([&] { e2.load_params(path); });
  EXPECT_NE(msg.find("32 missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("load with prefix 'bert.'"), std::string::npos) << msg;
  msg = error_of([&] { e2.load_params(path, {.prefix = "bert."}); });
  EXPECT_NE(msg.find("1 unexpected: bert.pooler.dense.bias"), std::string::npos) << msg;
  e2.load_params(path, {.prefix = "bert.", .allow_extra = true});
  TensorMap rounded;
  for (const auto& [name, t] : params)
    rounded[name] = t.cast(ir::DType::f16).cast(ir::DType::f32);
  EXPECT_LT(parity(e2, in, rounded), 1e-4);

  // Mistyped: a weight of the wrong shape; everything is reported before anything is loaded.
  params["encoder.layer.0.attention.self.query.bias"] = Tensor(ir::Shape::of({3}));
  params.erase("encoder.layer.1.output.dense.bias");
  write_safetensors(path, params);
  Executable e3 = s.compile(g);
  msg = error_of([&] { e3.load_params(path); });
  EXPECT_NE(msg.find("1 missing: encoder.layer.1.output.dense.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 mistyped: encoder.layer.0.attention.self.query.bias is [3] f32, "
                     "expected [16] f32"),
            std::string::npos)
      << msg;
  EXPECT_EQ(e3.missing_params().size(), e3.params().size()); // nothing was loaded
  EXPECT_EQ(msg.find('\n'), std::string::npos);              // one line
  std::filesystem::remove(path);
}

TEST(Session, LoadParamsMapsTheFileAndNeverWritesIt) {
  Session s;
  ir::Graph g = tiny_bert();
  const TensorMap params = init_params(g, 9);
  const auto path = std::filesystem::temp_directory_path() / "rlx_session_mapped.safetensors";
  write_safetensors(path, params);
  const SafetensorsFile original = read_safetensors(path);
  Executable exe = s.compile(g);
  exe.load_params(path); // before any variant exists: every weight is read in place
  for (const auto& [name, type] : exe.params())
    EXPECT_TRUE(exe.weights()->mapped(name)) << name;
  auto in = random_inputs(g, {{"batch", 2}, {"seq", 3}}, 1);
  EXPECT_LT(parity(exe, in, params), 1e-4);
  // New values go to private copies of the pages (and the packed copies): the file is unchanged.
  const TensorMap other = init_params(g, 10);
  exe.set_params(other);
  EXPECT_LT(parity(exe, in, other), 1e-4);
  const SafetensorsFile after = read_safetensors(path);
  for (const auto& [name, t] : original.tensors)
    EXPECT_TRUE(after.tensors.at(name).identical(t)) << name;
  // Loading again with a variant compiled copies into the storage kernels already read.
  exe.load_params(path);
  EXPECT_LT(parity(exe, in, params), 1e-4);
  // Rewriting the file replaces it: the mapping keeps the old one.
  write_safetensors(path, other);
  EXPECT_LT(parity(exe, in, params), 1e-4);
  std::filesystem::remove(path);
  EXPECT_LT(parity(exe, random_inputs(g, {{"batch", 1}, {"seq", 5}}, 2), params), 1e-4);
}

TEST(Session, ExecutablesShareWeightsThroughTheirRegion) {
  Session s;
  ir::Graph g = tiny_bert();
  TensorMap params = init_params(g, 3);
  Executable a = s.compile(g);
  a.set_params(params);
  CompileOptions shared;
  shared.weights = a.weights();
  Executable b = s.compile(g, shared);
  EXPECT_TRUE(b.missing_params().empty());
  auto in = random_inputs(g, {{"batch", 1}, {"seq", 4}}, 5);
  EXPECT_LT(parity(b, in, params), 1e-4);
  EXPECT_LT(parity(a, in, params), 1e-4);
  const std::int64_t held = a.weights()->plain_bytes() + a.weights()->derived_bytes();
  // A second variant and a second executable add no weight memory.
  EXPECT_LT(parity(b, random_inputs(g, {{"batch", 2}, {"seq", 6}}, 6), params), 1e-4);
  EXPECT_EQ(a.weights()->plain_bytes() + a.weights()->derived_bytes(), held);
  params = init_params(g, 4); // set through one, seen by the other
  b.set_params(params);
  EXPECT_LT(parity(a, in, params), 1e-4);
  // A graph whose param of the same name has another type cannot bind to them.
  BertConfig wide;
  wide.layers = 2;
  wide.hidden = 32;
  wide.heads = 2;
  wide.ffn = 32;
  std::string msg = error_of([&] { (void)s.compile(build_bert(wide), shared); });
  EXPECT_NE(msg.find("the shared weights hold it as"), std::string::npos) << msg;
}

TEST(Session, ExecutablesOutliveTheirSession) {
  std::optional<Executable> exe;
  {
    Session s;
    exe.emplace(s.compile(static_mlp()));
  }
  exe->set_params(
      {{"w", Tensor(ir::Shape::of({4, 3}))}, {"b", Tensor::from<float>({4}, {1, 2, 3, 4})}});
  EXPECT_EQ(exe->run({{"x", Tensor(ir::Shape::of({2, 3}))}}).at("y").get_f64(3), 4.0);
}

TEST(CompileCache, SharedBetweenSessionsAndEvictsLeastRecentlyUsed) {
  auto cache = std::make_shared<CompileCache>(1);
  SessionOptions so;
  so.cache = cache;
  Session a(Device::cpu(), so);
  Session b(Device::cpu(), so);
  a.compile(static_mlp(true));
  b.compile(static_mlp(true)); // hit across sessions
  EXPECT_EQ(cache->stats().hits, 1);
  ir::Graph other = static_mlp(true);
  other.set_outputs({other.inputs()[0]}); // another graph
  a.compile(other);
  EXPECT_EQ(cache->stats().evictions, 1);
  a.compile(static_mlp(true)); // evicted: compiled again
  EXPECT_EQ(cache->stats().misses, 3);
  EXPECT_EQ(cache->stats().entries, 1);
  // Sessions configured differently never share entries.
  SessionOptions blas = so;
  blas.cpu.gemm = cpu::GemmProvider::openblas;
  Session c(Device::cpu(), blas);
  c.compile(static_mlp(true));
  EXPECT_EQ(cache->stats().misses, 4);
}

TEST(Session, RejectsLirModulesAndInvalidGraphs) {
  Session s;
  Executable exe = s.compile(static_mlp());
  const ir::Module& lir = exe.variants()[0]->compiled->result.lir;
  EXPECT_NE(error_of([&] { s.compile(lir); }).find("already LIR"), std::string::npos);
  ir::Graph bad("bad");
  ir::Builder bb(bad);
  ir::Node n;
  n.op = ir::OpKind::Relu;
  n.inputs = {bb.input("x", ir::Shape::of({2}))};
  n.attrs = ir::NoAttrs{};
  n.shape = ir::Shape::of({3}); // not what relu of [2] gives
  bad.add_output(bad.add_unchecked(n));
  EXPECT_THROW(s.compile(bad), ir::VerifyError);
}

} // namespace
} // namespace rlx::runtime
