// cli_train_tokens_test.cpp: `rlx train` on token ids: a tiny LLaMA on GPL-3 bytes
// (data/gpl3-bytes, scripts/data/export_text_bytes.py) lowers its validation loss, BERT trains with
// a masked-LM and a classifier head, a graph file trains through its named loss output, --plot
// writes a well-formed SVG with both curves, --resume is bit-identical, and bad token data is one
// error line each.
#include "cli_testing.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <random>

namespace rlx::runtime::testing {
namespace {

const std::string kBytes = RLX_TEXT_BYTES_DIR;

/// The evaluation losses of a run's JSON lines, in order.
std::vector<double> eval_losses(const std::vector<nlohmann::json>& rows, const char* key) {
  std::vector<double> r;
  for (const auto& j : rows)
    if (j.contains(key))
      r.push_back(j[key].get<double>());
  return r;
}

/// Whether \p s is well-formed XML as far as an SVG needs: a prolog, balanced and properly nested
/// elements, quoted attributes, no stray '<' or '&' in text. Counts elements named \p tag with
/// class="\p cls" into \p found.
bool well_formed(const std::string& s, std::map<std::string, int>& found) {
  std::vector<std::string> open;
  std::size_t i = 0;
  bool root = false;
  while (i < s.size()) {
    if (s[i] != '<') {
      if (s[i] == '&') {
        const std::size_t semi = s.find(';', i);
        if (semi == std::string::npos || semi - i > 6)
          return false;
      }
      ++i;
      continue;
    }
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos)
      return false;
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?")) {
      if (!tag.ends_with("?"))
        return false;
      continue;
    }
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1))
        return false;
      open.pop_back();
      continue;
    }
    const bool self = tag.ends_with("/");
    if (self)
      tag.pop_back();
    const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
    if (name.empty() || tag.find('<') != std::string::npos)
      return false;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0)
      return false;
    if (open.empty()) {
      if (root)
        return false; // a second root element
      root = true;
    }
    const std::size_t c = tag.find("class=\"");
    if (c != std::string::npos)
      ++found[name + "." + tag.substr(c + 7, tag.find('"', c + 7) - c - 7)];
    if (!self)
      open.push_back(name);
  }
  return root && open.empty();
}

TEST_F(Cli, TinyLlamaOnBytesLowersItsValidationLossAndPlotsIt) {
  Result r = rlx("train --model llama --data " + kBytes +
                 " --vocab 256 --optimizer adamw --lr 3e-3 --batch 8 --seq 32 --steps 60 "
                 "--eval-every 20 --eval-batches 4 --json --plot " +
                 path("loss.svg"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = json_lines(r.out);
  const auto ev = eval_losses(rows, "eval_loss");
  ASSERT_EQ(ev.size(), 3u) << r.out;
  EXPECT_LT(ev[2], ev[0] - 0.2) << r.out;           // learning, measured on unseen text
  EXPECT_LT(ev[0], std::log(256.0) + 0.5) << r.out; // no worse than guessing, after 20 steps
  EXPECT_GT(rows.back()["tokens_per_s"].get<double>(), 0);
  const std::string svg = slurp(path("loss.svg"));
  std::map<std::string, int> found;
  EXPECT_TRUE(well_formed(svg, found)) << svg.substr(0, 400);
  EXPECT_EQ(found["polyline.train"], 1) << svg.substr(0, 400);
  EXPECT_EQ(found["polyline.eval"], 1) << svg.substr(0, 400);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
}

TEST_F(Cli, ProfileWritesThePerKernelTimesOfTheStep) {
  Result r = rlx("train --model llama --data " + kBytes +
                 " --batch 2 --seq 8 --steps 3 --json --profile " + path("prof.txt"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string prof = slurp(path("prof.txt"));
  EXPECT_EQ(prof.rfind("kernel profile over 2 runs", 0), 0u) << prof.substr(0, 300);
  EXPECT_NE(prof.find("matmul"), std::string::npos) << prof.substr(0, 300);
}

TEST_F(Cli, TokenTrainingResumesBitIdentically) {
  const std::string common = "train --model llama --data " + kBytes +
                             " --optimizer adamw --lr 2e-3 --batch 4 --seq 16 --seed 5 --json";
  ASSERT_EQ(rlx(common + " --steps 12 --save " + path("full.st")).status, 0);
  ASSERT_EQ(rlx(common + " --steps 5 --save " + path("half.st")).status, 0);
  Result r = rlx(common + " --steps 12 --resume " + path("half.st") + " --save " + path("b.st"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string a = slurp(path("full.st")), b = slurp(path("b.st"));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "a resumed run ended with other bytes than an uninterrupted one";
}

TEST_F(Cli, BertMaskedLmLearnsFromASafetensorsFile) {
  // The GPL bytes as one safetensors file (train_ids / val_ids tensors), bert's masked LM.
  write_safetensors(path("bytes.safetensors"), {{"train_ids", read_npy(kBytes + "/train_ids.npy")},
                                                {"val_ids", read_npy(kBytes + "/val_ids.npy")}});
  Result r = rlx("train --model bert --data " + path("bytes.safetensors") +
                 " --layers 2 --hidden 64 --heads 2 --optimizer adamw --lr 2e-3 --batch 8 "
                 "--seq 32 --steps 40 --eval-every 20 --eval-batches 4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = eval_losses(json_lines(r.out), "eval_loss");
  ASSERT_EQ(ev.size(), 2u) << r.out;
  EXPECT_LT(ev[1], ev[0]) << r.out;
}

/// Sequences of ids in [0, 20) whose label says whether token 1 is >= 10 (learnable through the
/// [CLS] pooler only if attention carries token 1's information to position 0).
void write_classification(const std::string& dir, std::int64_t n, unsigned seed,
                          const std::string& split) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> tok(0, 19);
  ir::Tensor ids(ir::Shape({n, 12}, ir::DType::i32)), labels(ir::Shape({n}, ir::DType::i64));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t j = 0; j < 12; ++j)
      ids.data<std::int32_t>()[static_cast<std::size_t>(r * 12 + j)] = tok(rng);
    labels.data<std::int64_t>()[static_cast<std::size_t>(r)] =
        ids.data<std::int32_t>()[static_cast<std::size_t>(r * 12 + 1)] >= 10;
  }
  write_npy(dir + "/" + split + "_ids.npy", ids);
  write_npy(dir + "/" + split + "_labels.npy", labels);
}

TEST_F(Cli, BertClassifierLearnsALabelOfItsTokens) {
  write_classification(path(""), 256, 1, "train");
  write_classification(path(""), 64, 2, "val");
  Result r = rlx("train --model bert --data " + path("") +
                 " --vocab 20 --layers 2 --hidden 32 --heads 2 --optimizer adamw --lr 3e-3 "
                 "--batch 16 --seq 12 --steps 96 --eval-every 48 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = eval_losses(json_lines(r.out), "eval_loss");
  ASSERT_EQ(ev.size(), 2u) << r.out;
  EXPECT_LT(ev[1], 0.6) << r.out; // ln 2 = 0.69 is chance
}

TEST_F(Cli, GraphFileTrainsThroughItsNamedLossOutput) {
  // y = x W^T + b with its own MSE loss output "loss": linear regression to a known W.
  ir::Graph g("regression");
  {
    ir::Builder b(g);
    const ir::NodeId x = b.input("x", ir::Shape({ir::Dim::sym("batch"), ir::Dim(3)}));
    const ir::NodeId t = b.input("t", ir::Shape({ir::Dim::sym("batch"), ir::Dim(2)}));
    const ir::NodeId y =
        b.linear(x, b.param("w", ir::Shape::of({2, 3})), b.param("b", ir::Shape::of({2})));
    const ir::NodeId d = b.sub(y, t);
    b.output(y);
    b.output(b.op(ir::OpKind::Reduce, {b.mul(d, d)},
                  ir::ReduceAttrs{ir::ReduceOp::mean, {0, 1}, false}, "loss"));
  }
  std::ofstream(path("g.json")) << ir::save_json(g);
  std::mt19937 rng(3);
  std::normal_distribution<float> n01;
  for (const std::string split : {"train", "val"}) {
    ir::Tensor x(ir::Shape({64, 3})), t(ir::Shape({64, 2}));
    for (std::int64_t r = 0; r < 64; ++r) {
      float v[3];
      for (std::int64_t k = 0; k < 3; ++k)
        x.data<float>()[static_cast<std::size_t>(r * 3 + k)] = v[k] = n01(rng);
      t.data<float>()[static_cast<std::size_t>(r * 2)] = 2 * v[0] - v[1] + 0.5f;
      t.data<float>()[static_cast<std::size_t>(r * 2 + 1)] = v[2] - 1;
    }
    write_npy(path(split + "_x.npy"), x);
    write_npy(path(split + "_t.npy"), t);
  }
  Result r = rlx("train --graph " + path("g.json") + " --loss-output loss --data " + path("") +
                 " --optimizer sgd --lr 0.1 --batch 16 --steps 200 --eval-every 100 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ev = eval_losses(json_lines(r.out), "eval_loss");
  ASSERT_EQ(ev.size(), 2u) << r.out;
  EXPECT_LT(ev[1], 1e-3) << r.out; // the exact linear map is found
  // The same graph with --loss mse on its output 0 and target "target": the data lacks it.
  expect_error("train --graph " + path("g.json") + " --loss mse --data " + path("") + " --steps 2",
               1, "train_target");
  expect_error("train --graph " + path("g.json") + " --data " + path("") + " --steps 2", 1,
               "--loss-output");
  expect_error("train --graph " + path("g.json") + " --loss-output nope --data " + path(""), 1,
               "no output named 'nope'");
  expect_error("train --graph " + path("g.json") + " --model llama --loss-output loss --data " +
                   path(""),
               2, "excludes");
}

TEST_F(Cli, BadTokenDataIsOneErrorLineEach) {
  const std::string llama = "train --model llama --steps 2 --batch 2 --seq 8 --data ";
  std::filesystem::create_directories(path("f"));
  write_npy(path("f/train_ids.npy"), ir::Tensor(ir::Shape({100}, ir::DType::f32)));
  expect_error(llama + path("f"), 1, "int32 or int64");
  std::filesystem::create_directories(path("r3"));
  write_npy(path("r3/train_ids.npy"), ir::Tensor(ir::Shape({2, 3, 20}, ir::DType::i64)));
  expect_error(llama + path("r3"), 1, "a stream [T] or sequences [N, L]");
  expect_error(llama + kBytes + " --vocab 100", 1, "outside [0, 100)");
  std::filesystem::create_directories(path("neg"));
  write_npy(path("neg/train_ids.npy"), ir::Tensor::from<std::int64_t>({3}, {1, -4, 2}));
  expect_error(llama + path("neg"), 1, "token id -4");
  std::filesystem::create_directories(path("short"));
  write_npy(path("short/train_ids.npy"), ir::Tensor::from<std::int64_t>({3}, {1, 4, 2}));
  expect_error(llama + path("short"), 1, "a window needs 9 tokens");
  std::filesystem::create_directories(path("empty"));
  expect_error(llama + path("empty"), 1, "lacks train_ids");
  expect_error(llama + kBytes + " --head cls", 1, "--head is a bert option");
  expect_error("train --model bert --head cls --steps 2 --data " + kBytes, 1, "train_labels");
  expect_error("train --model bert --mask-id 300 --vocab 256 --steps 2 --data " + kBytes, 1,
               "--mask-id 300");
  expect_error(llama + kBytes + " --loss mse", 1, "--loss");
  expect_error(llama + kBytes + " --hidden 64,64", 1, "--hidden");
  expect_error(llama + path("none"), 2, "none");
  std::ofstream(path("x.bin")) << "junk";
  expect_error(llama + path("x.bin"), 1, ".safetensors");
  expect_error("train --model llama --steps 2 --data " + kBytes + " --seq 0", 2, "--seq");
  expect_error("train --model llama --steps 2 --data " + kBytes + " --config huge", 1, "--config");
}

} // namespace
} // namespace rlx::runtime::testing
