// proto.hpp: ONNX protobuf <-> rlx tensor and dtype conversion (internal).
#pragma once

#include "rlx/ir/tensor.hpp"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace rlx::onnx::detail {

namespace pb = ::onnx;

/// An ONNX feature rlx does not support (an op, attribute value or dtype).
class Unsupported : public Error {
public:
  using Error::Error;
};

/// An ONNX model that breaks the ONNX spec (bad attribute, undefined value, wrong type, ...).
class Invalid : public Error {
public:
  using Error::Error;
};

/// The rlx dtype of ONNX TensorProto.DataType \p t, or nullopt when rlx has none.
std::optional<ir::DType> to_dtype(int t);
/// The ONNX TensorProto.DataType of \p t.
int to_onnx_type(ir::DType t);
/// The ONNX name of TensorProto.DataType \p t ("FLOAT", "UINT16", ...).
std::string onnx_type_name(int t);
/// The rlx dtype of ONNX type \p t; throws Unsupported naming \p what when rlx has none.
ir::DType require_dtype(int t, const std::string& what);

/// Largest element count a tensor or a declared dim product may have (guards against huge dims).
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

/// The value of \p t. Throws Unsupported (external data, strings, unsupported dtype) or Invalid
/// (data size does not match the dims, negative or huge dims).
ir::Tensor tensor_from_proto(const pb::TensorProto& t);
/// Writes \p v into \p out (dims, data_type and raw_data; the name is left alone).
void tensor_to_proto(const ir::Tensor& v, pb::TensorProto& out);

} // namespace rlx::onnx::detail
