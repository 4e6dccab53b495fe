// cli_train_cnn_test.cpp: a conv net as a graph file (conv-relu-maxpool-conv-relu-avgpool-dense on
// the digits as 1x8x8 images) through `rlx train --graph` (the evaluation loss falls well below
// chance) and `rlx grad --graph` (a gradient per parameter; the gradient graph runs the conv /
// pool backward ops).
#include "cli_testing.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace rlx::runtime::testing {
namespace {

const std::string kData = RLX_DIGITS_DIR;

/// x [batch, 64] -> [batch, 1, 8, 8] -> conv 3x3 8 + relu -> max pool 2 -> conv 3x3 16 + relu ->
/// avg pool 2 -> dense 10 (output 0, the logits).
ir::Graph cnn() {
  ir::Graph g("digits_cnn");
  ir::Builder b(g);
  const ir::Dim batch = ir::Dim::sym("batch");
  ir::NodeId x = b.reshape(b.input("x", ir::Shape({batch, ir::Dim(64)})),
                           {batch, ir::Dim(1), ir::Dim(8), ir::Dim(8)});
  ir::Conv2dAttrs c;
  c.padding = {1, 1};
  x = b.relu(b.conv2d(x, b.param("conv1.weight", ir::Shape::of({8, 1, 3, 3})),
                      b.param("conv1.bias", ir::Shape::of({8})), c));
  ir::Pool2dAttrs p;
  x = b.pool2d(x, p);
  x = b.relu(b.conv2d(x, b.param("conv2.weight", ir::Shape::of({16, 8, 3, 3})),
                      b.param("conv2.bias", ir::Shape::of({16})), c));
  p.kind = ir::PoolKind::avg;
  x = b.reshape(b.pool2d(x, p), {batch, ir::Dim(64)});
  b.output(b.add(b.matmul(x, b.param("fc.weight", ir::Shape::of({64, 10}))),
                 b.param("fc.bias", ir::Shape::of({10}))));
  return g;
}

TEST_F(Cli, TrainsAndDifferentiatesAConvNetGraph) {
  std::ofstream(path("cnn.json")) << ir::save_json(cnn());
  for (const std::string split : {"train", "test"}) {
    write_npy(path(split + "_x.npy"), read_npy(kData + "/" + split + "_x.npy"));
    write_npy(path(split + "_labels.npy"), read_npy(kData + "/" + split + "_y.npy"));
  }
  Result r = rlx("train --graph " + path("cnn.json") + " --loss xent --data " + path("") +
                 " --optimizer adamw --lr 0.01 --batch 32 --steps 120 --eval-every 60 --seed 2 "
                 "--json");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<double> eval;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] == '{') {
      const auto j = nlohmann::json::parse(l);
      if (j.contains("eval_loss"))
        eval.push_back(j["eval_loss"].get<double>());
    }
  ASSERT_EQ(eval.size(), 2u) << r.out;
  EXPECT_LT(eval[1], 0.5) << r.out; // ln 10 = 2.3 is chance
  // rlx grad on four images: one gradient per parameter, under the parameter names.
  ir::Tensor x(ir::Shape({4, 64})), labels(ir::Shape({4}, ir::DType::i64));
  const ir::Tensor xs = read_npy(kData + "/train_x.npy"), ys = read_npy(kData + "/train_y.npy");
  for (std::int64_t i = 0; i < 4 * 64; ++i)
    x.set_f64(i, xs.get_f64(i));
  for (std::int64_t i = 0; i < 4; ++i)
    labels.set_f64(i, ys.get_f64(i));
  write_npy(path("x4.npy"), x);
  write_npy(path("l4.npy"), labels);
  r = rlx("grad --graph " + path("cnn.json") + " --batch 4 --input x=" + path("x4.npy") +
          " --loss xent --labels " + path("l4.npy") + " --out " + path("g.safetensors"));
  ASSERT_EQ(r.status, 0) << r.err;
  const SafetensorsFile f = read_safetensors(path("g.safetensors"));
  for (const char* p :
       {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"})
    EXPECT_TRUE(f.tensors.count(p)) << p << "\n" << r.out;
}

} // namespace
} // namespace rlx::runtime::testing
