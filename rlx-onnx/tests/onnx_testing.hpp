// onnx_testing.hpp: a small ModelProto builder for the rlx-onnx tests.
#pragma once

#include "rlx/ir/tensor.hpp"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace rlx::onnx::testing {

/// A dim of a declared input / output: a size or a dim_param name.
using TestDim = std::variant<std::int64_t, std::string>;

/// Builds a ModelProto node by node.
class ModelBuilder {
public:
  explicit ModelBuilder(std::int64_t opset = 17) {
    m_.set_ir_version(8);
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }

  /// Declares graph input \p name of ONNX element type \p elem and dims \p dims.
  ModelBuilder& input(const std::string& name, const std::vector<TestDim>& dims,
                      int elem = ::onnx::TensorProto::FLOAT) {
    declare(m_.mutable_graph()->add_input(), name, dims, elem);
    return *this;
  }
  /// Declares graph output \p name.
  ModelBuilder& output(const std::string& name) {
    auto* vi = m_.mutable_graph()->add_output();
    vi->set_name(name);
    return *this;
  }
  /// Adds an initializer holding \p v.
  ModelBuilder& initializer(const std::string& name, const ir::Tensor& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    fill(*t, v);
    return *this;
  }
  /// Adds a node; returns it for attributes.
  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs, const std::string& name = {}) {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins)
      n->add_input(i);
    for (const auto& o : outs)
      n->add_output(o);
    return *n;
  }
  ::onnx::ModelProto& proto() { return m_; }
  std::string bytes() const { return m_.SerializeAsString(); }

  static void fill(::onnx::TensorProto& t, const ir::Tensor& v);
  static void declare(::onnx::ValueInfoProto* vi, const std::string& name,
                      const std::vector<TestDim>& dims, int elem);

private:
  ::onnx::ModelProto m_;
};

inline void ModelBuilder::fill(::onnx::TensorProto& t, const ir::Tensor& v) {
  for (auto d : v.shape().sizes())
    t.add_dims(d);
  int type = ::onnx::TensorProto::FLOAT;
  switch (v.dtype()) {
  case ir::DType::f32:
    type = ::onnx::TensorProto::FLOAT;
    break;
  case ir::DType::f64:
    type = ::onnx::TensorProto::DOUBLE;
    break;
  case ir::DType::i64:
    type = ::onnx::TensorProto::INT64;
    break;
  case ir::DType::i32:
    type = ::onnx::TensorProto::INT32;
    break;
  case ir::DType::boolean:
    type = ::onnx::TensorProto::BOOL;
    break;
  default:
    break;
  }
  t.set_data_type(type);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.raw()), v.nbytes()));
}

inline void ModelBuilder::declare(::onnx::ValueInfoProto* vi, const std::string& name,
                                  const std::vector<TestDim>& dims, int elem) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = sh->add_dim();
    if (std::holds_alternative<std::int64_t>(d))
      dim->set_dim_value(std::get<std::int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

/// Adds INT / INTS / FLOAT / STRING attributes.
inline void attr(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr(::onnx::NodeProto& n, const std::string& name,
                 const std::vector<std::int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v)
    a->add_ints(x);
}
inline void attr_f(::onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

} // namespace rlx::onnx::testing
