// tuple_type.hpp (private): the tuple-type helpers Shape's members call (tuple_type.cpp).
#pragma once

#include "rlx/ir/shape.hpp"

#include "rlx/ir/op.hpp"

#include <span>
#include <string>

namespace rlx::ir {

/// Bytes of one buffer holding every part of tuple type \p t at its part_offset.
std::int64_t tuple_bytes(const Shape& t);
/// "([2, 3] f32, [2, 1] f32)".
std::string tuple_str(const Shape& t);
/// Throws ShapeError when an operand of \p op other than Get is a tuple (only get reads tuples).
void check_tuple_operands(OpKind op, std::span<const Shape> inputs);

} // namespace rlx::ir
