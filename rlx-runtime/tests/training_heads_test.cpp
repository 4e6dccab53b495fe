// training_heads_test.cpp: the BERT classifier / masked-LM heads and the token cross-entropy
// (training_heads.hpp): values against hand computation with the reference interpreter, whole-model
// gradients (tiny BERT with each head, tiny LLaMA causal LM) against finite differences in f64,
// and one-line errors on graphs they cannot take.
#include "fd.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/training_heads.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace rlx::runtime {
namespace {

using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

BertConfig tiny_bert() {
  BertConfig c;
  c.layers = 1;
  c.hidden = 8;
  c.heads = 2;
  c.ffn = 16;
  c.embeddings = true;
  c.vocab = 13;
  c.max_positions = 8;
  c.batch = Dim(2);
  c.seq = Dim(3);
  return c;
}

Tensor ids(std::vector<std::int64_t> v, std::vector<std::int64_t> shape) {
  return Tensor::from<std::int64_t>(shape, v);
}

/// The inputs of tiny_bert() and its heads for a batch.
TensorMap bert_inputs() {
  return {{"input_ids", ids({1, 5, 12, 3, 0, 7}, {2, 3})},
          {"token_type_ids", ids({0, 0, 0, 0, 0, 0}, {2, 3})},
          {"position_ids", ids({0, 1, 2, 0, 1, 2}, {2, 3})}};
}

/// Mean (or weighted) softmax cross-entropy of rows of \p logits, in double.
double xent(const Tensor& logits, const std::vector<std::int64_t>& labels,
            const std::vector<double>& w = {}) {
  const std::int64_t v = logits.shape().dims.back().size();
  double sum = 0, wsum = 0;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    double mx = -INFINITY, z = 0;
    const auto base = static_cast<std::int64_t>(r) * v;
    for (std::int64_t k = 0; k < v; ++k)
      mx = std::max(mx, logits.get_f64(base + k));
    for (std::int64_t k = 0; k < v; ++k)
      z += std::exp(logits.get_f64(base + k) - mx);
    const double l = mx + std::log(z) - logits.get_f64(base + labels[r]);
    const double wr = w.empty() ? 1.0 : w[r];
    sum += wr * l;
    wsum += wr;
  }
  return sum / wsum;
}

TEST(TrainingHeads, TokenLossIsTheMeanOrWeightedCrossEntropy) {
  const ir::Graph enc = build_bert(tiny_bert());
  const ir::Graph mlm = add_mlm_head(enc);
  const auto params = init_params(mlm, 3);
  TensorMap in = bert_inputs();
  const Tensor logits = ir::reference::evaluate(mlm, in, params)[0];
  ASSERT_EQ(logits.shape().str(), Shape::of({2, 3, 13}).str());
  const std::vector<std::int64_t> labels{4, 0, 12, 3, 9, 1};
  in[kTokenLabels] = ids(labels, {2, 3});
  const double plain = ir::reference::evaluate(with_token_loss(mlm), in, params)[0].get_f64(0);
  EXPECT_NEAR(plain, xent(logits, labels), 1e-5);
  const std::vector<double> w{1, 0, 0, 1, 1, 0};
  in[kTokenLabelWeights] = Tensor::from<float>({2, 3}, {1, 0, 0, 1, 1, 0});
  const double masked =
      ir::reference::evaluate(with_token_loss(mlm, true), in, params)[0].get_f64(0);
  EXPECT_NEAR(masked, xent(logits, labels, w), 1e-5);
  EXPECT_GT(std::abs(masked - plain), 1e-4); // the weights matter
}

TEST(TrainingHeads, ClassifierIsTanhPoolerOfTheFirstTokenThenLinear) {
  const ir::Graph enc = build_bert(tiny_bert());
  const ir::Graph cls = add_classifier_head(enc, 3);
  const auto params = init_params(cls, 5);
  const TensorMap in = bert_inputs();
  const Tensor y = ir::reference::evaluate(enc, in, params)[0];      // [2, 3, 8]
  const Tensor logits = ir::reference::evaluate(cls, in, params)[0]; // [2, 3]
  ASSERT_EQ(logits.shape().str(), Shape::of({2, 3}).str());
  const Tensor &wp = params.at("pooler.dense.weight"), &bp = params.at("pooler.dense.bias");
  const Tensor &wc = params.at("classifier.weight"), &bc = params.at("classifier.bias");
  for (std::int64_t r = 0; r < 2; ++r) {
    std::vector<double> pooled(8);
    for (std::int64_t o = 0; o < 8; ++o) {
      double s = bp.get_f64(o);
      for (std::int64_t i = 0; i < 8; ++i)
        s += wp.get_f64(o * 8 + i) * y.get_f64(r * 3 * 8 + i); // token 0 of row r
      pooled[static_cast<std::size_t>(o)] = std::tanh(s);
    }
    for (std::int64_t c = 0; c < 3; ++c) {
      double s = bc.get_f64(c);
      for (std::int64_t i = 0; i < 8; ++i)
        s += wc.get_f64(c * 8 + i) * pooled[static_cast<std::size_t>(i)];
      EXPECT_NEAR(logits.get_f64(r * 3 + c), s, 1e-5) << "row " << r << " class " << c;
    }
  }
}

TEST(TrainingHeads, MlmDecoderIsTiedToTheWordEmbeddings) {
  const ir::Graph mlm = add_mlm_head(build_bert(tiny_bert()));
  std::set<std::string> names;
  for (ir::NodeId p : mlm.params())
    names.insert(mlm.node(p).attr<ir::LeafAttrs>().name);
  EXPECT_TRUE(names.count("cls.predictions.bias"));
  EXPECT_TRUE(names.count("cls.predictions.transform.LayerNorm.weight"));
  EXPECT_FALSE(names.count("cls.predictions.decoder.weight")); // the embedding table decodes
}

/// Whole-model gradients of \p lossy (f32 built) against finite differences in f64.
void expect_fd(const ir::Graph& lossy, const TensorMap& inputs) {
  namespace at = autodiff::testing;
  const ir::Graph g = at::to_f64(lossy);
  at::WeightedLoss l;
  l.forward = g;
  l.loss = g;
  l.weights = {Tensor::scalar<double>(1.0)};
  const auto wrt = autodiff::float_params(g);
  const auto params = at::to_f64(init_params(lossy, 11));
  const auto r = at::check_gradients(l, at::to_f64(inputs), params, wrt, 6);
  EXPECT_LE(r.max_err, 1e-6) << lossy.name() << ": " << r.worst;
  EXPECT_GE(r.checked, static_cast<std::int64_t>(wrt.size()));
}

TEST(TrainingHeads, MaskedLmGradientsMatchFiniteDifferences) {
  const ir::Graph enc = build_bert(tiny_bert()); // one layer
  TensorMap in = bert_inputs();
  in[kTokenLabels] = ids({4, 0, 12, 3, 9, 1}, {2, 3});
  in[kTokenLabelWeights] = Tensor::from<float>({2, 3}, {1, 0, 1, 0, 1, 1});
  expect_fd(with_token_loss(add_mlm_head(enc), true), in);
}

TEST(TrainingHeads, ClassifierGradientsMatchFiniteDifferences) {
  const ir::Graph enc = build_bert(tiny_bert());
  TensorMap cin = bert_inputs();
  cin[kTokenLabels] = ids({2, 0}, {2});
  ir::Graph cls = add_classifier_head(enc, 3);
  {
    ir::Builder b(cls);
    const ir::NodeId y = cls.outputs()[0];
    const ir::NodeId labels = b.input("labels", Shape::of({2}, DType::i64));
    cls.set_outputs({b.mean(b.softmax_cross_entropy(y, labels), {0})});
  }
  expect_fd(cls, cin);
}

TEST(TrainingHeads, CausalLmGradientsMatchFiniteDifferences) {
  LlamaConfig lc;
  lc.layers = 1;
  lc.hidden = 8;
  lc.heads = 2;
  lc.kv_heads = 1;
  lc.ffn = 12;
  lc.embeddings = true;
  lc.lm_head = true;
  lc.vocab = 11;
  lc.batch = Dim(2);
  lc.seq = Dim(3);
  expect_fd(with_token_loss(build_llama(lc)), {{"input_ids", ids({1, 5, 10, 3, 0, 7}, {2, 3})},
                                               {kTokenLabels, ids({5, 10, 2, 0, 7, 7}, {2, 3})}});
}

TEST(TrainingHeads, GraphsTheyCannotTakeAreOneLineErrors) {
  BertConfig sym = tiny_bert();
  sym.batch = Dim::sym("batch");
  EXPECT_THROW(add_classifier_head(build_bert(sym), 3), Error);
  BertConfig no_emb = tiny_bert();
  no_emb.embeddings = false;
  EXPECT_THROW(add_mlm_head(build_bert(no_emb)), Error);
  EXPECT_THROW(add_classifier_head(build_bert(tiny_bert()), 0), Error);
  ir::Graph flat("flat");
  ir::Builder b(flat);
  b.output(b.input("x", Shape::of({4})));
  EXPECT_THROW(with_token_loss(flat), Error);
}

} // namespace
} // namespace rlx::runtime
