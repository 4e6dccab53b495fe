// tensor.hpp: a host tensor: a static shape and a shared, contiguous row-major byte buffer.
#pragma once

#include "rlx/ir/error.hpp"
#include "rlx/ir/shape.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlx::ir {

/// IEEE half stored as its 16 bits.
struct f16_t {
  std::uint16_t bits = 0;
  friend bool operator==(f16_t, f16_t) = default;
};
/// bfloat16 stored as its 16 bits.
struct bf16_t {
  std::uint16_t bits = 0;
  friend bool operator==(bf16_t, bf16_t) = default;
};

/// Round-to-nearest-even float → half; \returns the half.
f16_t float_to_f16(float v);
float f16_to_float(f16_t v);
/// Round-to-nearest-even float → bfloat16.
bf16_t float_to_bf16(float v);
float bf16_to_float(bf16_t v);

/// The C++ element type used to store \p DType values (bool is stored as one byte, 0 or 1).
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <> constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <> constexpr DType dtype_of<f16_t>() {
  return DType::f16;
}
template <> constexpr DType dtype_of<bf16_t>() {
  return DType::bf16;
}
template <> constexpr DType dtype_of<std::int8_t>() {
  return DType::i8;
}
template <> constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <> constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <> constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}
template <> constexpr DType dtype_of<bool>() {
  return DType::boolean;
}

/// A dense host tensor. Copies share the buffer (use clone() for a deep copy). The shape is always
/// static.
class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor of \p shape (which must be static).
  explicit Tensor(Shape shape);

  /// A tensor of static \p sizes holding \p values (size must match).
  template <class T>
  static Tensor from(const std::vector<std::int64_t>& sizes, const std::vector<T>& values) {
    Tensor t(Shape::of(sizes, dtype_of<T>()));
    if (static_cast<std::int64_t>(values.size()) != t.numel())
      throw ShapeError("Tensor::from: " + std::to_string(values.size()) + " values for shape " +
                       t.shape().str());
    auto dst = t.data<T>();
    for (std::size_t i = 0; i < values.size(); ++i)
      dst[i] = values[i];
    return t;
  }
  /// A rank-0 tensor holding \p v.
  template <class T> static Tensor scalar(T v) { return from<T>({}, {v}); }

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype; }
  std::int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return bytes_ ? bytes_->size() : 0; }
  bool empty() const { return !bytes_; }

  std::byte* raw() { return bytes_ ? bytes_->data() : nullptr; }
  const std::byte* raw() const { return bytes_ ? bytes_->data() : nullptr; }

  /// Typed view of the elements; throws when T does not match the dtype.
  template <class T> std::span<T> data() {
    check_type(dtype_of<T>());
    return {reinterpret_cast<T*>(raw()), static_cast<std::size_t>(numel_)};
  }
  template <class T> std::span<const T> data() const {
    check_type(dtype_of<T>());
    return {reinterpret_cast<const T*>(raw()), static_cast<std::size_t>(numel_)};
  }

  /// Element \p i converted to double (any dtype).
  double get_f64(std::int64_t i) const;
  /// Sets element \p i from a double, converting (and rounding/truncating) to the dtype.
  void set_f64(std::int64_t i, double v);
  /// Element \p i converted to int64 (any dtype; floats truncate toward zero).
  std::int64_t get_i64(std::int64_t i) const;
  void set_i64(std::int64_t i, std::int64_t v);

  /// A deep copy.
  Tensor clone() const;
  /// The same elements converted to \p t.
  Tensor cast(DType t) const;
  /// A view sharing the buffer with new static dims of the same element count.
  Tensor reshaped(const std::vector<std::int64_t>& sizes) const;

  /// Bytewise equality of shape and contents.
  bool identical(const Tensor& other) const;
  friend bool operator==(const Tensor& a, const Tensor& b) { return a.identical(b); }
  /// A short summary, e.g. "[2, 3] f32 {1, 2, 3, ...}".
  std::string str(std::size_t max_values = 8) const;

private:
  void check_type(DType t) const;
  Shape shape_;
  std::int64_t numel_ = 0;
  std::shared_ptr<std::vector<std::byte>> bytes_;
};

/// Largest |a - b| over all elements (both converted to double); shapes must match.
double max_abs_diff(const Tensor& a, const Tensor& b);

} // namespace rlx::ir
