// proto.cpp: ONNX protobuf <-> rlx tensor and dtype conversion.
#include "proto.hpp"

#include <cstring>

namespace rlx::onnx::detail {

using ir::DType;

std::optional<DType> to_dtype(int t) {
  switch (t) {
  case pb::TensorProto::FLOAT:
    return DType::f32;
  case pb::TensorProto::DOUBLE:
    return DType::f64;
  case pb::TensorProto::FLOAT16:
    return DType::f16;
  case pb::TensorProto::BFLOAT16:
    return DType::bf16;
  case pb::TensorProto::INT8:
    return DType::i8;
  case pb::TensorProto::INT32:
    return DType::i32;
  case pb::TensorProto::INT64:
    return DType::i64;
  case pb::TensorProto::UINT8:
    return DType::u8;
  case pb::TensorProto::BOOL:
    return DType::boolean;
  default:
    return std::nullopt;
  }
}

int to_onnx_type(DType t) {
  switch (t) {
  case DType::f32:
    return pb::TensorProto::FLOAT;
  case DType::f64:
    return pb::TensorProto::DOUBLE;
  case DType::f16:
    return pb::TensorProto::FLOAT16;
  case DType::bf16:
    return pb::TensorProto::BFLOAT16;
  case DType::i8:
    return pb::TensorProto::INT8;
  case DType::i32:
    return pb::TensorProto::INT32;
  case DType::i64:
    return pb::TensorProto::INT64;
  case DType::u8:
    return pb::TensorProto::UINT8;
  case DType::boolean:
    return pb::TensorProto::BOOL;
  }
  return pb::TensorProto::UNDEFINED;
}

std::string onnx_type_name(int t) {
  if (pb::TensorProto::DataType_IsValid(t))
    return pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(t));
  return "type " + std::to_string(t);
}

DType require_dtype(int t, const std::string& what) {
  if (auto d = to_dtype(t))
    return *d;
  throw Unsupported("dtype " + onnx_type_name(t) + " of " + what + " is not supported");
}

namespace {

std::string tensor_label(const pb::TensorProto& t) {
  return "tensor '" + t.name() + "'";
}

template <class Field, class Store>
void copy_field(const Field& f, ir::Tensor& v, const pb::TensorProto& t, Store store) {
  if (static_cast<std::int64_t>(f.size()) != v.numel())
    throw Invalid(tensor_label(t) + " holds " + std::to_string(f.size()) + " values for " +
                  std::to_string(v.numel()) + " elements");
  for (int i = 0; i < f.size(); ++i)
    store(i, f.Get(i));
}

} // namespace

ir::Tensor tensor_from_proto(const pb::TensorProto& t) {
  if (t.data_location() == pb::TensorProto::EXTERNAL)
    throw Unsupported(tensor_label(t) + " uses external data");
  if (t.has_segment())
    throw Unsupported(tensor_label(t) + " is segmented");
  DType dt = require_dtype(t.data_type(), tensor_label(t));
  std::vector<std::int64_t> dims;
  std::int64_t numel = 1;
  for (auto d : t.dims()) {
    if (d < 0)
      throw Invalid(tensor_label(t) + " has a negative dim " + std::to_string(d));
    if (d > 0 && numel > kMaxElements / d)
      throw Invalid(tensor_label(t) + " is too large (over 2^40 elements)");
    numel *= d;
    dims.push_back(d);
  }
  std::size_t esize = ir::dtype_size(dt);
  if (!t.raw_data().empty() || numel == 0) {
    const std::string& raw = t.raw_data();
    if (static_cast<std::int64_t>(raw.size()) != numel * static_cast<std::int64_t>(esize))
      throw Invalid(tensor_label(t) + " has " + std::to_string(raw.size()) + " raw bytes for " +
                    std::to_string(numel) + " elements of " + std::string(ir::dtype_name(dt)));
    ir::Tensor v(ir::Shape::of(dims, dt));
    if (!raw.empty())
      std::memcpy(v.raw(), raw.data(), raw.size());
    if (dt == DType::boolean)
      for (std::int64_t i = 0; i < numel; ++i)
        v.raw()[i] = std::byte{v.raw()[i] != std::byte{0}};
    return v;
  }
  ir::Tensor v(ir::Shape::of(dims, dt));
  switch (dt) {
  case DType::f32:
    copy_field(t.float_data(), v, t, [&](int i, float x) { v.data<float>()[i] = x; });
    break;
  case DType::f64:
    copy_field(t.double_data(), v, t, [&](int i, double x) { v.data<double>()[i] = x; });
    break;
  case DType::i64:
    copy_field(t.int64_data(), v, t, [&](int i, std::int64_t x) { v.data<std::int64_t>()[i] = x; });
    break;
  case DType::f16:
    copy_field(t.int32_data(), v, t, [&](int i, std::int32_t x) {
      v.data<ir::f16_t>()[i] = ir::f16_t{static_cast<std::uint16_t>(x)};
    });
    break;
  case DType::bf16:
    copy_field(t.int32_data(), v, t, [&](int i, std::int32_t x) {
      v.data<ir::bf16_t>()[i] = ir::bf16_t{static_cast<std::uint16_t>(x)};
    });
    break;
  default: // i8, i32, u8, bool live in int32_data
    copy_field(t.int32_data(), v, t, [&](int i, std::int32_t x) { v.set_i64(i, x); });
    break;
  }
  return v;
}

void tensor_to_proto(const ir::Tensor& v, pb::TensorProto& out) {
  out.clear_dims();
  for (auto d : v.shape().sizes())
    out.add_dims(d);
  out.set_data_type(to_onnx_type(v.dtype()));
  out.set_raw_data(std::string(reinterpret_cast<const char*>(v.raw()), v.nbytes()));
}

} // namespace rlx::onnx::detail
