// tuple_type.cpp: tuple types (ops with several results): construction, parts and their layout.
#include "tuple_type.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir {

namespace {
std::int64_t align_part(std::int64_t v) {
  return (v + kTuplePartAlignment - 1) / kTuplePartAlignment * kTuplePartAlignment;
}
} // namespace

Shape Shape::tuple(std::vector<Shape> parts) {
  if (parts.empty())
    throw ShapeError("a tuple type needs at least one part");
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (parts[i].is_tuple())
      throw ShapeError("tuple part " + std::to_string(i) + " is itself a tuple " + parts[i].str() +
                       " (tuples do not nest)");
  Shape t;
  t.dtype = parts.front().dtype;
  t.parts = std::move(parts);
  return t;
}

const Shape& Shape::part(std::int64_t i) const {
  if (!is_tuple())
    throw ShapeError("the type " + str() + " is not a tuple; it has no part " + std::to_string(i));
  if (i < 0 || i >= static_cast<std::int64_t>(parts.size()))
    throw ShapeError("part index " + std::to_string(i) + " is out of range for the " +
                     std::to_string(parts.size()) + "-part tuple " + str());
  return parts[static_cast<std::size_t>(i)];
}

std::int64_t Shape::part_offset(std::int64_t i) const {
  part(i);
  std::int64_t at = 0;
  for (std::int64_t k = 0; k < i; ++k)
    at = align_part(at + parts[static_cast<std::size_t>(k)].bytes());
  return at;
}

std::int64_t tuple_bytes(const Shape& t) {
  auto last = static_cast<std::int64_t>(t.parts.size()) - 1;
  return t.part_offset(last) + t.parts.back().bytes();
}

std::string tuple_str(const Shape& t) {
  std::string s = "(";
  for (std::size_t i = 0; i < t.parts.size(); ++i)
    s += (i ? ", " : "") + t.parts[i].str();
  return s + ")";
}

} // namespace rlx::ir
