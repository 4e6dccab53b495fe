// reference_testing.hpp: helpers shared by the reference interpreter tests (reference_*_test.cpp):
// tensor literals, one-op graphs evaluated through rlx::ir::reference::evaluate, and element
// checks against hand-computed values.
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rlx::ir::reftest {

using Sizes = std::vector<std::int64_t>;
using Vec = std::vector<double>;

/// A tensor of \p dtype holding \p v (converted with Tensor::set_f64).
inline Tensor tensor(const Sizes& sizes, const Vec& v, DType dtype = DType::f32) {
  Tensor t(Shape::of(sizes, dtype));
  EXPECT_EQ(static_cast<std::int64_t>(v.size()), t.numel()) << "literal of the wrong length";
  for (std::size_t i = 0; i < v.size() && static_cast<std::int64_t>(i) < t.numel(); ++i)
    t.set_f64(static_cast<std::int64_t>(i), v[i]);
  return t;
}
inline Tensor f32(const Sizes& s, const Vec& v) {
  return tensor(s, v, DType::f32);
}
inline Tensor f64(const Sizes& s, const Vec& v) {
  return tensor(s, v, DType::f64);
}
inline Tensor i64(const Sizes& s, const std::vector<std::int64_t>& v) {
  return Tensor::from<std::int64_t>(s, v);
}
inline Tensor i32(const Sizes& s, const std::vector<std::int32_t>& v) {
  return Tensor::from<std::int32_t>(s, v);
}

/// Adds the op under test to a graph from the Inputs of its operands.
using MakeOp = std::function<NodeId(Builder&, const std::vector<NodeId>&)>;

/// A graph of one op under test and the values of its inputs.
struct OneOpGraph {
  Graph graph;
  reference::TensorMap inputs;
};

/// Builds a graph with one Input per operand (named a0, a1, ...; typed like the operand, valued
/// \p args) and lets \p make add the op under test, the graph's one output.
inline OneOpGraph one_op_graph(const std::vector<Tensor>& args, const MakeOp& make) {
  OneOpGraph r;
  Builder b(r.graph);
  std::vector<NodeId> ids;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = "a" + std::to_string(i);
    ids.push_back(b.input(name, args[i].shape()));
    r.inputs[name] = args[i];
  }
  b.output(make(b, ids));
  return r;
}

/// The reference interpreter's value of one_op_graph(\p args, \p make).
inline Tensor run(const std::vector<Tensor>& args, const MakeOp& make) {
  const OneOpGraph g = one_op_graph(args, make);
  return reference::evaluate(g.graph, g.inputs).at(0);
}

/// Every element of \p t as a double.
inline Vec values(const Tensor& t) {
  Vec v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<std::size_t>(i)] = t.get_f64(i);
  return v;
}

/// Checks that \p t has sizes \p sizes and elements within \p tol of \p want (NaN matches NaN).
inline void expect_near(const Tensor& t, const Sizes& sizes, const Vec& want, double tol) {
  ASSERT_EQ(t.shape().sizes(), sizes) << t.shape().str();
  Vec got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i] << ", want NaN";
    else if (std::isinf(want[i]))
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    else
      EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
  }
}

/// Checks that \p t has sizes \p sizes and exactly the elements \p want.
inline void expect_eq(const Tensor& t, const Sizes& sizes, const Vec& want) {
  expect_near(t, sizes, want, 0.0);
}

} // namespace rlx::ir::reftest
