// op_cases.cpp: the conformance table.
//
// Tolerances. The oracle (rlx::ir::reference) computes every float op in double precision and
// rounds the result to the node's dtype once per op. A kernel's error is therefore judged against
// the textbook first-order bounds of the algorithm it must implement, with u the unit roundoff of
// the dtype (2^-24 for f32, 2^-53 for f64, 2^-11 for f16, 2^-8 for bf16):
//   - data movement, comparisons, casts, integer arithmetic, quantization: exact (bytewise or
//     integer results; quantization is defined in double on both sides);
//   - +, -, *, /, max, min on floats: exact, because a correctly rounded f32 op equals the double
//     result rounded to f32 (double rounding is innocuous when the wide precision is at least
//     2p + 2 bits, which holds for f32/f16/bf16 in double and f16/bf16 in f32);
//   - transcendental elementwise functions: a few ulp for libm / oneDNN / our polynomial
//     approximations, plus an absolute term u·|x|max for cancellation near the function's zeros;
//   - an n-term sum of products with |terms| <= m: gamma_n · n · m with gamma_n ≈ n·u (Higham,
//     "Accuracy and Stability of Numerical Algorithms", §3.1), which covers any summation order;
//   - composites (softmax, norms, attention, blocks): the sum of their stages' bounds.
// Shapes are small, so the bounds stay tight enough that an indexing or masking bug (an O(1)
// error) can never pass.
#include "op_cases.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <memory>
#include <mutex>

namespace rlx::conformance {
namespace {

using ir::DType;
using K = ir::OpKind;
using Sizes = std::vector<std::int64_t>;

// ---- tolerances
// ----------------------------------------------------------------------------------

/// Unit roundoff of \p t.
double unit(DType t) {
  switch (t) {
  case DType::f64:
    return 0x1p-53;
  case DType::f16:
    return 0x1p-11;
  case DType::bf16:
    return 0x1p-8;
  default:
    return 0x1p-24;
  }
}

Tolerance exact(std::string why) {
  return {0.0, 0.0, std::move(why)};
}

/// A few-ulp elementwise function: \p ulps · u relative, plus ulps · u · \p scale absolute.
Tolerance ulps(DType t, double ulps, double scale, std::string why) {
  return {ulps * unit(t) * scale, ulps * unit(t), std::move(why)};
}

/// An n-term sum of products of magnitude at most \p m: gamma_n · n · m absolute (+ 2u relative
/// for the final rounding).
Tolerance sum_of_products(DType t, std::int64_t n, double m, std::string why) {
  double nn = static_cast<double>(n);
  return {nn * unit(t) * nn * m, 2 * unit(t), std::move(why)};
}

Tolerance elementwise_fn(DType t, double scale) {
  if (t == DType::f32)
    return ulps(t, 16, scale,
                "<= 16 ulp: oneDNN / libm / polynomial approximations of exp, log, tanh, erf and "
                "sigmoid; absolute term for cancellation near the function's zeros");
  if (t == DType::f64)
    return ulps(t, 4, scale, "<= 4 ulp: double libm against double libm");
  return ulps(t, 2, scale, "1 ulp of the narrow type: computed in f32, rounded once");
}

// ---- inputs
// --------------------------------------------------------------------------------------

InputSpec in(std::string name, Sizes dims, DType t = DType::f32, double lo = -1, double hi = 1) {
  return {std::move(name), ir::Shape::of(dims, t), Fill::uniform, lo, hi, false};
}
InputSpec ints(std::string name, Sizes dims, DType t, double lo, double hi) {
  return {std::move(name), ir::Shape::of(dims, t), Fill::integers, lo, hi, false};
}
InputSpec with(InputSpec s, Fill f) {
  s.fill = f;
  return s;
}
InputSpec as_param(InputSpec s) {
  s.param = true;
  return s;
}

std::string dn(DType t) {
  return std::string(ir::dtype_name(t));
}
std::string on(K k) {
  return std::string(ir::op_name(k));
}

/// The table being built.
class Table {
public:
  void add(std::string name, K op, std::vector<InputSpec> inputs, ir::Attrs attrs, Tolerance tol) {
    cases_.push_back(
        {std::move(name), op, std::move(inputs), std::move(attrs), std::move(tol), {}});
  }
  void add_built(std::string name, K op, std::vector<InputSpec> inputs, Tolerance tol,
                 std::function<ir::NodeId(ir::Graph&, const std::vector<ir::NodeId>&)> build) {
    cases_.push_back({std::move(name), op, std::move(inputs), ir::default_attrs(op), std::move(tol),
                      std::move(build)});
  }
  std::vector<OpCase> take() { return std::move(cases_); }

private:
  std::vector<OpCase> cases_;
};

// ---- elementwise
// ---------------------------------------------------------------------------------

void unary_cases(Table& t) {
  struct U {
    K op;
    double lo, hi;
  };
  const U float_ops[] = {
      {K::Exp, -10, 10},        {K::Log, 0.05, 8}, {K::Sqrt, 0, 9},     {K::Rsqrt, 0.1, 9},
      {K::Reciprocal, 0.25, 4}, {K::Tanh, -4, 4},  {K::Sigmoid, -8, 8}, {K::Gelu, -4, 4},
      {K::GeluTanh, -4, 4},     {K::Silu, -6, 6},  {K::Sin, -4, 4},     {K::Cos, -4, 4},
      {K::Erf, -3, 3},          {K::Neg, -4, 4},   {K::Abs, -4, 4},     {K::Relu, -4, 4},
  };
  // ---- onnx3: trig ---- (inside their domains: |x| < 1 for asin / acos / atanh, x > 1 acosh)
  const U trig_ops[] = {
      {K::Sinh, -4, 4}, {K::Cosh, -4, 4},  {K::Asin, -0.99, 0.99}, {K::Acos, -0.99, 0.99},
      {K::Atan, -6, 6}, {K::Asinh, -6, 6}, {K::Acosh, 1.01, 8},    {K::Atanh, -0.95, 0.95},
  };
  std::vector<U> unary_ops(std::begin(float_ops), std::end(float_ops));
  unary_ops.insert(unary_ops.end(), std::begin(trig_ops), std::end(trig_ops));

  for (const U& u : unary_ops) {
    double scale = std::max(std::fabs(u.lo), std::fabs(u.hi));
    if (u.op == K::Exp)
      scale = 1.0; // exp has no zeros: its error is relative
    for (DType d : {DType::f32, DType::f64})
      t.add(on(u.op) + "_" + dn(d), u.op, {in("x", {3, 17}, d, u.lo, u.hi)}, ir::NoAttrs{},
            elementwise_fn(d, scale));
    // A tensor large enough for the parallel path (more than one task of 2^17 elements).
    t.add(on(u.op) + "_large_f32", u.op, {in("x", {160, 1031}, DType::f32, u.lo, u.hi)},
          ir::NoAttrs{}, elementwise_fn(DType::f32, scale));
  }
  // Near its zero at 1, log's error must be relative to log(x), not to the range: an absolute
  // error of 1e-6 at x = 1 (oneDNN's eltwise_log) fails ONNX's node/test_log_example.
  t.add("log_near_one_f32", K::Log, {in("x", {4, 16}, DType::f32, 0.99, 1.01)}, ir::NoAttrs{},
        elementwise_fn(DType::f32, 0.01));
  for (K op : {K::Exp, K::Tanh, K::Gelu})
    for (DType d : {DType::f16, DType::bf16})
      t.add(on(op) + "_" + dn(d), op, {in("x", {5, 9}, d, -3, 3)}, ir::NoAttrs{},
            elementwise_fn(d, op == K::Exp ? 1.0 : 3.0));
  for (K op : {K::Neg, K::Abs, K::Relu})
    for (DType d : {DType::i8, DType::i32, DType::i64, DType::u8})
      t.add(on(op) + "_" + dn(d), op,
            {ints("x", {4, 7}, d, d == DType::u8 ? 0 : -128, d == DType::u8 ? 255 : 127)},
            ir::NoAttrs{}, exact("integer arithmetic is exact (wrapping)"));
}

void binary_cases(Table& t) {
  const K ops[] = {K::Add, K::Sub, K::Mul, K::Div, K::Pow, K::Maximum, K::Minimum};
  struct Shapes {
    const char* name;
    Sizes a, b;
  };
  const Shapes shapes[] = {
      {"same", {4, 5}, {4, 5}},  {"row", {4, 5}, {5}},          {"outer", {4, 1}, {1, 5}},
      {"scalar", {3, 4, 5}, {}}, {"middle", {2, 3, 4}, {3, 1}}, {"lhs_scalar", {}, {2, 6}},
  };
  for (K op : ops) {
    bool pow = op == K::Pow;
    double lo = pow ? 0.5 : -2, hi = 2;
    Tolerance f32 = pow ? ulps(DType::f32, 2, 4, "powf against pow: <= 1 ulp each")
                        : exact("a correctly rounded f32 op equals the double result rounded");
    Tolerance f64 = pow ? ulps(DType::f64, 2, 4, "pow against pow: <= 1 ulp")
                        : exact("the same double operation");
    for (const Shapes& s : shapes) {
      InputSpec b = in("b", s.b, DType::f32, op == K::Div ? 0.5 : (pow ? -2 : lo), hi);
      t.add(on(op) + "_" + s.name + "_f32", op, {in("a", s.a, DType::f32, lo, hi), b},
            ir::NoAttrs{}, f32);
    }
    t.add(on(op) + "_outer_f64", op,
          {in("a", {4, 1}, DType::f64, lo, hi),
           in("b", {1, 5}, DType::f64, op == K::Div ? 0.5 : lo, hi)},
          ir::NoAttrs{}, f64);
    t.add(on(op) + "_large_f32", op,
          {in("a", {1200, 257}, DType::f32, lo, hi),
           in("b", {257}, DType::f32, op == K::Div ? 0.5 : lo, hi)},
          ir::NoAttrs{}, f32);
    for (DType d : {DType::f16, DType::bf16})
      if (!pow)
        t.add(on(op) + "_" + dn(d), op,
              {in("a", {3, 8}, d, lo, hi), in("b", {8}, d, op == K::Div ? 0.5 : lo, hi)},
              ir::NoAttrs{},
              exact("f32 arithmetic rounded once to the narrow type is correctly rounded"));
    for (DType d : {DType::i32, DType::i64, DType::i8}) {
      InputSpec b = op == K::Div ? with(ints("b", {1, 5}, d, -5, 5), Fill::nonzero)
                    : pow        ? ints("b", {1, 5}, d, 0, 3)
                                 : ints("b", {1, 5}, d, -100, 100);
      t.add(on(op) + "_" + dn(d), op, {ints("a", {4, 1}, d, -100, 100), b}, ir::NoAttrs{},
            exact("integer arithmetic is exact (wrapping, truncating division)"));
    }
  }
}

void compare_where_cases(Table& t) {
  for (ir::CmpOp op :
       {ir::CmpOp::eq, ir::CmpOp::ne, ir::CmpOp::lt, ir::CmpOp::le, ir::CmpOp::gt, ir::CmpOp::ge}) {
    std::string name = "compare_" + std::string(ir::enum_names(op)[static_cast<std::size_t>(op)]);
    // Small integers stored as floats make ties likely.
    t.add(name + "_f32", K::Compare,
          {ints("a", {4, 6}, DType::f32, -2, 2), ints("b", {6}, DType::f32, -2, 2)},
          ir::CompareAttrs{op}, exact("comparisons are exact"));
    t.add(name + "_i64", K::Compare,
          {ints("a", {3, 1}, DType::i64, -2, 2), ints("b", {1, 4}, DType::i64, -2, 2)},
          ir::CompareAttrs{op}, exact("comparisons are exact"));
  }
  t.add("compare_eq_bool", K::Compare,
        {ints("a", {5}, DType::boolean, 0, 1), ints("b", {5}, DType::boolean, 0, 1)},
        ir::CompareAttrs{ir::CmpOp::eq}, exact("comparisons are exact"));
  for (DType d : {DType::f32, DType::f64, DType::i64, DType::i8, DType::boolean, DType::f16})
    t.add("where_" + dn(d), K::Where,
          {ints("c", {4, 1}, DType::boolean, 0, 1), ints("a", {4, 5}, d, -9, 9),
           ints("b", {5}, d, -9, 9)},
          ir::NoAttrs{}, exact("a selection copies elements"));
  t.add("where_large_f32", K::Where,
        {ints("c", {1000, 300}, DType::boolean, 0, 1), in("a", {1000, 300}), in("b", {300})},
        ir::NoAttrs{}, exact("a selection copies elements"));
}

void cast_cases(Table& t) {
  struct C {
    DType from, to;
    double lo, hi;
    bool integral;
  };
  const C casts[] = {
      {DType::f32, DType::f64, -10, 10, false},       {DType::f64, DType::f32, -10, 10, false},
      {DType::f32, DType::i32, -100, 100, false},     {DType::f32, DType::u8, -20, 300, false},
      {DType::f32, DType::i8, -200, 200, false},      {DType::f64, DType::i64, -1e6, 1e6, false},
      {DType::i64, DType::f32, -1e6, 1e6, true},      {DType::i32, DType::boolean, -2, 2, true},
      {DType::boolean, DType::f32, 0, 1, true},       {DType::f32, DType::boolean, -1, 1, false},
      {DType::f32, DType::f16, -70000, 70000, false}, {DType::f16, DType::f32, -100, 100, false},
      {DType::f64, DType::f16, -10, 10, false},       {DType::f32, DType::bf16, -10, 10, false},
      {DType::bf16, DType::f64, -10, 10, false},      {DType::u8, DType::i32, 0, 255, true},
      {DType::i64, DType::i8, -1000, 1000, true},     {DType::i32, DType::f64, -1000, 1000, true},
  };
  for (const C& c : casts) {
    InputSpec x =
        c.integral ? ints("x", {3, 11}, c.from, c.lo, c.hi) : in("x", {3, 11}, c.from, c.lo, c.hi);
    t.add("cast_" + dn(c.from) + "_to_" + dn(c.to), K::Cast, {x}, ir::CastAttrs{c.to},
          exact("casts are defined exactly (round to nearest even, truncate and saturate, wrap)"));
  }
  t.add("cast_f32_to_f64_large", K::Cast, {in("x", {600, 300})}, ir::CastAttrs{DType::f64},
        exact("widening is exact"));
}

// ---- linear algebra
// ------------------------------------------------------------------------------

void matmul_cases(Table& t) {
  struct M {
    const char* name;
    Sizes a, b;
    bool ta, tb;
  };
  const M cases[] = {
      {"plain", {7, 5}, {5, 9}, false, false},
      {"ta", {5, 7}, {5, 9}, true, false},
      {"tb", {7, 5}, {9, 5}, false, true},
      {"ta_tb", {5, 7}, {9, 5}, true, true},
      {"batched", {2, 3, 4, 5}, {2, 3, 5, 6}, false, false},
      {"batch_broadcast", {2, 1, 4, 5}, {3, 5, 6}, false, false},
      {"shared_weight_tb", {2, 7, 5}, {9, 5}, false, true},
      {"lhs_broadcast", {4, 5}, {3, 5, 6}, false, false},
      {"batched_ta_tb", {3, 5, 4}, {3, 6, 5}, true, true},
      {"large_k", {16, 48}, {48, 24}, false, false},
      {"single_row_tb", {1, 5}, {9, 5}, false, true},
      {"shared_weight_rank4", {2, 3, 7, 5}, {5, 9}, false, false},
  };
  for (const M& m : cases) {
    std::int64_t k = m.ta ? m.a[m.a.size() - 2] : m.a.back();
    for (DType d : {DType::f32, DType::f64})
      t.add(std::string("matmul_") + m.name + "_" + dn(d), K::MatMul,
            {in("a", m.a, d), in("b", m.b, d)}, ir::MatMulAttrs{m.ta, m.tb},
            sum_of_products(d, k, 1.0, "K-term dot products of values in [-1, 1]"));
  }
  for (DType d : {DType::i32, DType::i64, DType::i8})
    t.add("matmul_batch_broadcast_" + dn(d), K::MatMul,
          {ints("a", {2, 1, 3, 4}, d, -5, 5), ints("b", {3, 4, 2}, d, -5, 5)},
          ir::MatMulAttrs{false, false}, exact("integer dot products are exact"));
  t.add("matmul_tb_i64", K::MatMul,
        {ints("a", {3, 4}, DType::i64, -9, 9), ints("b", {5, 4}, DType::i64, -9, 9)},
        ir::MatMulAttrs{false, true}, exact("integer dot products are exact"));
  // DotGeneral (lowered to Transpose / Reshape / MatMul by legalisation).
  ir::DotGeneralAttrs dg;
  dg.lhs_batch = {0};
  dg.rhs_batch = {1};
  dg.lhs_contracting = {2};
  dg.rhs_contracting = {0};
  t.add("dot_general_batch_contract_f32", K::DotGeneral, {in("a", {2, 3, 4}), in("b", {4, 2, 5})},
        dg, sum_of_products(DType::f32, 4, 1.0, "4-term dot products of values in [-1, 1]"));
  ir::DotGeneralAttrs dg2;
  dg2.lhs_contracting = {0, 2};
  dg2.rhs_contracting = {1, 0};
  t.add("dot_general_two_contracting_f64", K::DotGeneral,
        {in("a", {3, 2, 4}, DType::f64), in("b", {4, 3, 5}, DType::f64)}, dg2,
        sum_of_products(DType::f64, 12, 1.0, "12-term dot products"));
  // DenseSolve: diagonally dominant A (Gershgorin: cond(A) <= 2n + 1).
  for (DType d : {DType::f32, DType::f64}) {
    double u = unit(d);
    Tolerance tol{8 * 16 * u * 4, 8 * 16 * u,
                  "backward-stable LU: forward error <= cond(A)·c·n·u with cond(A) <= 2n + 1"};
    t.add("dense_solve_matrix_rhs_" + dn(d), K::DenseSolve,
          {with(in("A", {4, 4}, d), Fill::diag_dominant), in("b", {4, 2}, d)}, ir::NoAttrs{}, tol);
    t.add("dense_solve_batched_vector_rhs_" + dn(d), K::DenseSolve,
          {with(in("A", {2, 3, 3}, d), Fill::diag_dominant), in("b", {2, 3}, d)}, ir::NoAttrs{},
          tol);
  }
}

// ---- movement
// ------------------------------------------------------------------------------------

void movement_cases(Table& t) {
  Tolerance copy = exact("data movement copies elements");
  for (DType d : {DType::f32, DType::i64, DType::f16, DType::boolean, DType::u8}) {
    std::string s = "_" + dn(d);
    t.add("reshape" + s, K::Reshape, {ints("x", {2, 3, 4}, d, 0, 1)},
          ir::TargetShapeAttrs{{4, ir::Dim(-1)}}, copy);
    t.add("transpose_2d" + s, K::Transpose, {ints("x", {5, 7}, d, 0, 1)},
          ir::TransposeAttrs{{1, 0}}, copy);
    t.add("transpose_bshd_to_bhsd" + s, K::Transpose, {ints("x", {2, 5, 3, 4}, d, 0, 1)},
          ir::TransposeAttrs{{0, 2, 1, 3}}, copy);
    t.add("concat_axis1" + s, K::Concat,
          {ints("a", {2, 3, 4}, d, 0, 1), ints("b", {2, 1, 4}, d, 0, 1),
           ints("c", {2, 2, 4}, d, 0, 1)},
          ir::AxisAttrs{1}, copy);
    t.add("expand" + s, K::Expand, {ints("x", {3, 1}, d, 0, 1)}, ir::TargetShapeAttrs{{2, 3, 4}},
          copy);
    // Every part of a tuple, read back through its Get and joined in reverse order, so a part
    // written at the wrong offset or from the wrong rows shows.
    t.add_built("split_axis1_reversed" + s, K::Split, {ints("x", {2, 7, 3}, d, 0, 1)}, copy,
                [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                  ir::Builder b(g);
                  auto parts = b.parts(b.split(in_[0], 1, {2, 4, 1}));
                  return b.concat({parts[2], parts[1], parts[0]}, 1);
                });
  }
  t.add_built("split_axis0_one_part_out_f32", K::Split, {in("x", {6, 5})}, copy,
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                return b.get(b.split(in_[0], 0, {1, 5}), 1);
              });
  t.add_built("get_last_axis_part_f64", K::Get, {in("x", {3, 8}, DType::f64)}, copy,
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                ir::NodeId parts = b.split(in_[0], -1, {3, 5});
                return b.mul(b.get(parts, 1), b.get(parts, 1));
              });
  t.add("transpose_3d_rotate_f32", K::Transpose, {in("x", {3, 4, 5})},
        ir::TransposeAttrs{{2, 0, 1}}, copy);
  t.add("transpose_large_f32", K::Transpose, {in("x", {8, 128, 12, 64})},
        ir::TransposeAttrs{{0, 2, 1, 3}}, copy);
  t.add("narrow_axis0_f32", K::Narrow, {in("x", {6, 4})}, ir::NarrowAttrs{0, 2, 3}, copy);
  t.add("narrow_middle_f32", K::Narrow, {in("x", {2, 6, 4})}, ir::NarrowAttrs{1, 1, 4}, copy);
  t.add("narrow_last_i32", K::Narrow, {ints("x", {3, 4, 9}, DType::i32, -9, 9)},
        ir::NarrowAttrs{-1, 3, 5}, copy);
  t.add("concat_axis0_f64", K::Concat, {in("a", {2, 3}, DType::f64), in("b", {4, 3}, DType::f64)},
        ir::AxisAttrs{0}, copy);
  t.add("concat_single_f32", K::Concat, {in("a", {2, 3})}, ir::AxisAttrs{-1}, copy);
  t.add("expand_new_dims_f32", K::Expand, {in("x", {4})}, ir::TargetShapeAttrs{{2, 3, 4}}, copy);
  t.add("expand_keep_f32", K::Expand, {in("x", {1, 4, 1})},
        ir::TargetShapeAttrs{{3, ir::Dim(-1), 5}}, copy);
  for (DType id : {DType::i64, DType::i32, DType::u8}) {
    t.add("gather_embedding_" + dn(id), K::Gather,
          {in("table", {10, 8}), ints("idx", {2, 5}, id, 0, 9)}, ir::AxisAttrs{0}, copy);
  }
  t.add("gather_large_rows_f32", K::Gather,
        {in("table", {1000, 256}), ints("idx", {4, 300}, DType::i64, 0, 999)}, ir::AxisAttrs{0},
        copy);
  t.add("gather_axis1_f64", K::Gather,
        {in("table", {3, 6, 4}, DType::f64), ints("idx", {5}, DType::i64, 0, 5)}, ir::AxisAttrs{1},
        copy);
  t.add("gather_last_axis_i64", K::Gather,
        {ints("table", {3, 6}, DType::i64, -50, 50), ints("idx", {2, 2}, DType::i32, 0, 5)},
        ir::AxisAttrs{-1}, copy);
  // ScatterAdd with repeated indices (updates accumulate).
  t.add("scatter_add_axis0_f32", K::ScatterAdd,
        {in("target", {5, 3}), ints("idx", {7}, DType::i64, 0, 4), in("updates", {7, 3})},
        ir::AxisAttrs{0},
        sum_of_products(DType::f32, 8, 1.0,
                        "up to 8 accumulated f32 additions of values in [-1, 1]"));
  t.add("scatter_add_axis1_i64", K::ScatterAdd,
        {ints("target", {2, 4}, DType::i64, -9, 9), ints("idx", {3}, DType::i32, 0, 3),
         ints("updates", {2, 3}, DType::i64, -9, 9)},
        ir::AxisAttrs{1}, exact("integer additions are exact"));
  t.add("scatter_add_axis1_f64", K::ScatterAdd,
        {in("target", {2, 4, 3}, DType::f64), ints("idx", {6}, DType::i64, 0, 3),
         in("updates", {2, 6, 3}, DType::f64)},
        ir::AxisAttrs{1}, sum_of_products(DType::f64, 7, 1.0, "up to 7 accumulated additions"));
  // ---- onnx3: topk ----
  // TopK's values and indices (cast to the values' type, exact for these sizes), joined along
  // the axis; integers in [0, 3] make ties, so the lower-index-first order shows.
  struct TopKCase {
    const char* name;
    InputSpec x;
    ir::TopKAttrs a;
  };
  const TopKCase topk_cases[] = {
      {"topk_last_axis_largest_f32", in("x", {3, 17}), {-1, 5, true}},
      {"topk_middle_axis_smallest_f64", in("x", {2, 9, 4}, DType::f64), {1, 4, false}},
      {"topk_ties_largest_i32", ints("x", {4, 11}, DType::i32, 0, 3), {1, 7, true}},
      {"topk_ties_smallest_axis0_i64", ints("x", {10, 3}, DType::i64, 0, 3), {0, 10, false}},
      {"topk_ties_largest_f16", ints("x", {3, 12}, DType::f16, 0, 3), {-1, 6, true}},
  };
  for (const TopKCase& c : topk_cases) {
    const ir::TopKAttrs a = c.a;
    t.add_built(c.name, K::TopK, {c.x}, exact("a selection copies values; indices are exact"),
                [a](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                  ir::Builder b(g);
                  const ir::NodeId top = g.add(K::TopK, {in_[0]}, a, "top");
                  const ir::NodeId values = b.get(top, 0);
                  const ir::NodeId idx = b.cast(b.get(top, 1), b.shape(in_[0]).dtype);
                  return b.concat({values, idx}, a.axis);
                });
  }
}

// ---- reductions and normalisation
// ----------------------------------------------------------------

void reduce_cases(Table& t) {
  struct R {
    const char* name;
    std::vector<std::int64_t> axes;
    bool keep;
  };
  const R axes[] = {{"all", {}, false},           {"last", {-1}, false},
                    {"first", {0}, true},         {"middle", {1}, false},
                    {"outer_two", {0, 2}, false}, {"last_two_keep", {1, 2}, true}};
  const ir::ReduceOp ops[] = {ir::ReduceOp::sum, ir::ReduceOp::mean, ir::ReduceOp::max,
                              ir::ReduceOp::min, ir::ReduceOp::prod};
  for (ir::ReduceOp op : ops) {
    std::string on_ = std::string(ir::enum_names(op)[static_cast<std::size_t>(op)]);
    bool order_free = op == ir::ReduceOp::max || op == ir::ReduceOp::min;
    for (const R& r : axes)
      for (DType d : {DType::f32, DType::f64}) {
        // Values in [0.5, 1.5] keep products of up to 60 terms in range.
        Tolerance tol = order_free ? exact("max / min select an element")
                                   : Tolerance{60 * 0x1p-52 * 100, 2 * unit(d),
                                               "accumulated in double on both sides: one final "
                                               "rounding (2u) plus n·2^-52 of the double sums"};
        t.add("reduce_" + on_ + "_" + r.name + "_" + dn(d), K::Reduce,
              {in("x", {3, 4, 5}, d, 0.5, 1.5)}, ir::ReduceAttrs{op, r.axes, r.keep}, tol);
      }
    if (op != ir::ReduceOp::mean)
      for (DType d : {DType::i32, DType::i64, DType::u8})
        t.add("reduce_" + on_ + "_outer_two_" + dn(d), K::Reduce,
              {ints("x", {3, 4, 5}, d, d == DType::u8 ? 0 : -3, 3)},
              ir::ReduceAttrs{op, {0, 2}, false}, exact("integer reductions are exact (wrapping)"));
  }
  t.add("reduce_sum_rows_large_f32", K::Reduce, {in("x", {512, 384})},
        ir::ReduceAttrs{ir::ReduceOp::sum, {-1}, false},
        Tolerance{384 * 0x1p-52 * 384, 2 * 0x1p-24, "accumulated in double: one final rounding"});
  // Sums over a leading run of axes (bias gradients): several column blocks and a tail.
  for (DType d : {DType::f32, DType::f64})
    for (ir::ReduceOp op : {ir::ReduceOp::sum, ir::ReduceOp::mean})
      t.add(std::string("reduce_") + (op == ir::ReduceOp::sum ? "sum" : "mean") +
                "_leading_large_" + dn(d),
            K::Reduce, {in("x", {8, 64, 1000}, d)}, ir::ReduceAttrs{op, {0, 1}, false},
            Tolerance{512 * 0x1p-52 * 512, 2 * unit(d),
                      "accumulated in double on both sides: one final rounding"});
  // Softmax / LogSoftmax over several axes.
  struct S {
    const char* name;
    Sizes dims;
    std::int64_t axis;
  };
  const S softmaxes[] = {{"last", {4, 7}, -1},
                         {"first", {5, 3}, 0},
                         {"middle", {2, 6, 3}, 1},
                         {"long_rows", {64, 1000}, -1}};
  for (K op : {K::Softmax, K::LogSoftmax})
    for (const S& s : softmaxes)
      for (DType d : {DType::f32, DType::f64}) {
        auto n = static_cast<double>(s.dims[static_cast<std::size_t>(
            s.axis < 0 ? static_cast<std::int64_t>(s.dims.size()) + s.axis : s.axis)]);
        double scale = op == K::LogSoftmax ? 8 + std::log(n) : 1.0;
        Tolerance tol{(n + 16) * unit(d) * scale, (n + 16) * unit(d),
                      "exp within a few ulp, an n-term sum (n·u), one division"};
        t.add(on(op) + "_" + s.name + "_" + dn(d), op, {in("x", s.dims, d, -4, 4)},
              ir::AxisAttrs{s.axis}, tol);
      }
  // ArgMax (ties: the first maximum wins).
  t.add("argmax_last_f32", K::ArgMax, {in("x", {4, 9})}, ir::ArgMaxAttrs{-1, false},
        exact("an index"));
  t.add("argmax_first_keep_f64", K::ArgMax, {in("x", {6, 3}, DType::f64)}, ir::ArgMaxAttrs{0, true},
        exact("an index"));
  t.add("argmax_ties_i64", K::ArgMax, {ints("x", {3, 5, 4}, DType::i64, 0, 2)},
        ir::ArgMaxAttrs{1, false}, exact("an index; ties pick the first"));
  t.add("argmax_ties_f32", K::ArgMax, {ints("x", {5, 8}, DType::f32, 0, 2)},
        ir::ArgMaxAttrs{-1, false}, exact("an index; ties pick the first"));
  // LayerNorm / RmsNorm over the last axis.
  for (DType d : {DType::f32, DType::f64})
    for (std::int64_t n : {33, 768}) {
      std::int64_t rows = n == 768 ? 400 : 5; // 400 rows of 768: several tasks
      auto nn = static_cast<double>(n);
      Tolerance tol{(nn + 16) * unit(d) * 4, (nn + 16) * unit(d),
                    "mean and variance are n-term sums (n·u relative); outputs are at most ~4"};
      std::string s = "_" + std::to_string(n) + "_" + dn(d);
      t.add("layer_norm_affine" + s, K::LayerNorm,
            {in("x", {rows, n}, d, -2, 2), in("gamma", {n}, d), in("beta", {n}, d)},
            ir::NormAttrs{1e-5}, tol);
      t.add("layer_norm_no_beta" + s, K::LayerNorm,
            {in("x", {rows, n}, d, -2, 2), in("gamma", {n}, d)}, ir::NormAttrs{1e-12}, tol);
      t.add("rms_norm" + s, K::RmsNorm, {in("x", {rows, n}, d, -2, 2), in("gamma", {n}, d)},
            ir::NormAttrs{1e-6}, tol);
    }
  t.add("rms_norm_3d_f32", K::RmsNorm, {in("x", {2, 3, 16}), in("gamma", {16})},
        ir::NormAttrs{1e-6}, Tolerance{32 * 0x1p-24 * 4, 32 * 0x1p-24, "a 16-term sum of squares"});
  // SoftmaxCrossEntropy.
  for (DType d : {DType::f32, DType::f64})
    for (DType l : {DType::i64, DType::i32})
      t.add("softmax_cross_entropy_" + dn(d) + "_" + dn(l), K::SoftmaxCrossEntropy,
            {in("logits", {6, 10}, d, -3, 3), ints("labels", {6}, l, 0, 9)}, ir::NoAttrs{},
            Tolerance{4 * unit(d) * 8, 2 * unit(d),
                      "computed in double: one final rounding; |loss| <= ~8"});
}

// ---- attention and positions
// ---------------------------------------------------------------------

/// q, k, v (and the mask) of an attention case in \p layout.
std::vector<InputSpec> attention_inputs(ir::AttnLayout layout, std::int64_t b, std::int64_t h,
                                        std::int64_t kvh, std::int64_t sq, std::int64_t sk,
                                        std::int64_t d, std::int64_t dv, ir::MaskKind mask, DType t,
                                        Sizes bias_dims = {}) {
  auto dims = [&](std::int64_t s, std::int64_t heads, std::int64_t f) {
    return layout == ir::AttnLayout::bshd ? Sizes{b, s, heads, f} : Sizes{b, heads, s, f};
  };
  std::vector<InputSpec> v{in("q", dims(sq, h, d), t), in("k", dims(sk, kvh, d), t),
                           in("v", dims(sk, kvh, dv), t)};
  if (mask == ir::MaskKind::padding)
    v.push_back(with(ints("mask", {b, sk}, DType::boolean, 0, 1), Fill::keep_mask));
  if (mask == ir::MaskKind::bias)
    v.push_back(in("bias", bias_dims.empty() ? Sizes{b, h, sq, sk} : bias_dims, t, -2, 2));
  return v;
}

Tolerance attention_tol(DType t, std::int64_t d, std::int64_t sk) {
  double u = unit(t);
  double scores = std::pow(static_cast<double>(d), 1.5); // gamma_D · D · scale with scale 1/sqrt(D)
  double e = (scores + static_cast<double>(sk) + 16) * u;
  return {e, e,
          "scores: D-term dots (D^1.5·u after the 1/sqrt(D) scale); softmax: Sk-term sum; "
          "P·V: Sk-term convex combination of values in [-1, 1]"};
}

void attention_cases(Table& t) {
  const ir::MaskKind masks[] = {ir::MaskKind::none, ir::MaskKind::causal,
                                ir::MaskKind::sliding_window, ir::MaskKind::padding,
                                ir::MaskKind::bias};
  struct G {
    const char* name;
    std::int64_t h, kvh;
  };
  const G groups[] = {{"mha", 4, 4}, {"gqa", 4, 2}, {"mqa", 4, 1}};
  for (ir::AttnLayout layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
    for (ir::MaskKind mask : masks)
      for (const G& g : groups) {
        ir::AttentionAttrs a;
        a.layout = layout;
        a.num_heads = g.h;
        a.num_kv_heads = g.kvh;
        a.mask = mask;
        a.window = mask == ir::MaskKind::sliding_window ? 3 : 0;
        std::string name = "attention_" +
                           std::string(ir::enum_names(layout)[static_cast<std::size_t>(layout)]) +
                           "_" + std::string(ir::enum_names(mask)[static_cast<std::size_t>(mask)]) +
                           "_" + g.name + "_f32";
        t.add(name, K::Attention,
              attention_inputs(layout, 2, g.h, g.kvh, 7, 7, 16, 16, mask, DType::f32), a,
              attention_tol(DType::f32, 16, 7));
      }
  // Longer sequences: several query blocks and key tiles; Sq != Sk aligns queries to the last keys.
  for (ir::MaskKind mask : masks) {
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bshd;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 20 : 0;
    std::string m(ir::enum_names(mask)[static_cast<std::size_t>(mask)]);
    t.add("attention_long_" + m + "_f32", K::Attention,
          attention_inputs(a.layout, 2, 4, 2, 70, 150, 32, 32, mask, DType::f32), a,
          attention_tol(DType::f32, 32, 150));
    t.add("attention_decode_" + m + "_f32", K::Attention,
          attention_inputs(a.layout, 1, 4, 2, 3, 40, 16, 16, mask, DType::f32), a,
          attention_tol(DType::f32, 16, 40));
  }
  { // A window wide enough that whole 64-key tiles are inside it for every row of a query block
    // (the kernel's unmasked-tile path) next to tiles cut by either edge.
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = 2;
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::sliding_window;
    a.window = 150;
    t.add("attention_wide_window_f32", K::Attention,
          attention_inputs(a.layout, 1, 2, 2, 40, 200, 16, 16, a.mask, DType::f32), a,
          attention_tol(DType::f32, 16, 200));
  }
  // Scale, softcap, Dv != D, broadcast biases, f64.
  {
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = 2;
    a.num_kv_heads = 2;
    a.scale = 0.5;
    a.softcap = 2.0;
    a.mask = ir::MaskKind::causal;
    t.add("attention_scale_softcap_dv_f32", K::Attention,
          attention_inputs(a.layout, 2, 2, 2, 9, 9, 8, 12, a.mask, DType::f32), a,
          attention_tol(DType::f32, 16, 9));
    a.mask = ir::MaskKind::none;
    a.softcap.reset();
    a.scale.reset();
    t.add("attention_wide_head_dv80_f32", K::Attention,
          attention_inputs(a.layout, 1, 2, 2, 33, 70, 96, 80, a.mask, DType::f32), a,
          attention_tol(DType::f32, 96, 70));
    a.mask = ir::MaskKind::bias;
    t.add("attention_bias_broadcast_rows_f32", K::Attention,
          attention_inputs(a.layout, 2, 2, 2, 5, 6, 8, 8, a.mask, DType::f32, {6}), a,
          attention_tol(DType::f32, 8, 6));
    t.add("attention_bias_broadcast_heads_f32", K::Attention,
          attention_inputs(a.layout, 2, 2, 2, 5, 6, 8, 8, a.mask, DType::f32, {2, 1, 5, 6}), a,
          attention_tol(DType::f32, 8, 6));
  }
  for (ir::MaskKind mask : masks) {
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 2 : 0;
    std::string m(ir::enum_names(mask)[static_cast<std::size_t>(mask)]);
    t.add("attention_" + m + "_gqa_f64", K::Attention,
          attention_inputs(a.layout, 2, 4, 2, 6, 6, 8, 8, mask, DType::f64), a,
          attention_tol(DType::f64, 8, 6));
  }
  // Rope: styles × layouts × partial rotation × position offset.
  for (ir::RopeStyle style : {ir::RopeStyle::half, ir::RopeStyle::interleaved})
    for (ir::AttnLayout layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
      for (std::int64_t n_rot : {0, 8})
        for (std::int64_t offset : {0, 5}) {
          ir::RopeAttrs a;
          a.layout = layout;
          a.style = style;
          a.n_rot = n_rot;
          a.position_offset = offset;
          std::string name =
              "rope_" + std::string(ir::enum_names(style)[static_cast<std::size_t>(style)]) + "_" +
              std::string(ir::enum_names(layout)[static_cast<std::size_t>(layout)]) +
              (n_rot ? "_partial" : "_full") + (offset ? "_offset" : "") + "_f32";
          Sizes dims = layout == ir::AttnLayout::bshd ? Sizes{2, 5, 3, 16} : Sizes{2, 3, 5, 16};
          t.add(name, K::Rope, {in("x", dims)}, a,
                ulps(DType::f32, 8, 2,
                     "a·cos - b·sin with cos / sin rounded to f32: <= 4u·(|a| + |b|)"));
        }
  t.add("rope_large_half_bshd_f32", K::Rope, {in("x", {4, 128, 8, 64})}, ir::RopeAttrs{},
        ulps(DType::f32, 8, 2, "a·cos - b·sin with cos / sin rounded to f32: <= 4u·(|a| + |b|)"));
  ir::RopeAttrs r;
  r.theta = 500000.0;
  r.position_offset = 1000;
  t.add("rope_long_theta_f64", K::Rope, {in("x", {1, 6, 2, 8}, DType::f64)}, r,
        ulps(DType::f64, 8, 2, "a·cos - b·sin in double"));
}

// ---- convolution
// ---------------------------------------------------------------------------------

void conv_cases(Table& t) {
  struct C {
    const char* name;
    Sizes x, w;
    ir::Conv2dAttrs a;
    bool bias;
  };
  const C convs[] = {
      {"3x3_pad1", {2, 3, 8, 8}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
      {"stride2", {1, 2, 9, 7}, {3, 2, 3, 3}, {{2, 2}, {1, 0}, {1, 1}, 1}, false},
      {"dilation2", {1, 3, 9, 9}, {2, 3, 3, 3}, {{1, 1}, {2, 2}, {2, 2}, 1}, true},
      {"groups2", {2, 4, 6, 6}, {6, 2, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}, true},
      {"depthwise", {1, 4, 5, 5}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 4}, false},
      {"1x1", {2, 8, 4, 4}, {5, 8, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
  };
  for (const C& c : convs)
    for (DType d : {DType::f32, DType::f64}) {
      std::vector<InputSpec> ins{in("x", c.x, d), in("w", c.w, d)};
      if (c.bias)
        ins.push_back(in("bias", {c.w[0]}, d));
      std::int64_t k = c.w[1] * c.w[2] * c.w[3] + 1;
      t.add(std::string("conv2d_") + c.name + "_" + dn(d), K::Conv2d, ins, c.a,
            sum_of_products(d, k, 1.0, "C/groups·KH·KW-term dot products (+ bias)"));
    }
  struct P {
    const char* name;
    ir::Pool2dAttrs a;
  };
  const P pools[] = {
      {"max_2x2", {ir::PoolKind::max, {2, 2}, {2, 2}, {0, 0}}},
      {"max_3x3_pad1", {ir::PoolKind::max, {3, 3}, {1, 1}, {1, 1}}},
      {"avg_2x2", {ir::PoolKind::avg, {2, 2}, {2, 2}, {0, 0}}},
      {"avg_3x3_pad1_exclude", {ir::PoolKind::avg, {3, 3}, {2, 2}, {1, 1}}},
  };
  for (const P& p : pools)
    for (DType d : {DType::f32, DType::f64})
      t.add(std::string("pool2d_") + p.name + "_" + dn(d), K::Pool2d, {in("x", {2, 3, 7, 8}, d)},
            p.a,
            p.a.kind == ir::PoolKind::max
                ? exact("max selects an element")
                : Tolerance{12 * unit(d), 12 * unit(d), "an average of at most 9 values"});
}

// ---- quantization
// --------------------------------------------------------------------------------

void quant_cases(Table& t) {
  ir::QuantAttrs per_tensor{std::nullopt, {0.05}, {3}};
  ir::QuantAttrs per_channel{1, {0.02, 0.05, 0.1}, {0, -4, 7}};
  Tolerance q = exact("defined in double on both sides (round half to even, clamp)");
  for (DType d : {DType::f32, DType::f64}) {
    t.add("quantize_per_tensor_" + dn(d), K::Quantize, {in("x", {4, 6}, d, -8, 8)}, per_tensor, q);
    t.add("quantize_per_channel_" + dn(d), K::Quantize, {in("x", {2, 3, 5}, d, -8, 8)}, per_channel,
          q);
    t.add("fake_quantize_per_tensor_" + dn(d), K::FakeQuantize, {in("x", {4, 6}, d, -8, 8)},
          per_tensor, q);
    t.add("fake_quantize_per_channel_" + dn(d), K::FakeQuantize, {in("x", {2, 3, 5}, d, -8, 8)},
          per_channel, q);
  }
  t.add("dequantize_per_tensor", K::Dequantize, {ints("q", {4, 6}, DType::i8, -128, 127)},
        per_tensor, q);
  t.add("dequantize_per_channel", K::Dequantize, {ints("q", {2, 3, 5}, DType::i8, -128, 127)},
        per_channel, q);
  // Ties: odd integers x give x / 2 exactly halfway between two integers.
  t.add("quantize_ties_f32", K::Quantize, {ints("x", {3, 7}, DType::f32, -20, 20)},
        ir::QuantAttrs{std::nullopt, {2.0}, {0}}, q);
}

// ---- control flow, extension and HIR blocks
// ------------------------------------------------------

/// A one-input body graph computing \p fn(x).
ir::Graph body_graph(const ir::Shape& x_type,
                     const std::function<ir::NodeId(ir::Builder&, ir::NodeId)>& fn) {
  ir::Graph g("body");
  ir::Builder b(g);
  b.output(fn(b, b.input("x", x_type)));
  return g;
}

void control_cases(Table& t) {
  ir::Shape xt = ir::Shape::of({3, 4});
  for (int pred : {0, 1}) {
    t.add_built(
        std::string("if_") + (pred ? "then" : "else") + "_f32", K::If,
        {ints("p", {}, DType::boolean, pred, pred), in("x", {3, 4}, DType::f32, -2, 2)},
        elementwise_fn(DType::f32, 2.0), [xt](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
          ir::Builder b(g);
          auto then_b = body_graph(
              xt, [](ir::Builder& bb, ir::NodeId x) { return bb.mul(x, bb.scalar(2.0)); });
          auto else_b = body_graph(xt, [](ir::Builder& bb, ir::NodeId x) { return bb.exp(x); });
          return b.if_(in_[0], {in_[1]}, then_b, else_b);
        });
  }
  t.add_built("while_halve_add_f32", K::While, {in("x", {2, 5}, DType::f32, -4, 4)},
              exact("each iteration is a correctly rounded multiply and add on both sides"),
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                ir::Shape s = ir::Shape::of({2, 5});
                // cond: always true (the loop runs max_iterations times).
                ir::Graph cond("cond");
                {
                  ir::Builder cb(cond);
                  cb.input("x", s);
                  cb.output(cb.constant(ir::Tensor::scalar(true)));
                }
                auto body = body_graph(s, [](ir::Builder& bb, ir::NodeId x) {
                  return bb.add(bb.mul(x, bb.scalar(0.5)), bb.scalar(1.0));
                });
                return b.while_({in_[0]}, cond, body, 4, 0);
              });
  // Guarded integer division `p ? x / d : 0` with p = (d != 0): the division runs only when taken
  // (a backend must not evaluate the untaken branch, which divides by zero).
  for (int pred : {0, 1}) {
    const ir::Shape xi = ir::Shape::of({4}, DType::i32), di = ir::Shape::scalar(DType::i32);
    t.add_built(std::string("if_guarded_div_i32_") + (pred ? "taken" : "skipped"), K::If,
                {ints("p", {}, DType::boolean, pred, pred), ints("x", {4}, DType::i32, -50, 50),
                 pred ? InputSpec{"d", di, Fill::nonzero, -5, 5} : ints("d", {}, DType::i32, 0, 0)},
                exact("integer division and multiplication are exact"),
                [xi, di](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                  ir::Builder b(g);
                  ir::Graph then_b("then"), else_b("else");
                  {
                    ir::Builder bb(then_b);
                    ir::NodeId x = bb.input("x", xi);
                    bb.output(bb.div(x, bb.input("d", di)));
                  }
                  {
                    ir::Builder bb(else_b);
                    ir::NodeId x = bb.input("x", xi);
                    bb.input("d", di);
                    bb.output(bb.mul(x, bb.scalar(0, DType::i32)));
                  }
                  return b.if_(in_[0], {in_[1], in_[2]}, then_b, else_b);
                });
  }
  // A While that gathers row i of a [5, 2] table while i < 5 (max_iterations 100): iterations past
  // the table's end must not run.
  t.add_built("while_gather_counter_f32", K::While,
              {ints("i", {}, DType::i64, 0, 0), in("acc", {2}, DType::f32, -1, 1),
               in("table", {5, 2}, DType::f32, -4, 4)},
              exact("each iteration adds one f32 row, correctly rounded"),
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                const ir::Shape ti = ir::Shape::scalar(DType::i64), ta = ir::Shape::of({2}),
                                tt = ir::Shape::of({5, 2});
                ir::Graph cond("cond"), body("body");
                {
                  ir::Builder cb(cond);
                  ir::NodeId i = cb.input("i", ti);
                  cb.input("acc", ta);
                  cb.input("table", tt);
                  cb.output(cb.compare(ir::CmpOp::lt, i, cb.scalar(5, DType::i64)));
                }
                {
                  ir::Builder bb(body);
                  ir::NodeId i = bb.input("i", ti);
                  ir::NodeId acc = bb.input("acc", ta);
                  ir::NodeId table = bb.input("table", tt);
                  bb.output(bb.add(i, bb.scalar(1, DType::i64)));
                  bb.output(bb.add(acc, bb.gather(table, i, 0)));
                  bb.output(table);
                }
                return b.while_({in_[0], in_[1], in_[2]}, cond, body, 100, 1);
              });
  t.add_built("custom_fn_silu_f32", K::CustomFn, {in("x", {3, 6}, DType::f32, -4, 4)},
              elementwise_fn(DType::f32, 4.0),
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                auto body = body_graph(ir::Shape::of({3, 6}), [](ir::Builder& bb, ir::NodeId x) {
                  return bb.mul(x, bb.sigmoid(x));
                });
                return b.custom_fn({in_[0]}, body);
              });
  t.add_built("custom_scale_add_f32", K::Custom, {in("x", {4, 3}), in("y", {4, 3})},
              exact("the backend runs the op's registered reference kernel"),
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::Builder b(g);
                return b.custom("conformance.scale_add", {in_[0], in_[1]}, "3");
              });
}

// ---- fused ops: regions ---------------------------------------------------------------------

/// An ElementwiseRegion over \p ops (the operands' nodes) whose body is built by \p fn from the
/// body Inputs; \p fn returns the body outputs.
ir::NodeId region_node(
    ir::Graph& g, const std::vector<ir::NodeId>& ops,
    const std::function<std::vector<ir::NodeId>(ir::Builder&, const std::vector<ir::NodeId>&)>&
        fn) {
  auto body = std::make_shared<ir::Graph>("region");
  ir::Builder bb(*body);
  std::vector<ir::NodeId> ins;
  for (std::size_t i = 0; i < ops.size(); ++i)
    ins.push_back(bb.input("in" + std::to_string(i), g.shape(ops[i])));
  for (ir::NodeId o : fn(bb, ins))
    bb.output(o);
  return g.add(K::ElementwiseRegion, ops, ir::RegionAttrs{ir::SubGraph{std::move(body)}});
}

void region_cases(Table& t) {
  const Tolerance chain = ulps(DType::f32, 64, 4.0,
                               "a chain of f32 ops rounded after each, as the reference; the "
                               "transcendental steps within 16 ulp each");
  // One loop over a tile: broadcast operands (a row and a column), a body constant, a compare
  // feeding a where; sizes that leave a partial tile (1, 7, 1023, 1025 elements).
  for (std::int64_t n : {1, 7, 1023, 1025}) {
    t.add_built("region_chain_n" + std::to_string(n) + "_f32", K::ElementwiseRegion,
                {in("x", {n, 1}, DType::f32, -3, 3), in("row", {1}, DType::f32, 0.5, 2)}, chain,
                [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                  return region_node(g, in_, [](ir::Builder& b, const auto& a) {
                    ir::NodeId s = b.mul(a[0], a[1]);
                    ir::NodeId u = b.tanh(s);
                    ir::NodeId keep = b.compare(ir::CmpOp::gt, u, b.scalar(0.25));
                    ir::NodeId w = b.where(keep, b.sigmoid(s), b.neg(u));
                    return std::vector<ir::NodeId>{b.add(b.mul(w, w), b.scalar(1.0))};
                  });
                });
  }
  t.add_built("region_broadcast_rows_cols_f32", K::ElementwiseRegion,
              {in("x", {5, 33, 40}, DType::f32, -2, 2), in("col", {33, 1}), in("row", {40}),
               ints("mask", {5, 1, 40}, DType::boolean, 0, 1)},
              chain, [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                return region_node(g, in_, [](ir::Builder& b, const auto& a) {
                  ir::NodeId y = b.add(b.mul(a[0], a[1]), a[2]);
                  ir::NodeId z = b.where(a[3], b.silu(y), b.maximum(y, b.scalar(0.0)));
                  return std::vector<ir::NodeId>{b.sub(z, b.expand(a[1], {5, 33, 40}))};
                });
              });
  // Several results: a tuple whose parts are read back through Get and combined, so a part
  // written at the wrong offset shows.
  t.add_built("region_tuple_two_parts_f32", K::ElementwiseRegion,
              {in("x", {6, 130}, DType::f32, -2, 2), in("y", {130})}, chain,
              [](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                ir::NodeId r = region_node(g, in_, [](ir::Builder& b, const auto& a) {
                  ir::NodeId e = b.exp(b.sub(a[0], a[1]));
                  return std::vector<ir::NodeId>{e, b.gelu(e)};
                });
                ir::Builder b(g);
                return b.sub(b.get(r, 1), b.mul(b.get(r, 0), b.scalar(0.5)));
              });
}

void hir_cases(Table& t) {
  const double u = 0x1p-24;
  // Linear: a 16-term GEMM, bias, GELU.
  t.add("linear_bias_gelu_f32", K::Linear,
        {in("x", {2, 3, 16}), as_param(in("w", {8, 16})), as_param(in("b", {8}))},
        ir::LinearAttrs{ir::Activation::gelu},
        Tolerance{16 * 16 * u * 2 + 16 * u * 4, 16 * u,
                  "a 16-term GEMM (gamma_16·16) then GELU within 16 ulp"});
  t.add("swiglu_ffn_f32", K::SwiGluFfn,
        {in("x", {2, 16}), as_param(in("wg", {24, 16})), as_param(in("wu", {24, 16})),
         as_param(in("wd", {16, 24}))},
        ir::NoAttrs{},
        Tolerance{4 * (16 * 16 + 24 * 24) * u * 4, 64 * u,
                  "two 16-term GEMMs, SiLU, a 24-term GEMM of products up to ~4"});
  // Blocks: small sizes; the bound is the sum of the stages' first-order bounds with a factor 4
  // for LayerNorm / RMSNorm's 1/sigma amplification.
  Tolerance block{4096 * u, 1024 * u,
                  "sum of the stages' bounds (GEMMs gamma_K·K, attention, norms), x4 for norm "
                  "amplification"};
  {
    ir::AttentionBlockAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::causal;
    a.rope = true;
    t.add("attention_block_rope_gqa_causal_f32", K::AttentionBlock,
          {in("x", {2, 6, 16}), as_param(in("wq", {16, 16})), as_param(in("wk", {8, 16})),
           as_param(in("wv", {8, 16})), as_param(in("wo", {16, 16}))},
          a, block);
  }
  {
    std::vector<InputSpec> ins{in("x", {2, 6, 16})};
    for (const char* n : {"q", "k", "v", "o"}) {
      ins.push_back(as_param(in(std::string("w") + n, {16, 16}, DType::f32, -0.5, 0.5)));
      ins.push_back(as_param(in(std::string("b") + n, {16})));
    }
    ins.push_back(as_param(in("ln1_g", {16}, DType::f32, 0.5, 1.5)));
    ins.push_back(as_param(in("ln1_b", {16})));
    ins.push_back(as_param(in("w1", {32, 16}, DType::f32, -0.5, 0.5)));
    ins.push_back(as_param(in("b1", {32})));
    ins.push_back(as_param(in("w2", {16, 32}, DType::f32, -0.5, 0.5)));
    ins.push_back(as_param(in("b2", {16})));
    ins.push_back(as_param(in("ln2_g", {16}, DType::f32, 0.5, 1.5)));
    ins.push_back(as_param(in("ln2_b", {16})));
    ins.push_back(with(ints("mask", {2, 6}, DType::f32, 0, 1), Fill::keep_mask));
    ir::BertLayerAttrs a;
    a.num_heads = 2;
    a.padding_mask = true;
    t.add("bert_layer_padding_f32", K::BertLayer, ins, a, block);
  }
  {
    std::vector<InputSpec> ins{in("x", {1, 6, 16}),
                               as_param(in("attn_norm", {16}, DType::f32, 0.5, 1.5)),
                               as_param(in("wq", {16, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("wk", {8, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("wv", {8, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("wo", {16, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("ffn_norm", {16}, DType::f32, 0.5, 1.5)),
                               as_param(in("w_gate", {24, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("w_up", {24, 16}, DType::f32, -0.5, 0.5)),
                               as_param(in("w_down", {16, 24}, DType::f32, -0.5, 0.5))};
    ir::LlamaBlockAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    t.add("llama_block_gqa_f32", K::LlamaBlock, ins, a, block);
  }
}

/// Fused ops (ops.def's "fused ops" section), emitted by rlx-fusion.
void fused_cases(Table& t) {
  // MatMulBiasAct: every activation of the epilogue, with and without bias, transposed weights,
  // batch dims. Bound: the K-term GEMM (gamma_K · K), the bias add (1 rounding) and the activation
  // (elementwise_fn's 16 ulp, its derivative is at most 1.13 for GELU, 1.1 for SiLU, 1 otherwise).
  struct M {
    const char* name;
    Sizes a, b;
    bool ta, tb, bias;
    ir::Activation act;
  };
  const M cases[] = {
      {"tb_bias_gelu", {2, 3, 16}, {8, 16}, false, true, true, ir::Activation::gelu},
      {"bias_gelu_tanh", {6, 16}, {16, 8}, false, false, true, ir::Activation::gelu_tanh},
      {"tb_bias_relu", {5, 16}, {8, 16}, false, true, true, ir::Activation::relu},
      {"bias_silu", {2, 4, 16}, {16, 8}, false, false, true, ir::Activation::silu},
      {"sigmoid_no_bias", {4, 16}, {16, 8}, false, false, false, ir::Activation::sigmoid},
      {"ta_bias_tanh", {16, 4}, {16, 8}, true, false, true, ir::Activation::tanh},
      {"batched_bias_none", {2, 3, 16}, {2, 16, 8}, false, false, true, ir::Activation::none},
  };
  for (const M& m : cases)
    for (DType d : {DType::f32, DType::f64}) {
      const std::int64_t k = m.ta ? m.a[m.a.size() - 2] : m.a.back();
      const std::int64_t n = m.tb ? m.b[m.b.size() - 2] : m.b.back();
      std::vector<InputSpec> ins{in("a", m.a, d), as_param(in("b", m.b, d))};
      if (m.bias)
        ins.push_back(as_param(in("bias", {n}, d)));
      const double u = unit(d), kk = static_cast<double>(k);
      const double act_ulps = d == DType::f32 ? 16 : 4;
      t.add(std::string("matmul_bias_act_") + m.name + "_" + dn(d), K::MatMulBiasAct, ins,
            ir::MatMulBiasActAttrs{m.ta, m.tb, m.act},
            Tolerance{1.2 * (kk * u * kk + 2 * u * (kk + 1)) + act_ulps * u * (kk + 1),
                      (act_ulps + 2) * u,
                      "a K-term GEMM of values in [-1, 1] (gamma_K · K), the bias add, then the "
                      "activation within 16 ulp (f32) / 4 ulp (f64) with slope <= 1.2"});
    }
}

// fused ops: transformer
void fused_transformer_cases(Table& t) {
  for (DType d : {DType::f32, DType::f64}) {
    // silu(g) * u over values in [-6, 6]: the SiLU approximation's few ulp, then one product.
    t.add("swiglu_" + dn(d), K::SwiGlu,
          {in("gate", {3, 37}, d, -6, 6), in("up", {3, 37}, d, -6, 6)}, ir::NoAttrs{},
          elementwise_fn(d, 6));
    // Two 16-term GEMMs (a rows tail of 5, N = 24 not a multiple of the vector width), the SiLU
    // of one and their product: |gate|, |up| <= 16, so the products' bound scaled by 16 + 1.
    auto x = in("x", {2, 5, 16}, d);
    const double k = 16;
    const double u = unit(d);
    const Tolerance tol{2 * 17 * k * k * u + 64 * u * 16, 64 * u,
                        "two 16-term GEMMs (gamma_16·16 each, values up to 16), SiLU within 16 "
                        "ulp, one product"};
    t.add("swiglu_matmul_" + dn(d), K::SwiGluMatMul,
          {x, as_param(in("w_gate", {24, 16}, d)), as_param(in("w_up", {24, 16}, d))},
          ir::SwiGluMatMulAttrs{}, tol);
    // The [K, N] weights of ONNX exports (weights_kn): the same products, untransposed.
    t.add("swiglu_matmul_kn_" + dn(d), K::SwiGluMatMul,
          {x, as_param(in("w_gate", {16, 24}, d)), as_param(in("w_up", {16, 24}, d))},
          ir::SwiGluMatMulAttrs{true}, tol);
    // ---- perf9: a K of 300 (two K blocks of the packed GEMM's pair, the gate accumulated in the
    // block's scratch), 9 rows, N = 40; x within ±1 and weights within ±0.05, so each product's
    // terms sum to at most 300 · 0.05 = 15 in magnitude, and |gate|, |up| <= 15.
    const double s3 = 15;
    const Tolerance tol3{2 * 301 * s3 * s3 * u + 64 * u * s3, 64 * u,
                         "two 300-term GEMMs (gamma_300·15 each, values up to 15), SiLU within "
                         "16 ulp, one product"};
    t.add("swiglu_matmul_k300_" + dn(d), K::SwiGluMatMul,
          {in("x", {9, 300}, d, -1, 1), as_param(in("w_gate", {40, 300}, d, -0.05, 0.05)),
           as_param(in("w_up", {40, 300}, d, -0.05, 0.05))},
          ir::SwiGluMatMulAttrs{}, tol3);
  }
}

// fused ops: residual + norm. Both parts are checked: the sum (part 0) and the normalised sum
// (part 1), read through their Gets and joined along the last axis.
void fused_norm_cases(Table& t) {
  struct NormShape {
    Sizes dims;
    const char* name;
  };
  // An odd width (no full vector), BERT-mini's and BERT-base's widths with several row tasks, a
  // 3-D input.
  const NormShape shapes[] = {
      {{5, 33}, "5x33"}, {{64, 256}, "64x256"}, {{400, 768}, "400x768"}, {{2, 3, 17}, "2x3x17"}};
  for (DType d : {DType::f32, DType::f64})
    for (const NormShape& sh : shapes)
      for (K op : {K::ResidualLayerNorm, K::ResidualRmsNorm})
        for (bool beta : {true, false}) {
          if (op == K::ResidualRmsNorm && beta)
            continue;
          const auto n = static_cast<double>(sh.dims.back());
          Sizes vec{sh.dims.back()};
          std::vector<InputSpec> ins{in("x", sh.dims, d, -2, 2), in("r", sh.dims, d, -2, 2),
                                     in("gamma", vec, d)};
          if (beta)
            ins.push_back(in("beta", vec, d));
          const std::string name = std::string(op == K::ResidualLayerNorm ? "residual_layer_norm"
                                                                          : "residual_rms_norm") +
                                   (beta ? "_affine_" : "_") + sh.name + "_" + dn(d);
          t.add_built(name, op, ins,
                      Tolerance{(n + 16) * unit(d) * 8, (n + 16) * unit(d),
                                "the sum is one rounding (exact against the oracle); the norm's "
                                "mean and variance are n-term sums (n·u relative) of values up to "
                                "4; outputs are at most ~8"},
                      [op, beta](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
                        ir::Builder b(g);
                        const ir::NodeId f =
                            g.add(op, in_, ir::NormAttrs{beta ? 1e-5 : 1e-6}, "residual_norm");
                        return b.concat({b.get(f, 1), b.get(f, 0)}, -1);
                      });
        }
}

// ---- backward ops
// --------------------------------------------------------------------------------
void backward_cases(Table& t) {
  // The norms' grads: every part of the tuple, flattened and joined (dx, dgamma[, dbeta]), so a
  // part written at the wrong offset or summed over the wrong rows shows. dx: row sums of n terms
  // (the statistics, sum(g), sum(g xh)), |dx| <= ~16; dgamma / dbeta: sums over the rows.
  auto norm_grad = [](K op) {
    return [op](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
      ir::Builder b(g);
      const double eps = op == K::LayerNormGrad ? 1e-5 : 1e-6;
      const ir::NodeId grads = b.op(op, {in_[0], in_[1], in_[2]}, ir::NormAttrs{eps});
      const ir::Shape& x = b.shape(in_[0]);
      std::vector<ir::NodeId> flat{b.reshape(b.get(grads, 0), {ir::Dim(x.numel())}),
                                   b.get(grads, 1)};
      if (op == K::LayerNormGrad)
        flat.push_back(b.get(grads, 2));
      return b.concat(flat, 0);
    };
  };
  struct NormCase {
    Sizes x;
    const char* name;
  };
  for (DType d : {DType::f32, DType::f64})
    for (const NormCase& c : {NormCase{{5, 33}, "5x33"}, NormCase{{400, 768}, "400x768"},
                              NormCase{{2, 3, 16}, "2x3x16"}}) {
      const std::int64_t n = c.x.back();
      std::int64_t rows = 1;
      for (std::size_t i = 0; i + 1 < c.x.size(); ++i)
        rows *= c.x[i];
      const double terms = static_cast<double>(n + rows + 16);
      Tolerance tol{terms * unit(d) * 64, terms * unit(d),
                    "row sums of n terms (|dx| <= ~16) and column sums over the rows (|dgamma| "
                    "<= ~3 per row): (n + rows)·u relative, scaled by the magnitudes"};
      for (K op : {K::LayerNormGrad, K::RmsNormGrad})
        t.add_built(on(op) + "_" + c.name + "_" + dn(d), op,
                    {in("x", c.x, d, -2, 2), in("gamma", {n}, d), in("dy", c.x, d)}, tol,
                    norm_grad(op));
    }
  // Softmax / log-softmax grads along the last axis (contiguous rows, one large case for several
  // tasks) and a middle axis (strided lanes). y as a softmax (log-softmax) output would have it.
  struct SmCase {
    Sizes x;
    std::int64_t axis;
    const char* name;
  };
  for (DType d : {DType::f32, DType::f64})
    for (const SmCase& c : {SmCase{{6, 17}, -1, "last"}, SmCase{{512, 128}, -1, "last_large"},
                            SmCase{{3, 7, 5}, 1, "middle"}}) {
      const double n = static_cast<double>(c.x[static_cast<std::size_t>(
          c.axis < 0 ? static_cast<std::int64_t>(c.x.size()) + c.axis : c.axis)]);
      t.add(on(K::SoftmaxGrad) + "_" + c.name + "_" + dn(d), K::SoftmaxGrad,
            {in("y", c.x, d, 0, 1), in("dy", c.x, d)}, ir::AxisAttrs{c.axis},
            Tolerance{(n + 4) * unit(d) * 4, (n + 4) * unit(d),
                      "an n-term sum of y dy (|y dy| <= 1), one difference and one product"});
      t.add(on(K::LogSoftmaxGrad) + "_" + c.name + "_" + dn(d), K::LogSoftmaxGrad,
            {in("y", c.x, d, -4, 0), in("dy", c.x, d)}, ir::AxisAttrs{c.axis},
            Tolerance{(n + 20) * unit(d) * 4, (n + 20) * unit(d),
                      "an n-term sum of dy, exp within 16 ulp (|exp(y)| <= 1), one product"});
    }
}

// ---- backward ops 2
// -------------------------------------------------------------------------------
void backward2_cases(Table& t) {
  // AttentionGrad: every mask kind x GQA grouping x layout (as the forward's table), then several
  // query blocks and key tiles, decode (Sq < Sk), scale + softcap + Dv != D, broadcast biases and
  // f64. The tuple is flattened and joined (dq, dk, dv), so a part written at the wrong offset or
  // a KV head summed over the wrong query heads shows. out and dout are random: the op's formula
  // does not assume out is the forward's result.
  auto attention_grad = [](const ir::AttentionAttrs& a) {
    return [a](ir::Graph& g, const std::vector<ir::NodeId>& in_) {
      ir::Builder b(g);
      const ir::NodeId grads = b.op(K::AttentionGrad, in_, a);
      std::vector<ir::NodeId> flat;
      for (std::int64_t i = 0; i < 3; ++i) {
        const ir::NodeId part = b.get(grads, i);
        flat.push_back(b.reshape(part, {ir::Dim(b.shape(part).numel())}));
      }
      return b.concat(flat, 0);
    };
  };
  auto inputs = [](ir::AttnLayout layout, std::int64_t b, std::int64_t h, std::int64_t kvh,
                   std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t dv,
                   ir::MaskKind mask, DType ty, Sizes bias_dims = {}) {
    std::vector<InputSpec> v =
        attention_inputs(layout, b, h, kvh, sq, sk, d, dv, mask, ty, std::move(bias_dims));
    const Sizes od = layout == ir::AttnLayout::bshd ? Sizes{b, sq, h, dv} : Sizes{b, h, sq, dv};
    v.insert(v.begin() + 3, {in("out", od, ty), in("dout", od, ty)});
    return v;
  };
  auto tol = [](DType ty, std::int64_t d, std::int64_t sq, std::int64_t sk, std::int64_t group) {
    const double terms =
        std::pow(static_cast<double>(d), 1.5) + static_cast<double>(sk + sq * group + d + 16);
    return Tolerance{terms * unit(ty) * 8, terms * unit(ty),
                     "scores: D-term dots; softmax: Sk-term sums; dp: Dv-term dots; dq: Sk-term "
                     "sums, dk / dv: Sq·group-term sums of terms up to ~4"};
  };
  const ir::MaskKind masks[] = {ir::MaskKind::none, ir::MaskKind::causal,
                                ir::MaskKind::sliding_window, ir::MaskKind::padding,
                                ir::MaskKind::bias};
  struct G {
    const char* name;
    std::int64_t h, kvh;
  };
  const G groups[] = {{"mha", 4, 4}, {"gqa", 4, 2}, {"mqa", 4, 1}};
  auto mname = [](ir::MaskKind m) {
    return std::string(ir::enum_names(m)[static_cast<std::size_t>(m)]);
  };
  for (ir::AttnLayout layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
    for (ir::MaskKind mask : masks)
      for (const G& g : groups) {
        ir::AttentionAttrs a;
        a.layout = layout;
        a.num_heads = g.h;
        a.num_kv_heads = g.kvh;
        a.mask = mask;
        a.window = mask == ir::MaskKind::sliding_window ? 3 : 0;
        t.add_built("attention_grad_" +
                        std::string(ir::enum_names(layout)[static_cast<std::size_t>(layout)]) +
                        "_" + mname(mask) + "_" + g.name + "_f32",
                    K::AttentionGrad, inputs(layout, 2, g.h, g.kvh, 7, 7, 16, 16, mask, DType::f32),
                    tol(DType::f32, 16, 7, 7, g.h / g.kvh), attention_grad(a));
      }
  for (ir::MaskKind mask : masks) {
    ir::AttentionAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 20 : 0;
    t.add_built("attention_grad_long_" + mname(mask) + "_f32", K::AttentionGrad,
                inputs(a.layout, 2, 4, 2, 70, 150, 32, 32, mask, DType::f32),
                tol(DType::f32, 32, 70, 150, 2), attention_grad(a));
    t.add_built("attention_grad_decode_" + mname(mask) + "_f32", K::AttentionGrad,
                inputs(a.layout, 1, 4, 2, 3, 40, 16, 16, mask, DType::f32),
                tol(DType::f32, 16, 3, 40, 2), attention_grad(a));
    a.layout = ir::AttnLayout::bhsd;
    a.window = mask == ir::MaskKind::sliding_window ? 2 : 0;
    t.add_built("attention_grad_" + mname(mask) + "_gqa_f64", K::AttentionGrad,
                inputs(a.layout, 2, 4, 2, 6, 6, 8, 8, mask, DType::f64),
                tol(DType::f64, 8, 6, 6, 2), attention_grad(a));
  }
  {
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = 2;
    a.num_kv_heads = 2;
    a.scale = 0.5;
    a.softcap = 2.0;
    a.mask = ir::MaskKind::causal;
    t.add_built("attention_grad_scale_softcap_dv_f32", K::AttentionGrad,
                inputs(a.layout, 2, 2, 2, 9, 9, 8, 12, a.mask, DType::f32),
                tol(DType::f32, 12, 9, 9, 1), attention_grad(a));
    a.num_kv_heads = 1;
    a.mask = ir::MaskKind::sliding_window;
    a.window = 4;
    a.layout = ir::AttnLayout::bshd;
    t.add_built("attention_grad_softcap_window_mqa_f64", K::AttentionGrad,
                inputs(a.layout, 1, 2, 1, 9, 12, 8, 8, a.mask, DType::f64),
                tol(DType::f64, 8, 9, 12, 2), attention_grad(a));
    a.softcap.reset();
    a.scale.reset();
    a.num_kv_heads = 2;
    a.layout = ir::AttnLayout::bhsd;
    a.mask = ir::MaskKind::bias;
    t.add_built("attention_grad_bias_broadcast_rows_f32", K::AttentionGrad,
                inputs(a.layout, 2, 2, 2, 5, 6, 8, 8, a.mask, DType::f32, {6}),
                tol(DType::f32, 8, 5, 6, 1), attention_grad(a));
    t.add_built("attention_grad_bias_broadcast_heads_f32", K::AttentionGrad,
                inputs(a.layout, 2, 2, 2, 5, 6, 8, 8, a.mask, DType::f32, {2, 1, 5, 6}),
                tol(DType::f32, 8, 5, 6, 1), attention_grad(a));
  }
  // AttentionGrad at the f32 kernel's blocking edges (64-row query blocks, key ranges rounded to
  // the GEMM tile width): Sq / Sk not multiples of either, D = 40 / 80 / 128, one head, GQA 4:1
  // under every mask kind, Sq > Sk under a causal mask (the first blocks see no key) and more keys
  // than one K block.
  for (ir::MaskKind mask : masks) {
    ir::AttentionAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 1;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 9 : 0;
    t.add_built("attention_grad_edge_gqa4_d80_" + mname(mask) + "_f32", K::AttentionGrad,
                inputs(a.layout, 1, 4, 1, 67, 67, 80, 80, mask, DType::f32),
                tol(DType::f32, 80, 67, 67, 4), attention_grad(a));
  }
  {
    ir::AttentionAttrs a;
    a.num_heads = 1;
    a.num_kv_heads = 1;
    a.mask = ir::MaskKind::causal;
    t.add_built("attention_grad_edge_one_head_d40_s130_f32", K::AttentionGrad,
                inputs(a.layout, 2, 1, 1, 130, 130, 40, 40, a.mask, DType::f32),
                tol(DType::f32, 40, 130, 130, 1), attention_grad(a));
    a.num_heads = 2;
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::padding;
    a.layout = ir::AttnLayout::bhsd;
    t.add_built("attention_grad_edge_d128_padding_bhsd_f32", K::AttentionGrad,
                inputs(a.layout, 1, 2, 2, 100, 100, 128, 128, a.mask, DType::f32),
                tol(DType::f32, 128, 100, 100, 1), attention_grad(a));
    a.num_kv_heads = 1;
    a.mask = ir::MaskKind::causal;
    a.layout = ir::AttnLayout::bshd;
    t.add_built("attention_grad_edge_sq_over_sk_causal_f32", K::AttentionGrad,
                inputs(a.layout, 1, 2, 1, 70, 40, 16, 24, a.mask, DType::f32),
                tol(DType::f32, 24, 70, 40, 2), attention_grad(a));
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::bias;
    a.softcap = 3.0;
    t.add_built("attention_grad_edge_softcap_bias_d40_s77_f32", K::AttentionGrad,
                inputs(a.layout, 1, 2, 2, 77, 77, 40, 40, a.mask, DType::f32),
                tol(DType::f32, 40, 77, 77, 1), attention_grad(a));
    // More visible keys than one K block of the dQ product (256 on AVX2, 512 baseline).
    a.softcap.reset();
    a.num_kv_heads = 1;
    for (ir::MaskKind mask : {ir::MaskKind::none, ir::MaskKind::causal}) {
      a.mask = mask;
      t.add_built("attention_grad_edge_keys_600_" + mname(mask) + "_f32", K::AttentionGrad,
                  inputs(a.layout, 1, 2, 1, 21, 600, 16, 16, mask, DType::f32),
                  tol(DType::f32, 16, 21, 600, 2), attention_grad(a));
    }
  }
  // SoftmaxCrossEntropyGrad: labels of two widths, a wide row (several vector widths), f64.
  for (DType d : {DType::f32, DType::f64})
    for (DType l : {DType::i64, DType::i32})
      for (std::int64_t c : {10, 1000}) {
        const double n = static_cast<double>(c);
        t.add(on(K::SoftmaxCrossEntropyGrad) + "_" + std::to_string(c) + "_" + dn(d) + "_" + dn(l),
              K::SoftmaxCrossEntropyGrad,
              {in("logits", {6, c}, d, -3, 3), ints("labels", {6}, l, 0, 9), in("dloss", {6}, d)},
              ir::NoAttrs{},
              Tolerance{(n + 16) * unit(d) * 2, (n + 16) * unit(d),
                        "an n-term sum of exponentials (exp within 2 ulp), one product, one "
                        "difference; |dlogits| <= 1"});
      }
  // RopeGrad: styles x layouts x partial rotation x position offset, as the forward's table.
  for (ir::RopeStyle style : {ir::RopeStyle::half, ir::RopeStyle::interleaved})
    for (ir::AttnLayout layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
      for (std::int64_t n_rot : {0, 8})
        for (std::int64_t offset : {0, 5}) {
          ir::RopeAttrs a;
          a.layout = layout;
          a.style = style;
          a.n_rot = n_rot;
          a.position_offset = offset;
          const Sizes dims =
              layout == ir::AttnLayout::bshd ? Sizes{2, 5, 3, 16} : Sizes{2, 3, 5, 16};
          t.add("rope_grad_" + std::string(ir::enum_names(style)[static_cast<std::size_t>(style)]) +
                    "_" + std::string(ir::enum_names(layout)[static_cast<std::size_t>(layout)]) +
                    (n_rot ? "_partial" : "_full") + (offset ? "_offset" : "") + "_f32",
                K::RopeGrad, {in("dy", dims)}, a,
                ulps(DType::f32, 8, 2,
                     "a·cos + b·sin with cos / sin rounded to f32: <= 4u·(|a| + |b|)"));
        }
}

// ---- fused ops: attention block
// --------------------------------------------------------------------------------
/// The operands of a fused attention block case: x [b, s, e] in [-1, 1], the packed weight (heads
/// of \p d features), the output weight [eo, h d] and the biases (Params in [-1/4, 1/4]), the mask.
std::vector<InputSpec> attention_block_inputs(const ir::FusedAttentionBlockAttrs& a, std::int64_t b,
                                              std::int64_t s, std::int64_t e, std::int64_t d,
                                              std::int64_t eo, DType t, Sizes bias_dims = {}) {
  const std::int64_t nt = (a.num_heads + 2 * a.num_kv_heads) * d, hd = a.num_heads * d;
  auto w = [&](const char* name, Sizes dims) { return as_param(in(name, dims, t, -0.25, 0.25)); };
  std::vector<InputSpec> v{in("x", {b, s, e}, t),
                           w("w_qkv", a.qkv_transpose_b ? Sizes{nt, e} : Sizes{e, nt}),
                           w("w_o", a.out_transpose_b ? Sizes{eo, hd} : Sizes{hd, eo})};
  if (a.qkv_bias)
    v.push_back(w("b_qkv", {nt}));
  if (a.out_bias)
    v.push_back(w("b_o", {eo}));
  if (a.mask == ir::MaskKind::padding)
    v.push_back(with(ints("mask", {b, s}, DType::boolean, 0, 1), Fill::keep_mask));
  if (a.mask == ir::MaskKind::bias)
    v.push_back(in("bias", bias_dims.empty() ? Sizes{b, a.num_heads, s, s} : bias_dims, t, -2, 2));
  return v;
}

/// The stages' bounds composed: the projection (an e-term sum, |p| <= m = e/4 + 1/4), RoPE (4u of
/// |a| + |b|), the scores (d-term dots of values up to m, and the projection's error carried in),
/// the softmax (a score error δ moves the output by at most 2δ·m, plus an s-term sum), the output
/// projection (an hd-term sum of the attention's error times 1/4, plus its own rounding).
Tolerance attention_block_tol(DType t, std::int64_t e, std::int64_t d, std::int64_t s,
                              std::int64_t hd) {
  const double u = unit(t), E = static_cast<double>(e), D = static_cast<double>(d);
  const double S = static_cast<double>(s), HD = static_cast<double>(hd);
  const double m = E / 4 + 0.25;
  const double ep = (E * E / 4 + 2) * u + 8 * m * u;
  const double es = (D * D * m * m * u + 2 * D * m * ep) / std::sqrt(D) + 16 * u * D * m * m;
  const double eo = ep + 2 * es * m + (S + 16) * m * u;
  const double err = HD * eo / 4 + HD * HD * m * u / 4 + 4 * u;
  return {err, 4 * u,
          "the stages' bounds composed: e-term projection, RoPE, d-term scores, softmax "
          "(2·δ·|v|), an hd-term output projection"};
}

void fused_attention_cases(Table& t) {
  using A = ir::FusedAttentionBlockAttrs;
  auto base = [](std::int64_t h, std::int64_t kvh, ir::MaskKind mask) {
    A a;
    a.num_heads = h;
    a.num_kv_heads = kvh;
    a.mask = mask;
    a.window = mask == ir::MaskKind::sliding_window ? 3 : 0;
    a.qkv_bias = a.out_bias = true;
    a.rope = true;
    return a;
  };
  auto add = [&t](const std::string& name, const A& a, std::int64_t b, std::int64_t s,
                  std::int64_t e, std::int64_t d, std::int64_t eo, DType dt = DType::f32,
                  Sizes bias_dims = {}) {
    t.add("fused_attention_block_" + name + "_" + dn(dt), K::FusedAttentionBlock,
          attention_block_inputs(a, b, s, e, d, eo, dt, bias_dims), a,
          attention_block_tol(dt, e, d, s, a.num_heads * d));
  };
  const ir::MaskKind masks[] = {ir::MaskKind::none, ir::MaskKind::causal,
                                ir::MaskKind::sliding_window, ir::MaskKind::padding,
                                ir::MaskKind::bias};
  // Every mask kind with MHA, GQA and MQA heads (biases, half RoPE).
  struct G {
    const char* name;
    std::int64_t h, kvh;
  };
  for (ir::MaskKind mask : masks)
    for (const G& g : {G{"mha", 4, 4}, G{"gqa", 4, 2}, G{"mqa", 4, 1}})
      add(std::string(ir::enum_names(mask)[static_cast<std::size_t>(mask)]) + "_" + g.name,
          base(g.h, g.kvh, mask), 2, 7, 16, 8, 16);
  // Without RoPE and biases (BERT has biases, LLaMA RoPE; both off), [K, N] weights (ONNX).
  A a = base(2, 2, ir::MaskKind::none);
  a.rope = false;
  add("no_rope", a, 2, 5, 12, 8, 12);
  a.qkv_bias = a.out_bias = false;
  a.rope = true;
  add("no_bias", a, 2, 5, 12, 8, 12);
  a.qkv_bias = true;
  add("qkv_bias_only", a, 2, 5, 12, 8, 12);
  a.qkv_bias = false;
  a.out_bias = true;
  add("out_bias_only", a, 2, 5, 12, 8, 12);
  a.qkv_transpose_b = a.out_transpose_b = false;
  add("kn_weights", a, 2, 5, 12, 8, 12);
  // RoPE variants: interleaved, partial rotation, a position offset, another theta.
  a = base(4, 2, ir::MaskKind::causal);
  a.rope_style = ir::RopeStyle::interleaved;
  a.rope_n_rot = 4;
  a.rope_position_offset = 5;
  a.rope_theta = 500.0;
  add("rope_interleaved_partial_offset", a, 2, 6, 16, 8, 16);
  // Scale and softcap; an output width other than e; a broadcast bias mask.
  a = base(2, 1, ir::MaskKind::causal);
  a.scale = 0.5;
  a.softcap = 2.0;
  add("scale_softcap", a, 2, 9, 16, 8, 10);
  a = base(2, 2, ir::MaskKind::bias);
  add("bias_broadcast_rows", a, 2, 6, 16, 8, 16, DType::f32, {6});
  // Several query blocks (s = 40; the block's worst-case bound grows with e, d and h·d, so longer
  // and wider blocks are left to rlx-cpu's attention_block_test, checked at 5e-5).
  add("two_query_blocks_causal", base(2, 1, ir::MaskKind::causal), 1, 40, 8, 8, 8);
  // f64: the CPU does not claim the block there (legalisation runs its decomposition).
  add("causal_gqa", base(4, 2, ir::MaskKind::causal), 2, 6, 16, 8, 16, DType::f64);
}

// ---- conv / pool backward ----
// conv2d_grad_input / conv2d_grad_weight over the forward's table (strides, padding, dilation,
// groups, depthwise, 1x1) plus a stride that loses input rows; pool2d_grad for both kinds over the
// forward's pools (max reads y = pool2d(x), so the first-max rule is exercised) plus a 3x2 window
// with a row stride of 1.
void conv_backward_cases(Table& t) {
  struct C {
    const char* name;
    Sizes x, w;
    ir::Conv2dAttrs a;
  };
  const C convs[] = {
      {"3x3_pad1", {2, 3, 8, 8}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {"stride2", {1, 2, 9, 7}, {3, 2, 3, 3}, {{2, 2}, {1, 0}, {1, 1}, 1}},
      {"stride3_loses_rows", {2, 2, 10, 8}, {3, 2, 2, 3}, {{3, 2}, {0, 1}, {1, 1}, 1}},
      {"dilation2", {1, 3, 9, 9}, {2, 3, 3, 3}, {{1, 1}, {2, 2}, {2, 2}, 1}},
      {"groups2", {2, 4, 6, 6}, {6, 2, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}},
      {"depthwise", {1, 4, 5, 5}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 4}},
      {"1x1", {2, 8, 4, 4}, {5, 8, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}},
      // C / groups * KH * KW > 32: the CPU's oneDNN backward-weights path (smaller ones loop).
      {"c8_stride2_pad1", {2, 8, 7, 6}, {6, 8, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 1}},
      {"c16_groups2", {2, 16, 5, 5}, {4, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}},
  };
  auto out_size = [](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                     std::int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; };
  for (const C& c : convs)
    for (DType d : {DType::f32, DType::f64}) {
      const Sizes y{c.x[0], c.w[0],
                    out_size(c.x[2], c.w[2], c.a.stride[0], c.a.padding[0], c.a.dilation[0]),
                    out_size(c.x[3], c.w[3], c.a.stride[1], c.a.padding[1], c.a.dilation[1])};
      ir::Conv2dGradAttrs g;
      g.stride = c.a.stride;
      g.padding = c.a.padding;
      g.dilation = c.a.dilation;
      g.groups = c.a.groups;
      g.size = {c.x[2], c.x[3]};
      const std::int64_t taps = c.w[0] / c.a.groups * c.w[2] * c.w[3];
      t.add(std::string("conv2d_grad_input_") + c.name + "_" + dn(d), K::Conv2dGradInput,
            {in("dy", y, d), in("w", c.w, d)}, g,
            sum_of_products(d, taps, 1.0, "sums of at most O/groups·KH·KW products"));
      g.size = {c.w[2], c.w[3]};
      t.add(std::string("conv2d_grad_weight_") + c.name + "_" + dn(d), K::Conv2dGradWeight,
            {in("x", c.x, d), in("dy", y, d)}, g,
            sum_of_products(d, y[0] * y[2] * y[3], 1.0, "N·OH·OW-term dot products"));
    }
  struct P {
    const char* name;
    ir::Pool2dAttrs a;
  };
  const P pools[] = {
      {"2x2", {ir::PoolKind::max, {2, 2}, {2, 2}, {0, 0}}},
      {"3x3_pad1", {ir::PoolKind::max, {3, 3}, {1, 1}, {1, 1}}},
      {"3x3_pad1_stride2", {ir::PoolKind::max, {3, 3}, {2, 2}, {1, 1}}},
      {"3x2_stride1x2", {ir::PoolKind::max, {3, 2}, {1, 2}, {1, 0}}},
  };
  const Sizes x{2, 3, 7, 8};
  for (const P& p : pools)
    for (ir::PoolKind kind : {ir::PoolKind::max, ir::PoolKind::avg})
      for (DType d : {DType::f32, DType::f64}) {
        ir::Pool2dAttrs f = p.a;
        f.kind = kind;
        ir::Pool2dGradAttrs g;
        g.kind = kind;
        g.kernel = f.kernel;
        g.stride = f.stride;
        g.padding = f.padding;
        g.input_size = {x[2], x[3]};
        const Sizes y{x[0], x[1], (x[2] + 2 * f.padding[0] - f.kernel[0]) / f.stride[0] + 1,
                      (x[3] + 2 * f.padding[1] - f.kernel[1]) / f.stride[1] + 1};
        const std::string name = std::string("pool2d_grad_") +
                                 (kind == ir::PoolKind::max ? "max_" : "avg_") + p.name + "_" +
                                 dn(d);
        const Tolerance tol{81 * unit(d), 2 * unit(d),
                            "a sum of the dy shares (|dy| <= 1) of at most 9 overlapping windows: "
                            "gamma_9 * 9 absolute"};
        if (kind == ir::PoolKind::avg) {
          t.add(name, K::Pool2dGrad, {in("dy", y, d)}, g, tol);
          continue;
        }
        t.add_built(name, K::Pool2dGrad, {in("x", x, d), in("dy", y, d)}, tol,
                    [f, g](ir::Graph& gr, const std::vector<ir::NodeId>& in_) {
                      ir::Builder b(gr);
                      return b.op(K::Pool2dGrad, {in_[0], b.pool2d(in_[0], f), in_[1]}, g);
                    });
      }
}

// ---- transformer layer ----
/// The operands of a fused transformer layer case (layer_slots order): x [b, s, e] in [-1, 1],
/// weights in [-1/2, 1/2] and biases in [-1, 1] (Params), norm gains in [1/2, 3/2], the mask.
/// Heads of 4 features; the FFN is f wide.
std::vector<InputSpec> layer_inputs(const ir::FusedTransformerLayerAttrs& a, std::int64_t b,
                                    std::int64_t s, std::int64_t e, std::int64_t f, DType t) {
  const std::int64_t d = 4, nt = (a.block.num_heads + 2 * a.block.num_kv_heads) * d,
                     hd = a.block.num_heads * d;
  auto w = [&](const char* name, Sizes dims) { return as_param(in(name, dims, t, -0.5, 0.5)); };
  auto vec = [&](const char* name, std::int64_t n) { return as_param(in(name, {n}, t)); };
  auto gain = [&](const char* name) { return as_param(in(name, {e}, t, 0.5, 1.5)); };
  auto kn = [](bool transpose_b, std::int64_t n, std::int64_t k) {
    return transpose_b ? Sizes{n, k} : Sizes{k, n};
  };
  const bool llama = a.kind == ir::LayerKind::llama_pre_norm;
  std::vector<InputSpec> v{in("x", {b, s, e}, t), w("w_qkv", kn(a.block.qkv_transpose_b, nt, e)),
                           w("w_o", kn(a.block.out_transpose_b, e, hd))};
  if (a.block.qkv_bias)
    v.push_back(vec("b_qkv", nt));
  if (a.block.out_bias)
    v.push_back(vec("b_o", e));
  v.push_back(gain("g1"));
  if (a.norm_beta)
    v.push_back(vec("beta1", e));
  if (llama)
    v.push_back(w("w_gate", kn(a.up_transpose_b, f, e)));
  v.push_back(w("w_up", kn(a.up_transpose_b, f, e)));
  if (a.up_bias)
    v.push_back(vec("b_up", f));
  v.push_back(w("w_down", kn(a.down_transpose_b, e, f)));
  if (a.down_bias)
    v.push_back(vec("b_down", e));
  v.push_back(gain("g2"));
  if (a.norm_beta)
    v.push_back(vec("beta2", e));
  if (a.block.mask == ir::MaskKind::padding)
    v.push_back(with(ints("mask", {b, s}, DType::boolean, 0, 1), Fill::keep_mask));
  if (a.block.mask == ir::MaskKind::bias)
    v.push_back(in("bias", {b, a.block.num_heads, s, s}, t, -2, 2));
  return v;
}

void fused_layer_cases(Table& t) {
  using A = ir::FusedTransformerLayerAttrs;
  // The bound of the HIR BertLayer / LlamaBlock cases (same widths, weights and gains): the layer
  // runs the same stages.
  auto tol = [](DType dt) {
    const double u = unit(dt);
    return Tolerance{4096 * u, 1024 * u,
                     "sum of the stages' bounds (GEMMs gamma_K·K, attention, norms), x4 for norm "
                     "amplification, as the HIR layer cases"};
  };
  auto add = [&](const std::string& name, const A& a, std::int64_t b, std::int64_t s,
                 std::int64_t f, DType dt = DType::f32) {
    t.add("fused_transformer_layer_" + name + "_" + dn(dt), K::FusedTransformerLayer,
          layer_inputs(a, b, s, 16, f, dt), a, tol(dt));
  };
  auto bert = [] {
    A a;
    a.block.num_heads = a.block.num_kv_heads = 4;
    a.block.qkv_bias = a.block.out_bias = a.up_bias = a.down_bias = a.norm_beta = true;
    a.act = ir::Activation::gelu;
    a.eps = 1e-12;
    return a;
  };
  auto llama = [] {
    A a;
    a.kind = ir::LayerKind::llama_pre_norm;
    a.block.num_heads = 4;
    a.block.num_kv_heads = 2;
    a.block.mask = ir::MaskKind::causal;
    a.block.rope = true;
    a.eps = 1e-6;
    return a;
  };
  // BERT: biases, betas, a padding mask, batch 2; without any of them; tanh-GELU with [K, N]
  // weights (ONNX exports) and a bias mask.
  A a = bert();
  a.block.mask = ir::MaskKind::padding;
  add("bert_padding_b2", a, 2, 6, 32);
  a = bert();
  a.block.qkv_bias = a.block.out_bias = a.up_bias = a.down_bias = a.norm_beta = false;
  add("bert_no_bias_no_beta", a, 1, 5, 24);
  a = bert();
  a.act = ir::Activation::gelu_tanh;
  a.block.qkv_transpose_b = a.block.out_transpose_b = a.up_transpose_b = a.down_transpose_b = false;
  a.block.mask = ir::MaskKind::bias;
  add("bert_kn_weights_bias_mask", a, 2, 5, 24);
  // LLaMA: GQA, RoPE, causal, batch 2; MHA without RoPE with a down bias and [K, N] weights;
  // MQA with a sliding window.
  add("llama_gqa_rope_causal_b2", llama(), 2, 6, 24);
  a = llama();
  a.block.num_kv_heads = 4;
  a.block.rope = false;
  a.block.mask = ir::MaskKind::none;
  a.down_bias = true;
  a.block.qkv_transpose_b = a.block.out_transpose_b = a.up_transpose_b = a.down_transpose_b = false;
  add("llama_mha_down_bias_kn_weights", a, 1, 5, 20);
  a = llama();
  a.block.num_kv_heads = 1;
  a.block.mask = ir::MaskKind::sliding_window;
  a.block.window = 3;
  add("llama_mqa_sliding_window", a, 2, 7, 24);
  // f64: the CPU does not claim the layer there (legalisation runs its decomposition).
  add("llama_gqa_rope_causal", llama(), 2, 6, 24, DType::f64);
  add(
      "bert_padding",
      [&] {
        A b = bert();
        b.block.mask = ir::MaskKind::padding;
        return b;
      }(),
      2, 6, 32, DType::f64);
}

std::vector<OpCase> build_table() {
  Table t;
  unary_cases(t);
  binary_cases(t);
  compare_where_cases(t);
  cast_cases(t);
  matmul_cases(t);
  movement_cases(t);
  reduce_cases(t);
  attention_cases(t);
  conv_cases(t);
  quant_cases(t);
  control_cases(t);
  hir_cases(t);
  fused_cases(t);
  fused_transformer_cases(t);
  region_cases(t);
  fused_norm_cases(t);
  backward_cases(t);
  backward2_cases(t);
  fused_attention_cases(t);
  conv_backward_cases(t);
  fused_layer_cases(t);
  return t.take();
}

} // namespace

void register_conformance_custom_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& reg = ir::CustomOpRegistry::global();
    if (reg.find("conformance.scale_add"))
      return;
    ir::CustomOpDef def;
    def.name = "conformance.scale_add";
    def.min_arity = 2;
    def.max_arity = 2;
    // out = k·x + y, k from the params text; operands of one float type and shape.
    def.infer = [](std::span<const ir::Shape> in_, const ir::CustomAttrs&) {
      if (in_[0] != in_[1] || !ir::is_float(in_[0].dtype))
        throw ir::ShapeError("conformance.scale_add: operands must share one float type");
      return in_[0];
    };
    def.reference = [](std::span<const ir::Tensor> in_, const ir::CustomAttrs& a,
                       const ir::Shape& out) {
      double k = std::stod(a.params.empty() ? "1" : a.params);
      ir::Tensor r(out);
      for (std::int64_t i = 0; i < r.numel(); ++i)
        r.set_f64(i, k * in_[0].get_f64(i) + in_[1].get_f64(i));
      return r;
    };
    reg.add(std::move(def));
  });
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> table = [] {
    register_conformance_custom_ops();
    return build_table();
  }();
  return table;
}

} // namespace rlx::conformance
