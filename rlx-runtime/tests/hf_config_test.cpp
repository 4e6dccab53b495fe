// hf_config_test.cpp: config.json → BertConfig / LlamaConfig (fields, HF defaults, clear errors),
// the sharded Checkpoint reader, the model size bounds, tied embeddings and set_param's guard.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#ifndef RLX_HF_FIXTURES
#error "RLX_HF_FIXTURES must name the HF fixture folder"
#endif

namespace rlx::runtime {
namespace {

/// Expects \p f to throw an rlx::Error whose message holds \p text.
template <class F> void expect_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning '" << text << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

const char* kLlama = R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
  "hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2,
  "intermediate_size": 96, "vocab_size": 100, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
  "tie_word_embeddings": true, "rope_scaling": null, "torch_dtype": "bfloat16")";

HfConfig llama_with(const std::string& extra) {
  return parse_hf_config(std::string(kLlama) + extra + "}");
}

TEST(HfConfig, ReadsLlamaFields) {
  HfConfig c = llama_with("");
  ASSERT_TRUE(c.llama.has_value());
  EXPECT_EQ(c.llama->hidden, 48);
  EXPECT_EQ(c.llama->heads, 6);
  EXPECT_EQ(c.llama->kv_heads, 2);
  EXPECT_EQ(c.llama->ffn, 96);
  EXPECT_DOUBLE_EQ(c.llama->eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.llama->rope_theta, 500000.0);
  EXPECT_TRUE(c.llama->lm_head);
  EXPECT_TRUE(c.llama->tie_word_embeddings);
  EXPECT_TRUE(c.llama->embeddings);
  // HF's defaults for what is absent: kv heads = heads, eps 1e-6, theta 1e4, untied.
  HfConfig d = parse_hf_config(R"({"model_type": "llama", "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 5})");
  EXPECT_EQ(d.llama->kv_heads, 2);
  EXPECT_DOUBLE_EQ(d.llama->eps, 1e-6);
  EXPECT_DOUBLE_EQ(d.llama->rope_theta, 10000.0);
  EXPECT_FALSE(d.llama->tie_word_embeddings);
  EXPECT_FALSE(d.llama->lm_head);
}

TEST(HfConfig, ReadsBertFields) {
  HfConfig c = parse_hf_config(R"({"model_type": "bert", "architectures": ["BertModel"],
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
    "vocab_size": 100, "type_vocab_size": 3, "max_position_embeddings": 40,
    "layer_norm_eps": 1e-7, "hidden_act": "gelu_new", "hidden_dropout_prob": 0.1})");
  ASSERT_TRUE(c.bert.has_value());
  EXPECT_EQ(c.bert->type_vocab, 3);
  EXPECT_EQ(c.bert->max_positions, 40);
  EXPECT_DOUBLE_EQ(c.bert->eps, 1e-7);
  EXPECT_EQ(c.bert->act, ir::Activation::gelu_tanh);
  EXPECT_TRUE(c.bert->embeddings && c.bert->padding_mask);
}

TEST(HfConfig, UnsupportedIsAnErrorNeverADefault) {
  expect_error([] { llama_with(R"(, "rope_scaling": {"type": "linear", "factor": 2.0})"); },
               "rope_scaling is not supported");
  expect_error([] { llama_with(R"(, "hidden_act": "gelu")"); }, "hidden_act");
  expect_error([] { llama_with(R"(, "attention_bias": true)"); }, "attention_bias");
  expect_error([] { llama_with(R"(, "head_dim": 16)"); }, "head_dim");
  expect_error([] { llama_with(R"(, "sliding_window": 4096)"); },
               "unsupported config field 'sliding_window'");
  expect_error([] { llama_with(R"(, "num_hidden_layers": 100000)"); }, "num_hidden_layers");
  expect_error([] { llama_with(R"(, "num_attention_heads": 0)"); }, "num_attention_heads");
  expect_error([] { llama_with(R"(, "rms_norm_eps": -1)"); }, "rms_norm_eps");
  expect_error([] { llama_with(R"(, "hidden_size": "64")"); }, "hidden_size");
  expect_error([] { llama_with(R"(, "architectures": ["MistralForCausalLM"])"); },
               "MistralForCausalLM");
  expect_error([] { parse_hf_config(R"({"model_type": "gpt2"})"); }, "'gpt2' is not supported");
  expect_error([] { parse_hf_config(R"({"hidden_size": 4})"); }, "model_type is required");
  expect_error([] { parse_hf_config("[1, 2"); }, "not valid JSON");
  expect_error(
      [] {
        parse_hf_config(R"({"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 1,
          "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 9,
          "position_embedding_type": "relative_key"})");
      },
      "position_embedding_type");
  expect_error([] { read_hf_config("/nonexistent/rlx"); }, "config.json");
}

TEST(Checkpoint, ReadsShardsThroughTheIndex) {
  const std::string dir = std::string(RLX_HF_FIXTURES) + "/llama3_gqa";
  Checkpoint ck(dir);
  EXPECT_EQ(ck.files().size(), 2u);
  EXPECT_NE(ck.find("model.embed_tokens.weight"), nullptr);
  EXPECT_NE(ck.find("model.norm.weight"), nullptr);
  EXPECT_EQ(ck.find("lm_head.weight"), nullptr); // tied
  EXPECT_THROW(Checkpoint("/nonexistent/rlx.safetensors"), IoError);
}

TEST(Models, SizesAreBounded) {
  LlamaConfig l;
  l.layers = ModelLimits::layers + 1;
  expect_error([&] { build_llama(l); }, "layers must be in [1, 1024]");
  BertConfig b;
  b.hidden = ModelLimits::hidden + 64;
  expect_error([&] { build_bert(b); }, "hidden must be in");
  MlpConfig m;
  m.dims = {4, ModelLimits::mlp_width + 1};
  expect_error([&] { build_mlp(m); }, "dims[1]");
}

TEST(Models, TiedEmbeddingsProjectWithTheEmbeddingTable) {
  LlamaConfig c;
  c.layers = 1;
  c.hidden = 16;
  c.heads = 2;
  c.kv_heads = 2;
  c.ffn = 32;
  c.vocab = 11;
  c.embeddings = c.lm_head = c.tie_word_embeddings = true;
  ir::Graph tied = build_llama(c);
  EXPECT_FALSE(tied.find_leaf("lm_head.weight", true).valid());
  c.tie_word_embeddings = false;
  ir::Graph untied = build_llama(c);
  TensorMap p = init_params(untied, 3);
  p["lm_head.weight"] = p.at("embed_tokens.weight");
  TensorMap tied_p = p;
  tied_p.erase("lm_head.weight");
  const TensorMap in{{"input_ids", ir::Tensor::from<std::int64_t>({1, 3}, {1, 10, 4})}};
  EXPECT_TRUE(ir::reference::evaluate(tied, in, tied_p)
                  .at(0)
                  .identical(ir::reference::evaluate(untied, in, p).at(0)));
  c.tie_word_embeddings = true;
  c.embeddings = false;
  expect_error([&] { build_llama(c); }, "tie_word_embeddings");
}

TEST(Executable, SetParamRejectsAnEmptyTensorForAScalar) {
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.mul(b.input("x", ir::Shape::of({2})), b.param("s", ir::Shape::scalar())));
  Session s(Device::cpu());
  Executable exe = s.compile(g);
  // A default Tensor is empty, rank 0 like the param: it used to pass the guard and segfault.
  expect_error([&] { exe.set_param("s", ir::Tensor()); }, "empty tensor");
}

} // namespace
} // namespace rlx::runtime
