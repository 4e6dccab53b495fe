// shape_rules_tuple.cpp: the shape rules of the tuple ops (Split makes a tuple, Get reads a part)
// and the rule every op obeys about tuples (check_tuple_operands).
#include "rlx/ir/error.hpp"
#include "rlx/ir/op.hpp"
#include "shape_rules.hpp"
#include "tuple_type.hpp"

namespace rlx::ir {

namespace rules {

Shape split(In in, const SplitAttrs& a) {
  const Shape& x = in[0];
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, x.rank(), "split"));
  if (a.sizes.empty())
    throw ShapeError("split: sizes is empty; give at least one piece");
  if (!x[ax].is_static())
    throw ShapeError("split: axis " + std::to_string(a.axis) + " of " + x.str() +
                     " is symbolic; bind it before splitting");
  std::int64_t total = 0;
  std::vector<Shape> parts;
  parts.reserve(a.sizes.size());
  for (std::size_t i = 0; i < a.sizes.size(); ++i) {
    if (a.sizes[i] < 1)
      throw ShapeError("split: piece " + std::to_string(i) + " has size " +
                       std::to_string(a.sizes[i]) + "; every piece needs at least 1 element");
    if (a.sizes[i] > x[ax].size() - total)
      throw ShapeError("split: the sizes exceed dim " + x[ax].str() + " of " + x.str());
    total += a.sizes[i];
    Shape p = x;
    p.dims[ax] = Dim(a.sizes[i]);
    parts.push_back(std::move(p));
  }
  if (total != x[ax].size())
    throw ShapeError("split: the sizes sum to " + std::to_string(total) + " but dim " +
                     std::to_string(ax) + " of " + x.str() + " is " + x[ax].str());
  return Shape::tuple(std::move(parts));
}

Shape get(In in, const GetAttrs& a) {
  if (!in[0].is_tuple())
    throw ShapeError("get: the operand has type " + in[0].str() + ", which is not a tuple");
  return in[0].part(a.index);
}

Shape topk(In in, const TopKAttrs& a) {
  const Shape& x = in[0];
  if (x.rank() == 0)
    throw ShapeError("topk: x is a scalar; it needs an axis to select along");
  auto ax = static_cast<std::size_t>(normalize_axis(a.axis, x.rank(), "topk"));
  if (!x[ax].is_static())
    throw ShapeError("topk: axis " + std::to_string(a.axis) + " of " + x.str() +
                     " is symbolic; bind it before topk");
  if (a.k < 0 || a.k > x[ax].size())
    throw ShapeError("topk: k = " + std::to_string(a.k) + " is outside [0, " + x[ax].str() +
                     "] (axis " + std::to_string(a.axis) + " of " + x.str() + ")");
  if (x.dtype == DType::boolean)
    throw ShapeError("topk: x is bool; it needs a numeric type");
  Shape values = x;
  values.dims[ax] = Dim(a.k);
  Shape indices = values;
  indices.dtype = DType::i64;
  return Shape::tuple({std::move(values), std::move(indices)});
}

} // namespace rules

void check_tuple_operands(OpKind op, std::span<const Shape> inputs) {
  if (op == OpKind::Get)
    return;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].is_tuple())
      throw ShapeError(std::string(op_name(op)) + ": operand " + std::to_string(i) +
                       " is the tuple " + inputs[i].str() + "; only get may read a tuple");
}

} // namespace rlx::ir
