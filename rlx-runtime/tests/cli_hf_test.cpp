// cli_hf_test.cpp: `rlx run|bench|inspect --model-dir` on the HuggingFace-layout fixtures of
// data/hf (written by scripts/fixtures/make_hf_fixtures.py): outputs against torch's, computed in
// float64 by plain torch implementations of HF BertModel and LlamaForCausalLM.
#include "cli_testing.hpp"
#include "rlx/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#ifndef RLX_HF_FIXTURES
#error "RLX_HF_FIXTURES must name the HF fixture folder"
#endif

namespace rlx::runtime {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::Result;

/// Max |rlx - torch64| allowed: float32 rounding on these tiny models is ~1e-6; a wrong eps,
/// theta, head count or mask lands at 1e-2 and above.
constexpr double kTol = 1e-4;

std::string fixture(const std::string& name) {
  return (fs::path(RLX_HF_FIXTURES) / name).string();
}

class HfDir : public Cli {
protected:
  /// Runs the fixture \p name with its .npy inputs (+ \p extra flags); \returns max |y - expected|.
  double run_fixture(const std::string& name, const std::vector<std::string>& inputs,
                     const std::string& extra = {}) {
    std::string args = "run --model-dir " + fixture(name) + " --output y=" + path("y.npy");
    for (const auto& in : inputs)
      args += " --input " + in + "=" + fixture(name + "/" + in + ".npy");
    Result r = rlx(args + " " + extra);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.err << r.out;
    if (r.status != 0)
      return 1e9;
    const ir::Tensor want = read_npy(fixture(name + "/expected.npy"));
    const ir::Tensor got = read_npy(path("y.npy"));
    EXPECT_EQ(got.shape(), want.shape());
    return got.shape() == want.shape() ? ir::max_abs_diff(got, want) : 1e9;
  }
};

TEST_F(HfDir, Llama2MultiHeadMatchesTorch) {
  EXPECT_LT(run_fixture("llama2_mha", {"input_ids"}), kTol);
}

// rope_theta 500000, grouped-query attention (6 heads, 2 kv heads), head size 8, tied embeddings,
// rms_norm_eps 1e-5, weights in two shards with an index.
TEST_F(HfDir, Llama3GqaTiedShardedMatchesTorch) {
  EXPECT_LT(run_fixture("llama3_gqa", {"input_ids"}), kTol);
  // The config's values are what make it right: the LLaMA-2 defaults give other numbers.
  EXPECT_GT(run_fixture("llama3_gqa", {"input_ids"}, "--rope-theta 10000"), 1e-3);
}

TEST_F(HfDir, BertWithPaddingAndTokenTypesMatchesTorch) {
  // BertModel keeps its pooler, which the encoder does not use.
  expect_error("run --model-dir " + fixture("bert_padded") +
                   " --input input_ids=" + fixture("bert_padded/input_ids.npy"),
               1, "unexpected: pooler.dense.bias, pooler.dense.weight");
  EXPECT_LT(run_fixture("bert_padded", {"input_ids", "token_type_ids", "attention_mask"},
                        "--allow-extra-weights"),
            kTol);
}

TEST_F(HfDir, FlagsOverrideTheConfig) {
  // --layers 1 on a 2-layer checkpoint leaves layer 1 unused: an error, not a silent drop.
  expect_error("run --model-dir " + fixture("llama2_mha") +
                   " --layers 1 --input input_ids=" + fixture("llama2_mha/input_ids.npy"),
               1, "unexpected: model.layers.1.");
  Result r = rlx("inspect --model-dir " + fixture("llama3_gqa") + " --summary --no-kernels");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("6 heads / 2 kv heads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rope_theta 500000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tied lm head"), std::string::npos) << r.out;
  r = rlx("bench --model-dir " + fixture("llama2_mha") + " --seq 4 --runs 1 --warmup 0 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"median_ms\""), std::string::npos) << r.out;
}

TEST_F(HfDir, UnsupportedConfigsAreClearErrors) {
  expect_error("run --model-dir " + fixture("llama_rope_scaling") + " --random-inputs", 1,
               "rope_scaling is not supported");
  expect_error("inspect --model-dir " + fixture("gpt2_unsupported"), 1,
               "model_type 'gpt2' is not supported");
  expect_error("run --model-dir " + path("nowhere") + " --random-inputs", 1, "config.json");
  expect_error("run --model-dir " + fixture("llama2_mha") + " --model bert --random-inputs", 1,
               "describes a llama model");
  expect_error("run --model-dir " + fixture("llama2_mha") + " --weights " +
                   fixture("llama2_mha/model.safetensors") + " --random-inputs",
               1, "drop --weights");
}

TEST_F(HfDir, BrokenShardIndexIsAClearError) {
  fs::create_directories(path("m"));
  fs::copy_file(fixture("llama3_gqa/config.json"), path("m/config.json"));
  std::ofstream(path("m/model.safetensors.index.json"))
      << R"({"weight_map": {"model.norm.weight": "../../etc/passwd"}})";
  expect_error("run --model-dir " + path("m") + " --random-inputs", 1, "plain file name");
  std::ofstream(path("m/model.safetensors.index.json"))
      << R"({"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}})";
  expect_error("run --model-dir " + path("m") + " --random-inputs", 1, "model-00001-of-00002");
  fs::copy_file(fixture("llama3_gqa/model-00001-of-00002.safetensors"),
                path("m/model-00001-of-00002.safetensors"));
  expect_error("run --model-dir " + path("m") + " --random-inputs", 1,
               "which the weight_map does not list");
}

} // namespace
} // namespace rlx::runtime
