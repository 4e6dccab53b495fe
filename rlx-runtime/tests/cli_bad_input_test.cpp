// cli_bad_input_test.cpp: the built `rlx` command over a table of bad invocations: every size
// flag at zero, negative, huge and malformed values on every command that takes it; missing,
// unreadable and unwritable paths for every command; hostile files (a graph whose parameter size
// overflows, checkpoints with odd shapes or layer names). Each must end with exit status 1..123,
// exactly one stderr line "rlx: error: ...", and nothing on stdout that claims success. Every case
// is its own ctest test (TEST_P), and none builds a big graph.
#include "cli_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace rlx::runtime {
namespace {

namespace fs = std::filesystem;

/// One bad invocation: a name for the test and the arguments. "@" in the arguments is replaced
/// by the scratch folder, where SetUp has written the hostile files.
struct BadCase {
  std::string name;
  std::string args;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.args;
}

/// A gtest-safe name: letters and digits, everything else '_'.
std::string ident(const std::string& s) {
  std::string o;
  for (char ch : s)
    o += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return o;
}

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases;
  auto add = [&](const std::string& name, const std::string& args) {
    cases.push_back({ident(name) + "_" + std::to_string(cases.size()), args});
  };
  const std::string huge = "99999999999999999999999"; // past int64
  const std::vector<std::string> model_cmds{"run --random-inputs",
                                            "bench --runs 1",
                                            "inspect",
                                            "export",
                                            "demo --runs 1",
                                            "grad --random-inputs --out @/g.safetensors"};
  // Size flags of every model command: 0 where 0 is invalid, -1, past the bound, past int64,
  // malformed.
  struct FlagValues {
    const char* flag;
    std::vector<std::string> values;
    const char* model;
  };
  const std::vector<FlagValues> flags{
      {"--layers", {"0", "-1", "1025", huge, "abc", "1.5"}, "llama"},
      {"--hidden", {"0", "-1", "65537", huge, "abc"}, "llama"},
      {"--heads", {"0", "-1", "4097", huge, "x"}, "llama"},
      {"--kv-heads", {"0", "-1", "4097", huge, "two"}, "llama"},
      {"--ffn", {"0", "-1", "1048577", huge, "1e3"}, "llama"},
      {"--vocab", {"0", "-1", "16777217", huge, "many"}, "llama --embeddings"},
      {"--batch", {"0", "-1", "4611686018427387904", huge, "b"}, "llama"},
      {"--seq", {"0", "-1", "16777217", huge, "s"}, "llama"},
      {"--dims", {"0", "-1", "4,0,2", "4,16777217", huge, "4,,2", "a,b"}, "mlp"},
      {"--threads", {"-1", "257", "100000", huge, "all"}, "mlp"},
      {"--seed", {"-1", huge, "seed"}, "mlp"},
      {"--norm-eps", {"0", "-1", "nan", "inf", "abc"}, "llama"},
      {"--rope-theta", {"0", "-1", "nan", "inf", "abc"}, "llama"},
      {"--model", {"0", "-1", "gpt", ""}, ""},
      {"--gemm", {"0", "mkl"}, "mlp"},
      {"--device", {"0", "-1", "tpu", "opencl:99"}, "mlp"},
  };
  for (const auto& cmd : model_cmds)
    for (const auto& f : flags)
      for (const auto& v : f.values) {
        const std::string model =
            std::string(f.model).empty() ? "" : "--model " + std::string(f.model) + " ";
        add(cmd.substr(0, cmd.find(' ')) + f.flag + v, cmd + " " + model + f.flag + " '" + v + "'");
      }
  // Command-specific counts.
  for (const std::string& v : std::vector<std::string>{"0", "-1", "1000001", huge, "ten"})
    add("bench_runs" + v, "bench --model mlp --runs '" + v + "'");
  for (const std::string& v : std::vector<std::string>{"-1", "1000001", huge, "none"})
    add("bench_warmup" + v, "bench --model mlp --warmup '" + v + "'");
  for (const std::string& v : std::vector<std::string>{"0", "-1", "1000001", huge, "x"})
    add("demo_runs" + v, "demo --runs '" + v + "'");
  for (const std::string& v : std::vector<std::string>{"-1", "nan", "inf", "tight"})
    add("demo_tolerance" + v, "demo --tolerance '" + v + "'");
  // Flags that do not fit together, and values that only the model can judge.
  add("heads_not_dividing", "run --model llama --hidden 64 --heads 3 --random-inputs");
  add("kv_heads_not_dividing", "run --model llama --heads 8 --kv-heads 3 --random-inputs");
  add("bert_kv_heads", "run --model bert --heads 4 --kv-heads 2 --random-inputs");
  add("bert_no_heads", "run --model bert --hidden 100 --random-inputs");
  add("odd_head_dim", "run --model llama --hidden 24 --heads 8 --random-inputs");
  add("tie_without_lm_head", "run --model llama --tie-word-embeddings --random-inputs");
  add("mlp_transformer_flag", "run --model mlp --layers 2 --random-inputs");
  add(
      "mlp_too_many_layers", "run --model mlp --dims " + [] {
        std::string d = "2";
        for (int i = 0; i < 1100; ++i)
          d += ",2";
        return d;
      }() + " --random-inputs");
  add("graph_with_flags", "run --graph @/ok.json --layers 2");
  add("seq_past_positions",
      "run --model-dir @/hf/bert_padded --allow-extra-weights --seq 65 --random-inputs");
  add("mask_value_two", "run --model-dir @/hf/bert_padded --allow-extra-weights "
                        "--input input_ids=@/hf/bert_padded/input_ids.npy "
                        "--input attention_mask=@/mask2.npy");
  add("mask_value_negative", "run --model-dir @/hf/bert_padded --allow-extra-weights "
                             "--input input_ids=@/hf/bert_padded/input_ids.npy "
                             "--input attention_mask=@/mask_neg.npy");
  add("extra_layer_weights", "run --model mlp --dims 4,3,2 --weights @/mlp_extra.safetensors "
                             "--random-inputs");
  // Sizes inside every bound whose product no machine holds: an error before allocating.
  add("run_batch_seq_too_big",
      "run --model bert --layers 1 --batch 16777216 --seq 16777216 --random-inputs");
  add("bench_arena_too_big", "bench --model mlp --dims 4,16777216 --batch 16777216 --runs 1");
  // Hostile files.
  add("graph_param_overflow", "run --graph @/overflow.json --random-inputs");
  add("graph_param_too_big", "run --graph @/too_big.json --random-inputs");
  add("inspect_graph_overflow", "inspect --graph @/overflow.json");
  add("mlp_rank1_weight", "run --model mlp --weights @/rank1.safetensors --random-inputs");
  add("mlp_rank0_weight", "run --model mlp --weights @/rank0.safetensors --random-inputs");
  add("llama_far_layer", "run --model llama --heads 2 --weights @/far_layer.safetensors "
                         "--random-inputs");
  add("llama_far_layer_no_heads", "run --model llama --weights @/far_layer.safetensors "
                                  "--random-inputs");
  add("llama_huge_dim", "run --model llama --heads 2 --weights @/huge_dim.safetensors "
                        "--random-inputs");
  // Missing, unreadable (a folder, garbage) and unwritable paths for every command.
  for (const std::string cmd : {"run --random-inputs", "bench --runs 1"}) {
    const std::string c = cmd.substr(0, cmd.find(' '));
    add(c + "_weights_missing", cmd + " --model mlp --weights @/none.safetensors");
    add(c + "_weights_folder", cmd + " --model mlp --weights @");
    add(c + "_weights_garbage", cmd + " --model mlp --weights @/garbage.bin");
    add(c + "_weights_index_garbage", cmd + " --model mlp --weights @/garbage.index.json");
  }
  for (const std::string cmd :
       {"run --random-inputs", "bench --runs 1", "inspect", "export", "demo --runs 1"}) {
    const std::string c = cmd.substr(0, cmd.find(' '));
    add(c + "_graph_missing", cmd + " --graph @/none.json");
    add(c + "_graph_folder", cmd + " --graph @");
    add(c + "_graph_garbage", cmd + " --graph @/garbage.bin");
    add(c + "_model_dir_missing", cmd + " --model-dir @/none");
    add(c + "_model_dir_file", cmd + " --model-dir @/garbage.bin");
    add(c + "_model_dir_bad_config", cmd + " --model-dir @/badcfg");
    add(c + "_model_dir_rope_scaling", cmd + " --model-dir @/hf/llama_rope_scaling");
    add(c + "_model_dir_unsupported", cmd + " --model-dir @/hf/gpt2_unsupported");
  }
  add("run_input_missing", "run --model mlp --dims 4,3,2 --input x=@/none.npy");
  add("run_input_folder", "run --model mlp --dims 4,3,2 --input x=@");
  add("run_input_garbage", "run --model mlp --dims 4,3,2 --input x=@/garbage.bin");
  add("run_input_malformed", "run --model mlp --dims 4,3,2 --input x");
  add("run_input_unknown", "run --model mlp --dims 4,3,2 --input q=@/x.npy");
  add("run_output_unwritable",
      "run --model mlp --dims 4,3,2 --input x=@/x.npy --output y=@/garbage.bin/y.npy");
  add("run_output_unknown", "run --model mlp --dims 4,3,2 --input x=@/x.npy --output z=@/z.npy");
  add("run_output_dir_unwritable",
      "run --model mlp --dims 4,3,2 --input x=@/x.npy --output-dir @/garbage.bin/out");
  // rlx grad: losses, targets, labels and the output file.
  const std::string grad = "grad --model mlp --dims 4,3,2 --input x=@/x.npy ";
  add("grad_loss_unknown", grad + "--loss hinge --out @/g.safetensors");
  add("grad_loss_empty", grad + "--loss '' --out @/g.safetensors");
  add("grad_out_required", grad);
  add("grad_out_empty", grad + "--out ''");
  add("grad_out_unwritable", grad + "--out @/garbage.bin/g.safetensors");
  add("grad_out_folder", grad + "--out @");
  add("grad_mse_no_target", grad + "--loss mse --out @/g.safetensors");
  add("grad_xent_no_labels", grad + "--loss xent --out @/g.safetensors");
  add("grad_target_with_sum", grad + "--target @/t.npy --out @/g.safetensors");
  add("grad_labels_with_mse", grad + "--loss mse --target @/t.npy --labels @/labels.npy "
                                     "--out @/g.safetensors");
  add("grad_target_missing", grad + "--loss mse --target @/none.npy --out @/g.safetensors");
  add("grad_target_folder", grad + "--loss mse --target @ --out @/g.safetensors");
  add("grad_target_garbage", grad + "--loss mse --target @/garbage.bin --out @/g.safetensors");
  add("grad_target_wrong_shape", grad + "--loss mse --target @/x.npy --out @/g.safetensors");
  add("grad_target_integer", grad + "--loss mse --target @/labels2x2.npy --out @/g.safetensors");
  add("grad_labels_missing", grad + "--loss xent --labels @/none.npy --out @/g.safetensors");
  add("grad_labels_garbage", grad + "--loss xent --labels @/garbage.bin --out @/g.safetensors");
  add("grad_labels_float", grad + "--loss xent --labels @/labels_f.npy --out @/g.safetensors");
  add("grad_labels_wrong_shape",
      grad + "--loss xent --labels @/labels2x2.npy --out @/g.safetensors");
  add("grad_labels_too_big", grad + "--loss xent --labels @/labels_big.npy --out @/g.safetensors");
  add("grad_labels_negative", grad + "--loss xent --labels @/labels_neg.npy --out @/g.safetensors");
  add("grad_labels_past_int64",
      grad + "--loss xent --labels @/labels_i64max.npy --out @/g.safetensors");
  add("grad_input_missing", "grad --model mlp --dims 4,3,2 --input x=@/none.npy --out @/g.st");
  add("grad_input_malformed", "grad --model mlp --dims 4,3,2 --input x --out @/g.st");
  add("grad_input_unknown", "grad --model mlp --dims 4,3,2 --input q=@/x.npy --out @/g.st");
  add("grad_input_not_given", "grad --model mlp --dims 4,3,2 --out @/g.st");
  add("grad_weights_missing", grad + "--weights @/none.safetensors --out @/g.st");
  add("grad_integer_only_model", "grad --graph @/int_only.json --random-inputs --out @/g.st");
  add("grad_no_float_param", "grad --graph @/no_param.json --random-inputs --out @/g.st");
  add("export_unwritable", "export --model mlp -o @/garbage.bin/g.json");
  add("inspect_svg_unwritable", "inspect --model mlp --svg @/garbage.bin/g.svg");
  add("no_subcommand", "");
  add("unknown_subcommand", "frobnicate");
  add("unknown_flag", "run --bogus");
  return cases;
}

class BadInput : public testing::Cli, public ::testing::WithParamInterface<BadCase> {
protected:
  void SetUp() override {
    Cli::SetUp();
    std::ofstream(path("garbage.bin")) << "garbage";
    std::ofstream(path("garbage.index.json")) << "{ not json";
    fs::create_directories(path("badcfg"));
    std::ofstream(path("badcfg/config.json")) << "[1, 2";
    fs::create_directory_symlink(RLX_HF_FIXTURES, path("hf"));
    // A graph whose one parameter's byte size overflows int64 (the issue's heap overflow), and
    // one that fits int64 but no machine.
    for (auto [file, size] : {std::pair{"overflow.json", 4611686018427387905LL},
                              std::pair{"too_big.json", 1LL << 60}}) {
      ir::Graph g("hostile");
      ir::Builder b(g);
      b.output(b.neg(b.param("w", ir::Shape::of({size}))));
      std::ofstream(path(file)) << ir::save_json(g);
    }
    std::ofstream(path("ok.json")) << ir::save_json(build_mlp({.dims = {4, 3, 2}}));
    write_npy(path("x.npy"), ir::Tensor(ir::Shape::of({2, 4})));
    auto mask = [&](const std::string& file, std::int64_t bad) {
      ir::Tensor m(ir::Shape::of({2, 9}, ir::DType::i64));
      for (std::int64_t i = 0; i < m.numel(); ++i)
        m.set_i64(i, 1);
      m.set_i64(4, bad);
      write_npy(path(file), m);
    };
    write_npy(path("t.npy"), ir::Tensor(ir::Shape::of({2, 2})));
    write_npy(path("labels.npy"), ir::Tensor::from<std::int64_t>({2}, {0, 1}));
    write_npy(path("labels_f.npy"), ir::Tensor::from<float>({2}, {0, 1}));
    write_npy(path("labels2x2.npy"), ir::Tensor(ir::Shape::of({2, 2}, ir::DType::i64)));
    write_npy(path("labels_big.npy"), ir::Tensor::from<std::int64_t>({2}, {0, 2}));
    write_npy(path("labels_neg.npy"), ir::Tensor::from<std::int32_t>({2}, {-1, 0}));
    write_npy(path("labels_i64max.npy"),
              ir::Tensor::from<std::int64_t>({2}, {0, std::numeric_limits<std::int64_t>::max()}));
    {
      ir::Graph g("int_only");
      ir::Builder b(g);
      b.output(b.add(b.input("x", ir::Shape::of({2}, ir::DType::i64)),
                     b.param("w", ir::Shape::of({2}, ir::DType::i64))));
      std::ofstream(path("int_only.json")) << ir::save_json(g);
      ir::Graph h("no_param");
      ir::Builder c(h);
      c.output(c.neg(c.input("x", ir::Shape::of({2}))));
      std::ofstream(path("no_param.json")) << ir::save_json(h);
    }
    mask("mask2.npy", 2);
    mask("mask_neg.npy", -1);
    TensorMap w = init_params(build_mlp({.dims = {4, 3, 2}}), 0);
    w["fc3.weight"] = ir::Tensor(ir::Shape::of({2, 2}));
    write_safetensors(path("mlp_extra.safetensors"), w);
    write_safetensors(path("rank1.safetensors"), {{"fc1.weight", ir::Tensor(ir::Shape::of({4}))}});
    write_safetensors(path("rank0.safetensors"), {{"fc1.weight", ir::Tensor(ir::Shape::of({}))}});
    write_safetensors(path("far_layer.safetensors"),
                      {{"model.layers.100000.x", ir::Tensor(ir::Shape::of({1}))}});
    write_safetensors(path("huge_dim.safetensors"), {{"model.layers.0.self_attn.q_proj.weight",
                                                      ir::Tensor(ir::Shape::of({70000, 0}))}});
  }

  /// The case's arguments with "@" replaced by the scratch folder.
  std::string args() const {
    std::string a = GetParam().args;
    for (std::size_t at; (at = a.find('@')) != std::string::npos;)
      a.replace(at, 1, dir_.string());
    return a;
  }
};

TEST_P(BadInput, OneErrorLineAndAFailingStatus) {
  const std::string a = args();
  const testing::Result r = rlx(a);
  EXPECT_GE(r.status, 1) << a << "\n" << r.err;
  EXPECT_LE(r.status, 123) << a << "\n" << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << a << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("rlx: error: ", 0), 0u) << a << "\n" << r.err;
  for (const char* success : {"OK", " -> ", "wrote ", "median", "max |rlx"})
    EXPECT_EQ(r.out.find(success), std::string::npos) << a << "\n" << r.out;
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

} // namespace
} // namespace rlx::runtime
