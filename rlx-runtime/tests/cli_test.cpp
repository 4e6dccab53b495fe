// cli_test.cpp: the built `rlx` command: exit codes and the one-line error convention for bad
// flags, missing files, missing weights and shape mismatches; and what each subcommand writes.
#include "rlx/runtime/loss.hpp"
#include "rlx/runtime/runtime.hpp"

#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_testing.hpp"

#include <filesystem>
#include <fstream>

namespace rlx::runtime {
namespace {

namespace fs = std::filesystem;

using testing::Cli;
using testing::Result;

const char* kTinyMlp = "--model mlp --dims 4,3,2";

TEST_F(Cli, HelpAndVersionSucceed) {
  Result r = rlx("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* cmd : {"demo", "run", "inspect", "bench", "export"})
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  EXPECT_EQ(rlx("run --help").status, 0);
  EXPECT_EQ(rlx("--version").status, 0);
}

TEST_F(Cli, BadCommandLinesExitTwoWithOneLine) {
  expect_error("", 2, "subcommand");
  expect_error("frobnicate", 2, "subcommand");
  expect_error("run --bogus", 2, "--bogus");
  expect_error("run --layers abc", 2, "--layers");
  expect_error("run --model gpt", 2, "gpt");
  expect_error("bench --runs 0", 2, "--runs");
}

TEST_F(Cli, BadInputsExitOneWithOneLine) {
  expect_error(std::string("run ") + kTinyMlp + " --weights " + path("none.safetensors"), 1,
               "none.safetensors");
  expect_error(std::string("run ") + kTinyMlp + " --input x", 1, "expects name=file.npy");
  expect_error(std::string("run ") + kTinyMlp + " --input x=" + path("none.npy"), 1, "none.npy");
  expect_error(std::string("run ") + kTinyMlp, 1, "missing input 'x'");
  expect_error(std::string("run ") + kTinyMlp + " --input q=" + path("a.npy"), 1, "no input 'q'");
  expect_error("run --model bert --hidden 100", 1, "give --heads");
  expect_error("run --model llama --heads 5", 1, "multiple of heads");
  expect_error("run --model mlp --layers 3", 1, "--dims");
#ifdef RLX_HAS_OPENCL
  expect_error("run --model bert --device opencl:99", 1, "no device opencl:99");
#else
  expect_error("run --model bert --device opencl", 1, "no backend for device 'opencl'");
#endif
  expect_error("run --graph " + path("none.json"), 1, "none.json");
}

TEST_F(Cli, DevicesListsTheCpuFirst) {
  Result r = rlx("devices");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("cpu\t", 0), 0u) << r.out;
  r = rlx("devices --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"device\": \"cpu\""), std::string::npos) << r.out;
}

TEST_F(Cli, DeviceAutoPredictsEveryDeviceAndRunsOnTheFastest) {
  Result r = rlx("run --model mlp --random-inputs --device auto");
  ASSERT_EQ(r.status, 0) << r.err;
  // The choice, then one line per device with its prediction and measured knobs.
  EXPECT_EQ(r.err.rfind("rlx: --device auto: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("  cpu ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("predicted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GFLOP/s"), std::string::npos) << r.err;
  const std::string chosen = r.err.substr(20, r.err.find('\n') - 20);
  EXPECT_NE(r.out.find("on " + chosen + "\n"), std::string::npos) << r.out << r.err;
}

TEST_F(Cli, ShapeMismatchAndMissingWeightsAreOneLine) {
  write_npy(path("x.npy"), ir::Tensor(ir::Shape::of({2, 5})));
  expect_error(std::string("run ") + kTinyMlp + " --input x=" + path("x.npy"), 1, "input 'x'");
  write_npy(path("x.npy"), ir::Tensor(ir::Shape::of({2, 4})));
  expect_error(std::string("run ") + kTinyMlp + " --batch 3 --input x=" + path("x.npy"), 1,
               "symbol 'batch' is fixed to 3");
  TensorMap w = init_params(build_mlp({.dims = {4, 3, 2}}), 0);
  w.erase("fc2.bias");
  write_safetensors(path("w.safetensors"), w);
  expect_error(std::string("run ") + kTinyMlp + " --input x=" + path("x.npy") + " --weights " +
                   path("w.safetensors"),
               1, "1 missing: fc2.bias");
  std::ofstream(path("corrupt.safetensors")) << "garbage";
  expect_error(std::string("run ") + kTinyMlp + " --input x=" + path("x.npy") + " --weights " +
                   path("corrupt.safetensors"),
               1, "truncated");
}

TEST_F(Cli, RunWritesOutputsThatMatchTheReference) {
  MlpConfig c;
  c.dims = {4, 3, 2};
  ir::Graph g = build_mlp(c);
  TensorMap params = init_params(g, 5);
  write_safetensors(path("w.safetensors"), params);
  TensorMap in = random_inputs(g, {{"batch", 3}}, 6);
  write_npy(path("x.npy"), in.at("x"));
  Result r = rlx(std::string("run ") + kTinyMlp + " --weights " + path("w.safetensors") +
                 " --input x=" + path("x.npy") + " --output y=" + path("y.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  ir::Tensor want = ir::reference::evaluate(g, in, params).at(0);
  EXPECT_LT(ir::max_abs_diff(read_npy(path("y.npy")), want), 1e-5);
  r = rlx(std::string("run ") + kTinyMlp + " --weights " + path("w.safetensors") +
          " --input x=" + path("x.npy") + " --output-dir " + path("outs") + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(read_npy(path("outs/y.npy")).identical(read_npy(path("y.npy"))));
  // Seeded weights when none are given: the same as init_params with --seed.
  r = rlx(std::string("run ") + kTinyMlp + " --seed 5 --input x=" + path("x.npy") +
          " --output y=" + path("y2.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(ir::max_abs_diff(read_npy(path("y2.npy")), want), 1e-5);
}

// A HuggingFace-style BertModel checkpoint ("bert." prefix, embeddings, a pooler the encoder does
// not use): the config is read off the weights, token_type_ids and position_ids take HF defaults;
// the unused tensors need --allow-extra-weights.
TEST_F(Cli, RunsAHuggingFaceStyleBertCheckpoint) {
  BertConfig c;
  c.layers = 2;
  c.hidden = 8;
  c.heads = 2;
  c.ffn = 16;
  c.embeddings = true;
  c.vocab = 20;
  c.max_positions = 32;
  ir::Graph g = build_bert(c);
  TensorMap params = init_params(g, 11);
  TensorMap ckpt;
  for (const auto& [name, t] : params)
    ckpt["bert." + name] = t;
  ckpt["bert.pooler.dense.weight"] = ir::Tensor(ir::Shape::of({8, 8}));
  ckpt["cls.predictions.bias"] = ir::Tensor(ir::Shape::of({20}));
  write_safetensors(path("model.safetensors"), ckpt);
  const ir::Tensor ids = ir::Tensor::from<std::int64_t>({1, 5}, {3, 19, 0, 7, 7});
  write_npy(path("ids.npy"), ids);
  // The pooler and the MLM head are unused: an error unless asked to ignore them.
  expect_error("run --model bert --heads 2 --weights " + path("model.safetensors") +
                   " --input input_ids=" + path("ids.npy"),
               1, "2 unexpected: bert.pooler.dense.weight, cls.predictions.bias");
  Result r = rlx("run --model bert --heads 2 --allow-extra-weights --weights " +
                 path("model.safetensors") + " --input input_ids=" + path("ids.npy") +
                 " --output y=" + path("y.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("layers = 2 (from the weights)"), std::string::npos) << r.out;
  TensorMap in{{"input_ids", ids},
               {"token_type_ids", ir::Tensor(ir::Shape::of({1, 5}, ir::DType::i64))},
               {"position_ids", ir::Tensor::from<std::int64_t>({1, 5}, {0, 1, 2, 3, 4})}};
  ir::Tensor want = ir::reference::evaluate(g, in, params).at(0);
  EXPECT_LT(ir::max_abs_diff(read_npy(path("y.npy")), want), 1e-5);
}

// A HuggingFace-style LlamaForCausalLM checkpoint ("model." prefix, embed_tokens, lm_head,
// grouped-query attention): kv heads come from k_proj's rows; f64 inputs are an error.
TEST_F(Cli, RunsAHuggingFaceStyleLlamaCheckpoint) {
  LlamaConfig c;
  c.layers = 1;
  c.hidden = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.ffn = 32;
  c.embeddings = c.lm_head = true;
  c.vocab = 11;
  c.prefix = "model.";
  ir::Graph g = build_llama(c);
  TensorMap params = init_params(g, 13);
  write_safetensors(path("model.safetensors"), params);
  const ir::Tensor ids = ir::Tensor::from<std::int64_t>({1, 4}, {1, 10, 2, 2});
  write_npy(path("ids.npy"), ids);
  Result r = rlx("run --model llama --heads 2 --weights " + path("model.safetensors") +
                 " --input input_ids=" + path("ids.npy") + " --output y=" + path("y.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("kv_heads = 1 (from the weights)"), std::string::npos) << r.out;
  ir::Tensor want = ir::reference::evaluate(g, {{"input_ids", ids}}, params).at(0);
  EXPECT_EQ(want.shape(), ir::Shape::of({1, 4, 11}));
  EXPECT_LT(ir::max_abs_diff(read_npy(path("y.npy")), want), 1e-5);
}

/// Expects the safetensors file \p file that `rlx grad` wrote to hold "loss" and one gradient per
/// float Param of \p forward, each equal to the reference interpreter's run of gradient_graph.
void expect_reference_gradients(const std::string& file, const ir::Graph& forward, LossKind kind,
                                const std::optional<ir::Tensor>& target, const TensorMap& in,
                                const TensorMap& params) {
  const TensorMap got = read_safetensors(file).tensors;
  const std::vector<ir::Tensor> want =
      ir::reference::evaluate(gradient_graph(forward, kind, target), in, params);
  std::vector<std::string> names{"loss"};
  for (ir::NodeId p : forward.params())
    if (ir::is_float(forward.shape(p).dtype))
      names.push_back(forward.node(p).attr<ir::LeafAttrs>().name);
  ASSERT_EQ(want.size(), names.size());
  EXPECT_EQ(got.size(), names.size());
  double total = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(got.count(names[i])) << names[i];
    const ir::Tensor& g = got.at(names[i]);
    ASSERT_EQ(g.shape(), want[i].shape()) << names[i];
    double scale = 0;
    for (std::int64_t k = 0; k < want[i].numel(); ++k)
      scale = std::max(scale, std::abs(want[i].get_f64(k)));
    total += scale;
    EXPECT_LE(ir::max_abs_diff(g, want[i]), 1e-5 * (1 + scale)) << names[i];
  }
  EXPECT_GT(total, 0); // a gradient of all zeros would pass trivially
}

// `rlx grad` on the MLP for each loss: the loss and every gradient equal grad_with_loss of the
// same forward + loss run through the reference interpreter.
TEST_F(Cli, GradWritesTheReferenceGradientsOfEveryLoss) {
  MlpConfig c;
  c.dims = {4, 3, 2};
  const ir::Graph g = build_mlp(c);
  const TensorMap params = init_params(g, 5);
  write_safetensors(path("w.safetensors"), params);
  const TensorMap in = random_inputs(g, {{"batch", 3}}, 6);
  write_npy(path("x.npy"), in.at("x"));
  const ir::Tensor target = random_inputs(build_mlp({.dims = {2, 2}}), {{"batch", 3}}, 7).at("x");
  write_npy(path("t.npy"), target.cast(ir::DType::f64)); // NumPy's default width is converted
  const ir::Tensor labels = ir::Tensor::from<std::int32_t>({3}, {1, 0, 1});
  write_npy(path("l.npy"), labels);
  const ir::Graph forward = g.bind({{"batch", 3}});
  const std::string base = std::string("grad ") + kTinyMlp + " --weights " + path("w.safetensors") +
                           " --input x=" + path("x.npy");
  Result r = rlx(base + " --out " + path("sum.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("d loss / d fc1.weight"), std::string::npos) << r.out;
  expect_reference_gradients(path("sum.safetensors"), forward, LossKind::sum, {}, in, params);
  r = rlx(base + " --loss mse --target " + path("t.npy") + " -q --out " + path("mse.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  expect_reference_gradients(path("mse.safetensors"), forward, LossKind::mse, target, in, params);
  r = rlx(base + " --loss xent --labels " + path("l.npy") + " -q --out " +
          path("xent.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_reference_gradients(path("xent.safetensors"), forward, LossKind::xent, labels, in, params);
  // Seeded weights when none are given: those of init_params with --seed.
  r = rlx(std::string("grad ") + kTinyMlp + " --seed 5 --input x=" + path("x.npy") + " -q --out " +
          path("seeded.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_reference_gradients(path("seeded.safetensors"), forward, LossKind::sum, {}, in, params);
}

// `rlx grad` on a HuggingFace-style LLaMA checkpoint (embeddings, GQA, lm_head) with a
// cross-entropy loss over the vocabulary: gradients under the checkpoint's names, equal to the
// reference interpreter's. (The builder's param names carry the prefix here, as the file's do.)
TEST_F(Cli, GradOfAHuggingFaceStyleLlamaMatchesTheReference) {
  LlamaConfig c;
  c.layers = 1;
  c.hidden = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.ffn = 32;
  c.embeddings = c.lm_head = true;
  c.vocab = 11;
  c.prefix = "model.";
  const ir::Graph g = build_llama(c);
  const TensorMap params = init_params(g, 13);
  write_safetensors(path("model.safetensors"), params);
  const ir::Tensor ids = ir::Tensor::from<std::int64_t>({1, 4}, {1, 10, 2, 2});
  const ir::Tensor labels = ir::Tensor::from<std::int64_t>({1, 4}, {10, 2, 2, 7});
  write_npy(path("ids.npy"), ids);
  write_npy(path("l.npy"), labels);
  Result r = rlx("grad --model llama --heads 2 --weights " + path("model.safetensors") +
                 " --input input_ids=" + path("ids.npy") + " --loss xent --labels " +
                 path("l.npy") + " --out " + path("g.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("d loss / d model.layers.0.self_attn.k_proj.weight"), std::string::npos)
      << r.out;
  expect_reference_gradients(path("g.safetensors"), g.bind({{"batch", 1}, {"seq", 4}}),
                             LossKind::xent, labels, {{"input_ids", ids}}, params);
}

TEST_F(Cli, ConvertsInputsOfAnotherWidthOfTheSameKind) {
  // NumPy's default float64 arrays (and int32 token ids) are converted, with a note.
  MlpConfig c;
  c.dims = {4, 3, 2};
  ir::Graph g = build_mlp(c);
  TensorMap in = random_inputs(g, {{"batch", 2}}, 1);
  write_npy(path("x64.npy"), in.at("x").cast(ir::DType::f64));
  Result r = rlx(std::string("run ") + kTinyMlp + " --input x=" + path("x64.npy") +
                 " --output y=" + path("y.npy"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("converted from f64"), std::string::npos) << r.out;
  EXPECT_LT(ir::max_abs_diff(read_npy(path("y.npy")),
                             ir::reference::evaluate(g, in, init_params(g, 0)).at(0)),
            1e-5);
  write_npy(path("xi.npy"), ir::Tensor(ir::Shape::of({2, 4}, ir::DType::i32)));
  expect_error(std::string("run ") + kTinyMlp + " --input x=" + path("xi.npy"), 1, "input 'x'");
}

TEST_F(Cli, ExportWritesTheGraphJson) {
  Result r = rlx(std::string("export ") + kTinyMlp + " -o " + path("g.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  ir::Graph g = ir::load_json(slurp(path("g.json")));
  EXPECT_TRUE(g == build_mlp({.dims = {4, 3, 2}}));
  // And the exported graph runs through --graph.
  write_npy(path("x.npy"), ir::Tensor(ir::Shape::of({2, 4})));
  r = rlx("run --graph " + path("g.json") + " --input x=" + path("x.npy"));
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(Cli, BenchJsonHasTheFigures) {
  Result r = rlx(std::string("bench ") + kTinyMlp + " --batch 2 --runs 3 --warmup 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"median_ms", "min_ms", "max_ms", "gflop_per_s", "arena_bytes",
                        "peak_rss_bytes", "compile_ms"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_LE(j["min_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["max_ms"].get<double>());
  EXPECT_EQ(j["runs"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(j["gflop"].get<double>(), 2.0 * 2 * (4 * 3 + 3 * 2) / 1e9);
  // The backend compile's breakdown: its phases add up to at most the backend's total; the
  // weights are prepared once, when they are set (the model is compiled before they are loaded).
  double phases = 0;
  for (const char* k :
       {"backend_lower_ms", "backend_primitives_ms", "backend_weights_ms", "backend_measure_ms"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GE(j[k].get<double>(), 0) << k;
    phases += j[k].get<double>();
  }
  EXPECT_LE(phases, j["backend_compile_ms"].get<double>() + 1e-6);
  EXPECT_EQ(j["backend_weight_bytes"].get<std::int64_t>(), 0);
  EXPECT_GE(j["load_weights_ms"].get<double>(), j["load_weight_preparation_ms"].get<double>());
  EXPECT_GE(j["load_weight_preparation_bytes"].get<std::int64_t>(), 0);
}

TEST_F(Cli, BenchProfileTimesEveryKernelOfTheTimedRuns) {
  // --json: one entry per kernel record, in execution order, with provider, median, share, work.
  Result r =
      rlx(std::string("bench ") + kTinyMlp + " --batch 2 --runs 5 --warmup 1 --json --profile");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("kernels")) << r.out;
  const auto& ks = j["kernels"];
  ASSERT_FALSE(ks.empty());
  double share = 0, flops = 0;
  for (const auto& k : ks) {
    for (const char* f : {"node", "op", "provider", "median_ms", "total_ms", "share", "bytes"})
      EXPECT_TRUE(k.contains(f)) << f << " in " << k.dump();
    EXPECT_GE(k["median_ms"].get<double>(), 0.0);
    // The total is over the 5 timed runs, so it is at least the median (5 samples, 3 above it).
    EXPECT_GE(k["total_ms"].get<double>(), k["median_ms"].get<double>());
    EXPECT_GT(k["bytes"].get<double>(), 0.0);
    share += k["share"].get<double>();
    flops += k["flops"].get<double>();
    // A product has a GFLOP/s rate; every other kernel a GB/s one.
    if (k["flops"].get<double>() > 0 && k["median_ms"].get<double>() > 0) {
      EXPECT_TRUE(k.contains("gflop_per_s")) << k.dump();
    }
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  // The products' flops are the model's (2 * batch * (4*3 + 3*2)), counted per kernel.
  EXPECT_DOUBLE_EQ(flops, j["gflop"].get<double>() * 1e9);
  // The table form names the columns and a provider.
  r = rlx(std::string("bench ") + kTinyMlp + " --batch 2 --runs 3 --warmup 0 --profile");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("median ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos) << r.out;
  // Without --profile there is no table.
  r = rlx(std::string("bench ") + kTinyMlp + " --batch 2 --runs 3 --warmup 0 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("kernels"));
}

TEST_F(Cli, InspectShowsReportsAndWritesSvg) {
  Result r = rlx(std::string("inspect ") + kTinyMlp + " --svg " + path("g.svg"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("matmul"), std::string::npos);
  EXPECT_NE(r.out.find("kernels"), std::string::npos);
  EXPECT_NE(slurp(path("g.svg")).find("<svg"), std::string::npos);
}

/// Sets an environment variable (inherited by the `rlx` subprocess) for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
};

TEST_F(Cli, GemmIsaCapIsHonouredAndABadValueIsAnError) {
  const std::string inspect = std::string("inspect ") + kTinyMlp + " --gemm packed --summary";
  {
    const ScopedEnv env("RLX_GEMM_ISA", "avx3");
    expect_error(inspect, 1, "RLX_GEMM_ISA='avx3' is not one of baseline, avx2, avx512");
  }
  const ScopedEnv env("RLX_GEMM_ISA", "baseline");
  Result r = rlx(inspect);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[packed] (baseline"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[packed] (avx"), std::string::npos) << r.out;
}

TEST_F(Cli, DemoRunsAndChecksAgainstTheReference) {
  Result r = rlx("demo --layers 1 --hidden 64 --ffn 128 --seq 8 --runs 2");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("max |rlx - reference|"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rlx demo: OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arena"), std::string::npos) << r.out;
  // The CPU claims MatMulBiasAct and FusedAttentionBlock: the projections and the FFN fuse, the
  // attention sub-layer becomes one block, and the kernel count drops.
  EXPECT_NE(r.out.find("fusions:  attention_block x1, matmul_bias x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("by fusion"), std::string::npos) << r.out;
  Result nf = rlx("demo --layers 1 --hidden 64 --ffn 128 --seq 8 --runs 2 --no-fuse");
  ASSERT_EQ(nf.status, 0) << nf.err << nf.out;
  EXPECT_NE(nf.out.find("fusions:  none applied"), std::string::npos) << nf.out;
  EXPECT_NE(nf.out.find("rlx demo: OK"), std::string::npos) << nf.out;
  Result bad = rlx("demo --layers 1 --hidden 64 --ffn 128 --seq 8 --runs 2 --no-fuse-pass nope");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("fuse-matmul-bias-act"), std::string::npos) << bad.err;
}

} // namespace
} // namespace rlx::runtime
