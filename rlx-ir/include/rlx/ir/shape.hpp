// shape.hpp: tensor types: dims that are static or named symbols, plus the element type.
#pragma once

#include "rlx/ir/dtype.hpp"
#include "rlx/ir/size.hpp"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace rlx::ir {

/// One dimension: a static size, or a named symbol (`batch`, `seq`) bound to a size before memory
/// planning. Two dims with the same symbol name have the same size.
class Dim {
public:
  /// A static dimension of size \p size (must be >= 0; -1 is allowed only in Reshape/Expand
  /// targets, where it means "infer" / "keep").
  constexpr Dim(std::int64_t size = 0) : size_(size) {} // NOLINT(google-explicit-constructor)
  /// A symbolic dimension named \p symbol.
  static Dim sym(std::string symbol);

  bool is_static() const { return symbol_.empty(); }
  bool is_symbolic() const { return !symbol_.empty(); }
  /// \returns the static size; throws ShapeError when the dim is symbolic.
  std::int64_t size() const;
  const std::string& symbol() const { return symbol_; }
  std::string str() const;

  friend bool operator==(const Dim&, const Dim&) = default;

private:
  std::int64_t size_ = 0;
  std::string symbol_;
};

/// Symbol name → size, used to bind symbolic dims.
using Bindings = std::map<std::string, std::int64_t>;

/// Byte alignment of every part inside a tuple value's buffer (see Shape::part_offset).
inline constexpr std::int64_t kTuplePartAlignment = 64;

/// A tensor type: dims (static or symbolic) and the element type. Rank 0 is a scalar.
///
/// Or, for ops with several results, a tuple type: \p parts lists the typed parts (at least one,
/// none of them a tuple), \p dims is empty and \p dtype is the first part's element type. A
/// tuple-typed value is read only by `get` (the verifier's rule); numel() and sizes() throw on it,
/// bytes() gives the size of one buffer holding every part at part_offset(i).
struct Shape {
  std::vector<Dim> dims;
  DType dtype = DType::f32;
  std::vector<Shape> parts; ///< the part types of a tuple type; empty for a tensor type

  Shape() = default;
  Shape(std::vector<Dim> d, DType t) : dims(std::move(d)), dtype(t) {}
  Shape(std::initializer_list<Dim> d, DType t = DType::f32) : dims(d), dtype(t) {}

  /// A static shape from sizes.
  static Shape of(const std::vector<std::int64_t>& sizes, DType t = DType::f32);
  /// A rank-0 scalar of \p t.
  static Shape scalar(DType t = DType::f32) { return Shape(std::vector<Dim>{}, t); }
  /// The tuple type of \p parts; throws ShapeError when \p parts is empty or holds a tuple.
  static Shape tuple(std::vector<Shape> parts);

  /// True for a tuple type (an op with several results).
  bool is_tuple() const { return !parts.empty(); }
  /// Part \p i of a tuple type; throws ShapeError when this is no tuple or \p i is out of range.
  const Shape& part(std::int64_t i) const;
  /// Byte offset of part \p i in a tuple value's buffer: parts are laid out in order, each at a
  /// multiple of kTuplePartAlignment. Throws like part() and on symbolic dims.
  std::int64_t part_offset(std::int64_t i) const;

  std::size_t rank() const { return dims.size(); }
  const Dim& operator[](std::size_t i) const { return dims[i]; }
  bool is_static() const;
  /// \returns the static sizes; throws ShapeError when a dim is symbolic.
  std::vector<std::int64_t> sizes() const;
  /// \returns the number of elements; throws ShapeError when a dim is symbolic or the count does
  /// not fit in int64 (checked_product).
  std::int64_t numel() const;
  /// \returns numel() * dtype size; throws ShapeError when that does not fit in int64.
  std::int64_t bytes() const;
  /// \returns the same dims with element type \p t.
  Shape with_dtype(DType t) const { return Shape(dims, t); }
  /// \returns the shape with every bound symbol replaced by its size (unbound ones stay symbolic).
  Shape bind(const Bindings& b) const;
  /// Appends the symbols used by this shape to \p out (no duplicates).
  void collect_symbols(std::vector<std::string>& out) const;
  /// "[batch, 128, 768] f32".
  std::string str() const;

  friend bool operator==(const Shape&, const Shape&) = default;
};

/// Normalises a possibly negative \p axis against \p rank; throws ShapeError naming \p what when
/// out of range.
std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const char* what);

/// NumPy broadcasting of two dim lists: trailing-aligned, a static 1 stretches, equal dims match
/// (symbols match by name). Throws ShapeError naming both shapes when they are incompatible.
std::vector<Dim> broadcast_dims(const std::vector<Dim>& a, const std::vector<Dim>& b);

/// \returns true when \p from broadcasts to \p to without changing \p to.
bool broadcasts_to(const std::vector<Dim>& from, const std::vector<Dim>& to);

/// Row-major strides of static \p sizes, in elements; throws ShapeError when one overflows.
std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes);

} // namespace rlx::ir
