// workloads.cpp: the model graphs of the rlx-compile tests and benchmarks, and random DAGs.
#include "testing/workloads.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"

#include <algorithm>
#include <random>

namespace rlx::compile::testing {

namespace {
const ir::Dim kBatch = ir::Dim::sym("batch");
const ir::Dim kSeq = ir::Dim::sym("seq");
} // namespace

ir::Graph bert_hir(int layers, std::int64_t hidden, std::int64_t heads, std::int64_t ffn,
                   bool padding_mask, ir::DType dtype) {
  ir::Graph g("bert");
  ir::Builder b(g);
  auto vec = [&](const std::string& n, std::int64_t d) {
    return b.param(n, ir::Shape::of({d}, dtype));
  };
  auto mat = [&](const std::string& n, std::int64_t o, std::int64_t i) {
    return b.param(n, ir::Shape::of({o, i}, dtype));
  };
  ir::NodeId x = b.input("x", ir::Shape({kBatch, kSeq, ir::Dim(hidden)}, dtype));
  ir::NodeId mask;
  if (padding_mask)
    mask = b.input("mask", ir::Shape({kBatch, kSeq}, dtype));
  for (int l = 0; l < layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    std::vector<ir::NodeId> in = {x,
                                  mat(p + "q.weight", hidden, hidden),
                                  vec(p + "q.bias", hidden),
                                  mat(p + "k.weight", hidden, hidden),
                                  vec(p + "k.bias", hidden),
                                  mat(p + "v.weight", hidden, hidden),
                                  vec(p + "v.bias", hidden),
                                  mat(p + "o.weight", hidden, hidden),
                                  vec(p + "o.bias", hidden),
                                  vec(p + "ln1.gamma", hidden),
                                  vec(p + "ln1.beta", hidden),
                                  mat(p + "ffn1.weight", ffn, hidden),
                                  vec(p + "ffn1.bias", ffn),
                                  mat(p + "ffn2.weight", hidden, ffn),
                                  vec(p + "ffn2.bias", hidden),
                                  vec(p + "ln2.gamma", hidden),
                                  vec(p + "ln2.beta", hidden)};
    if (padding_mask)
      in.push_back(mask);
    ir::BertLayerAttrs a;
    a.num_heads = heads;
    a.padding_mask = padding_mask;
    x = b.bert_layer(std::move(in), a);
  }
  b.output(x);
  return g;
}

ir::Graph llama_hir(int blocks, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                    std::int64_t ffn, ir::DType dtype) {
  ir::Graph g("llama");
  ir::Builder b(g);
  const std::int64_t head_dim = hidden / heads;
  auto mat = [&](const std::string& n, std::int64_t o, std::int64_t i) {
    return b.param(n, ir::Shape::of({o, i}, dtype));
  };
  ir::NodeId x = b.input("x", ir::Shape({kBatch, kSeq, ir::Dim(hidden)}, dtype));
  for (int l = 0; l < blocks; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    std::vector<ir::NodeId> in = {x,
                                  b.param(p + "attn_norm", ir::Shape::of({hidden}, dtype)),
                                  mat(p + "wq", heads * head_dim, hidden),
                                  mat(p + "wk", kv_heads * head_dim, hidden),
                                  mat(p + "wv", kv_heads * head_dim, hidden),
                                  mat(p + "wo", hidden, heads * head_dim),
                                  b.param(p + "ffn_norm", ir::Shape::of({hidden}, dtype)),
                                  mat(p + "w_gate", ffn, hidden),
                                  mat(p + "w_up", ffn, hidden),
                                  mat(p + "w_down", hidden, ffn)};
    ir::LlamaBlockAttrs a;
    a.num_heads = heads;
    a.num_kv_heads = kv_heads;
    x = b.llama_block(std::move(in), a);
  }
  b.output(x);
  return g;
}

ir::Graph mlp_hir(const std::vector<std::int64_t>& sizes, ir::DType dtype) {
  ir::Graph g("mlp");
  ir::Builder b(g);
  ir::NodeId x = b.input("x", ir::Shape({kBatch, ir::Dim(sizes.front())}, dtype));
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    const std::string p = "fc" + std::to_string(i) + ".";
    ir::NodeId w = b.param(p + "weight", ir::Shape::of({sizes[i + 1], sizes[i]}, dtype));
    ir::NodeId bias = b.param(p + "bias", ir::Shape::of({sizes[i + 1]}, dtype));
    const bool last = i + 2 == sizes.size();
    x = b.linear(x, w, bias, last ? ir::Activation::none : ir::Activation::relu);
  }
  b.output(x);
  return g;
}

std::vector<Workload> acceptance_workloads() {
  std::vector<Workload> all;
  auto add = [&](std::string name, ir::Graph hir, ir::Bindings sizes) {
    ir::Graph mir = ir::lower_hir(hir.bind(sizes));
    all.push_back({std::move(name), std::move(hir), std::move(sizes), std::move(mir)});
  };
  add("bert-base", bert_hir(12, 768, 12, 3072), {{"batch", 1}, {"seq", 128}});
  add("llama", llama_hir(4, 512, 8, 2, 1376), {{"batch", 1}, {"seq", 128}});
  add("mlp", mlp_hir({784, 512, 512, 10}), {{"batch", 64}});
  return all;
}

ir::Graph random_graph(std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ir::Graph g("random" + std::to_string(seed));
  ir::Builder b(g);
  std::vector<ir::NodeId> pool;
  int leaves = 0;
  auto new_leaf = [&](const ir::Shape& s) {
    std::string name = "l" + std::to_string(leaves++);
    switch (uni(0, 2)) {
    case 0:
      return b.input(name, s);
    case 1:
      return b.param(name, s);
    default:
      return b.constant(ir::Tensor(s), name);
    }
  };
  auto random_shape = [&] {
    std::vector<std::int64_t> d(static_cast<std::size_t>(uni(1, 3)));
    for (auto& x : d)
      x = uni(1, 5);
    return ir::Shape::of(d);
  };
  auto pick = [&] {
    int k = static_cast<int>(pool.size());
    int back = std::min(k - 1, std::geometric_distribution<int>(0.35)(rng));
    return pool[static_cast<std::size_t>(k - 1 - back)];
  };
  auto same_shape = [&](ir::NodeId x) {
    std::vector<ir::NodeId> c;
    for (ir::NodeId p : pool)
      if (p != x && g.shape(p) == g.shape(x))
        c.push_back(p);
    if (c.empty() || uni(0, 2) == 0)
      return new_leaf(g.shape(x));
    return c[static_cast<std::size_t>(uni(0, static_cast<int>(c.size()) - 1))];
  };

  for (int i = 0, n = uni(1, 3); i < n; ++i)
    pool.push_back(new_leaf(random_shape()));
  for (int i = 0, n = uni(5, 40); i < n; ++i) {
    ir::NodeId x = pick();
    const ir::Shape s = g.shape(x);
    const std::vector<std::int64_t> d = s.sizes();
    const auto rank = static_cast<std::int64_t>(d.size());
    ir::NodeId y;
    const int kind = uni(0, 11);
    if (rank == 0 && kind >= 3)
      continue; // scalars (full reductions) only feed elementwise ops
    try {
      switch (kind) {
      case 0: {
        const ir::OpKind unary[] = {ir::OpKind::Exp, ir::OpKind::Neg, ir::OpKind::Relu,
                                    ir::OpKind::Tanh};
        y = b.unary(unary[uni(0, 3)], x);
        break;
      }
      case 1:
      case 2: {
        const ir::OpKind binary[] = {ir::OpKind::Add, ir::OpKind::Mul, ir::OpKind::Sub};
        y = b.binary(binary[uni(0, 2)], x, same_shape(x));
        break;
      }
      case 3: // broadcast a vector over the last axis
        y = b.add(x, new_leaf(ir::Shape({d.back()}, s.dtype)));
        break;
      case 4: {
        if (rank < 2)
          x = b.reshape(x, {1, d[0]});
        std::int64_t k = g.shape(x).sizes().back();
        y = b.matmul(x, new_leaf(ir::Shape({k, uni(1, 6)}, s.dtype)));
        break;
      }
      case 5: { // reshape to a random factorisation of the element count
        std::int64_t rem = s.numel();
        std::vector<ir::Dim> dims;
        while (rem > 1 && dims.size() < 2) {
          std::vector<std::int64_t> divisors;
          for (std::int64_t q = 1; q <= rem; ++q)
            if (rem % q == 0)
              divisors.push_back(q);
          std::int64_t q =
              divisors[static_cast<std::size_t>(uni(0, static_cast<int>(divisors.size()) - 1))];
          dims.emplace_back(q);
          rem /= q;
        }
        dims.emplace_back(rem);
        std::shuffle(dims.begin(), dims.end(), rng);
        y = b.reshape(x, dims);
        break;
      }
      case 6:
      case 7: { // narrow, on axis 0 or on any axis
        std::int64_t ax = uni(0, 1) == 0 ? 0 : uni(0, static_cast<int>(rank) - 1);
        std::int64_t len = uni(1, static_cast<int>(d[static_cast<std::size_t>(ax)]));
        std::int64_t start = uni(0, static_cast<int>(d[static_cast<std::size_t>(ax)] - len));
        y = b.narrow(x, ax, start, len);
        break;
      }
      case 8:
        if (s.numel() > 2048)
          continue;
        y = b.concat({x, uni(0, 1) ? x : same_shape(x)}, uni(0, static_cast<int>(rank) - 1));
        break;
      case 9:
        y = b.sum(x, {uni(0, static_cast<int>(rank) - 1)}, uni(0, 1) == 1);
        break;
      case 10:
        y = b.cast(x, uni(0, 1) ? s.dtype
                                : (s.dtype == ir::DType::f32 ? ir::DType::f64 : ir::DType::f32));
        break;
      default:
        if (rank < 2)
          continue;
        y = b.transpose(x, rank == 2 ? std::vector<std::int64_t>{1, 0}
                                     : std::vector<std::int64_t>{0, 2, 1});
        break;
      }
    } catch (const ir::ShapeError&) {
      continue; // an op this operand does not fit (dtype mix, rank): draw another
    }
    pool.push_back(y);
  }
  b.output(pool.back());
  for (int i = 0, n = uni(0, 2); i < n; ++i)
    b.output(pool[static_cast<std::size_t>(uni(0, static_cast<int>(pool.size()) - 1))]);
  return g;
}

} // namespace rlx::compile::testing
