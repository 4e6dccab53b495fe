// cli_train_test.cpp: `rlx train` on the digits data (data/digits): reaches >= 95% test accuracy,
// --save / --resume continue bit-identically, bad invocations are one-line errors.
#include "cli_testing.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace rlx::runtime::testing {
namespace {

const std::string kData = RLX_DIGITS_DIR;

TEST_F(Cli, TrainsTheDigitsMlpTo95Percent) {
  Result r = rlx("train --model mlp --data " + kData +
                 " --optimizer sgd --lr 0.1 --momentum 0.9 --batch 32 --epochs 12 --seed 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_GE(rows.size(), 2u) << r.out;
  const auto& last_eval = rows[rows.size() - 2];
  ASSERT_TRUE(last_eval.contains("test_accuracy")) << r.out;
  EXPECT_GE(last_eval["test_accuracy"].get<double>(), 0.95) << r.out;
  EXPECT_LT(last_eval["train_loss"].get<double>(), rows.front()["train_loss"].get<double>());
  EXPECT_TRUE(rows.back()["done"].get<bool>());
}

TEST_F(Cli, AdamWWithCosineScheduleLearns) {
  Result r = rlx("train --model mlp --data " + kData +
                 " --optimizer adamw --lr 0.003 --schedule cosine --warmup 20 --batch 64 "
                 "--steps 200 --eval-every 100 --clip 5 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_GE(rows[1]["test_accuracy"].get<double>(), 0.9) << r.out;
}

TEST_F(Cli, ResumeContinuesBitIdentically) {
  const std::string common = "train --model mlp --data " + kData +
                             " --optimizer adamw --lr 0.002 --batch 50 --seed 3 --json";
  ASSERT_EQ(rlx(common + " --steps 60 --save " + path("full.safetensors")).status, 0);
  ASSERT_EQ(rlx(common + " --steps 25 --save " + path("half.safetensors")).status, 0);
  Result r =
      rlx(common + " --steps 60 --resume " + path("half.safetensors") + " --save " + path("b.st"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string a = slurp(path("full.safetensors")), b = slurp(path("b.st"));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "a resumed run ended with other bytes than an uninterrupted one";
}

TEST_F(Cli, TrainGemmAndThreadsPickTheProductsLibrary) {
  // --gemm / --threads as the other model commands take them: every product of the step runs on
  // the library asked for (the profile names it), and the losses agree to f32 rounding.
  const std::string common = "train --model mlp --data " + kData +
                             " --optimizer sgd --lr 0.05 --batch 32 --steps 4 --seed 2 --json" +
                             " --no-shuffle --threads 1 --profile ";
  std::vector<nlohmann::json> runs[2];
  const char* libs[] = {"openblas", "packed"};
  for (int i = 0; i < 2; ++i) {
    const std::string prof = path(std::string(libs[i]) + ".txt");
    Result r = rlx(common + prof + " --gemm " + libs[i]);
    ASSERT_EQ(r.status, 0) << r.err;
    runs[i] = json_lines(r.out);
    const std::string p = slurp(prof);
    std::istringstream lines(p);
    int products = 0;
    for (std::string l; std::getline(lines, l);)
      if (l.find(" matmul") != std::string::npos) {
        ++products;
        EXPECT_NE(l.find(std::string("[") + libs[i] + "]"), std::string::npos) << l;
      }
    EXPECT_EQ(products, 5) << p; // 2 forward, 3 backward (the first layer's dx is not needed)
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (std::size_t i = 0; i + 1 < runs[0].size(); ++i)
    EXPECT_NEAR(runs[0][i]["train_loss"].get<double>(), runs[1][i]["train_loss"].get<double>(),
                1e-5 * (1 + std::abs(runs[0][i]["train_loss"].get<double>())));
  expect_error("train --data " + kData + " --gemm mkl", 2, "--gemm");
  expect_error("train --data " + kData + " --threads -1", 2, "--threads");
  expect_error("train --data " + kData + " --threads 99999999999", 2, "--threads");
  expect_error("train --data " + kData + " --threads two", 2, "--threads");
}

TEST_F(Cli, TrainBadInvocationsAreOneLineErrors) {
  expect_error("train --data " + kData + " --optimizer lion", 1, "--optimizer");
  expect_error("train --data " + kData + " --model bert", 1, "lacks train_ids");
  expect_error("train --data " + kData + " --model gpt", 1, "--model");
  expect_error("train --data " + kData + " --schedule step", 1, "--schedule");
  expect_error("train --data " + path(""), 1, "train_x.npy");
  expect_error("train --data " + kData + " --batch 100000", 1, "--batch");
  expect_error("train --data " + kData + " --epochs 2 --steps 3", 2, "excludes");
  expect_error("train --data " + kData + " --resume " + path("none.st"), 2, "none.st");
  expect_error("train", 2, "--data");
}

TEST_F(Cli, TrainNumericFlagsRejectNegativeHugeAndMalformedValues) {
  // Every numeric flag at -1, past int64 / double range and malformed: one error line each. Zero is
  // meaningful for some (no momentum, no clipping, seed 0) and an error for the sizes.
  const std::string base = "train --data " + kData + " --steps 2 ";
  for (const std::string flag : {"--lr", "--momentum", "--weight-decay", "--clip", "--warmup",
                                 "--batch", "--steps", "--eval-every", "--hidden", "--seed"})
    for (const std::string v : {"-1", "99999999999999999999", "1e309", "abc"}) {
      SCOPED_TRACE(flag + " " + v);
      const Result r = rlx(base + flag + " " + v);
      EXPECT_GE(r.status, 1) << r.err;
      EXPECT_LE(r.status, 123) << r.err;
      EXPECT_EQ(r.err_lines(), 1u) << r.err;
      EXPECT_NE(r.err.find("rlx: error:"), std::string::npos) << r.err;
    }
  for (const std::string v : {"0", "-1", "99999999999999999999", "abc"}) {
    for (const std::string flag : {"--batch", "--epochs", "--hidden"}) {
      SCOPED_TRACE(flag + " " + v);
      const Result r = rlx("train --data " + kData + " " + flag + " " + v);
      EXPECT_GE(r.status, 1) << r.err;
      EXPECT_LE(r.status, 123) << r.err;
      EXPECT_EQ(r.err_lines(), 1u) << r.err;
    }
  }
}

} // namespace
} // namespace rlx::runtime::testing
