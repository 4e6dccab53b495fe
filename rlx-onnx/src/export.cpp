// export.cpp: rlx MIR graph -> ONNX ModelProto (opset 17). Every primitive with an ONNX spelling
// maps onto it (or onto a short chain: Rsqrt -> Sqrt + Reciprocal, Silu -> x * Sigmoid(x), ...);
// ops without one are listed in one ExportError.
#include "rlx/onnx/export.hpp"
#include "proto.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <numbers>
#include <set>

namespace rlx::onnx {

namespace {

namespace pb = ::onnx;
using ir::CmpOp;
using ir::Dim;
using ir::NodeId;
using ir::OpKind;

class Exporter {
public:
  Exporter(const ir::Graph& g, const TensorMap& params, const ExportOptions& opts)
      : g_(g), params_(params), opts_(opts), names_(g.size()) {}

  std::string run() {
    pb::ModelProto m;
    m.set_ir_version(8);
    m.set_producer_name(opts_.producer);
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opts_.opset);
    gp_ = m.mutable_graph();
    gp_->set_name(g_.name());
    for (NodeId id : g_.ids()) {
      try {
        node(id);
      } catch (const Error& e) {
        problems_.push_back(ir::describe(g_, id) + ": " + e.what());
        names_[id.v] = "invalid." + std::to_string(id.v);
      }
    }
    int k = 0;
    std::set<std::string> used;
    for (NodeId o : g_.outputs()) {
      std::string name = g_.node(o).name;
      if (name.empty() || used.count(name) || taken_.count(name))
        name = "output" + std::to_string(k);
      used.insert(name);
      emit("Identity", {names_[o.v]}, {name});
      value_info(gp_->add_output(), name, g_.shape(o));
      ++k;
    }
    if (!problems_.empty()) {
      std::string msg = "cannot export graph '" + g_.name() + "' to ONNX: ";
      for (std::size_t i = 0; i < problems_.size(); ++i)
        msg += (i ? "; " : "") + problems_[i];
      throw ExportError(msg);
    }
    return m.SerializeAsString();
  }

private:
  void value_info(pb::ValueInfoProto* vi, const std::string& name, const ir::Shape& s) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(detail::to_onnx_type(s.dtype));
    auto* sh = tt->mutable_shape();
    for (const auto& d : s.dims) {
      auto* dim = sh->add_dim();
      if (d.is_symbolic())
        dim->set_dim_param(d.symbol());
      else
        dim->set_dim_value(d.size());
    }
  }

  std::string fresh() { return "rlx.t" + std::to_string(counter_++); }

  std::string initializer(const ir::Tensor& v, std::string name = {}) {
    if (name.empty())
      name = fresh();
    auto* t = gp_->add_initializer();
    detail::tensor_to_proto(v, *t);
    t->set_name(name);
    return name;
  }

  std::string ints(const std::vector<std::int64_t>& v) {
    return initializer(ir::Tensor::from<std::int64_t>({static_cast<std::int64_t>(v.size())}, v));
  }

  std::string scalar(double v, ir::DType t) {
    ir::Tensor s(ir::Shape::scalar(t));
    s.set_f64(0, v);
    return initializer(s);
  }

  pb::NodeProto* emit(const std::string& op, std::vector<std::string> ins,
                      std::vector<std::string> outs) {
    auto* n = gp_->add_node();
    n->set_op_type(op);
    for (auto& i : ins)
      n->add_input(i);
    for (auto& o : outs)
      n->add_output(o);
    return n;
  }

  /// Emits op on \p ins into a fresh value; \returns its name.
  std::string op(const std::string& op_type, std::vector<std::string> ins) {
    std::string out = fresh();
    emit(op_type, std::move(ins), {out});
    return out;
  }

  static void attr_i(pb::NodeProto* n, const std::string& name, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(pb::NodeProto* n, const std::string& name, double v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr_ints(pb::NodeProto* n, const std::string& name,
                        const std::vector<std::int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INTS);
    for (auto x : v)
      a->add_ints(x);
  }
  static void attr_s(pb::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::STRING);
    a->set_s(v);
  }

  /// The ONNX shape operand of a Reshape (\p expand false) or Expand to \p target from \p in.
  std::vector<std::int64_t> shape_spec(const std::vector<Dim>& in, const std::vector<Dim>& target,
                                       bool expand) {
    std::vector<std::int64_t> spec;
    int unknown = 0;
    for (std::size_t i = 0; i < target.size(); ++i) {
      const Dim& d = target[i];
      if (d.is_static() && d.size() >= 0) {
        spec.push_back(d.size());
      } else if (expand) {
        spec.push_back(1); // Expand broadcasts both ways: 1 keeps the input's dim
      } else if (i < in.size() && in[i] == d) {
        spec.push_back(0); // Reshape: 0 copies the input dim
      } else {
        spec.push_back(-1);
        ++unknown;
      }
    }
    if (unknown > 1)
      throw ExportError("a reshape to several moved symbolic dims has no ONNX spelling");
    return spec;
  }

  std::string name_of(NodeId id) const { return names_[id.v]; }

  void node(NodeId id) {
    const ir::Node& n = g_.node(id);
    std::vector<std::string> in;
    for (NodeId a : n.inputs)
      in.push_back(name_of(a));
    std::string out = "rlx.v" + std::to_string(id.v);
    names_[id.v] = out;
    auto dt = n.shape.dtype;
    auto unary = [&](const char* t) { emit(t, {in[0]}, {out}); };
    switch (n.op) {
    case OpKind::Input: {
      const auto& a = n.attr<ir::LeafAttrs>();
      names_[id.v] = a.name;
      taken_.insert(a.name);
      value_info(gp_->add_input(), a.name, n.shape);
      return;
    }
    case OpKind::Param: {
      const auto& a = n.attr<ir::LeafAttrs>();
      names_[id.v] = a.name;
      taken_.insert(a.name);
      if (opts_.params_as_inputs) {
        value_info(gp_->add_input(), a.name, n.shape);
        return;
      }
      auto it = params_.find(a.name);
      if (it == params_.end())
        throw ExportError("param '" + a.name + "' has no value (pass it in params)");
      initializer(it->second, a.name);
      return;
    }
    case OpKind::Constant:
      names_[id.v] = initializer(n.attr<ir::ConstantAttrs>().value);
      return;
    case OpKind::Neg:
      return unary("Neg");
    case OpKind::Abs:
      return unary("Abs");
    case OpKind::Exp:
      return unary("Exp");
    case OpKind::Log:
      return unary("Log");
    case OpKind::Sqrt:
      return unary("Sqrt");
    case OpKind::Reciprocal:
      return unary("Reciprocal");
    case OpKind::Tanh:
      return unary("Tanh");
    case OpKind::Sigmoid:
      return unary("Sigmoid");
    case OpKind::Relu:
      return unary("Relu");
    case OpKind::Sin:
      return unary("Sin");
    case OpKind::Sinh:
      return unary("Sinh");
    case OpKind::Cosh:
      return unary("Cosh");
    case OpKind::Asin:
      return unary("Asin");
    case OpKind::Acos:
      return unary("Acos");
    case OpKind::Atan:
      return unary("Atan");
    case OpKind::Asinh:
      return unary("Asinh");
    case OpKind::Acosh:
      return unary("Acosh");
    case OpKind::Atanh:
      return unary("Atanh");
    case OpKind::Cos:
      return unary("Cos");
    case OpKind::Erf:
      return unary("Erf");
    case OpKind::Rsqrt:
      emit("Reciprocal", {op("Sqrt", {in[0]})}, {out});
      return;
    case OpKind::Silu:
      emit("Mul", {in[0], op("Sigmoid", {in[0]})}, {out});
      return;
    case OpKind::Gelu: {
      // x * 0.5 * (1 + erf(x / sqrt(2))), the spelling PyTorch exports.
      std::string e = op("Erf", {op("Div", {in[0], scalar(std::numbers::sqrt2, dt)})});
      std::string h = op("Mul", {in[0], scalar(0.5, dt)});
      emit("Mul", {h, op("Add", {e, scalar(1.0, dt)})}, {out});
      return;
    }
    case OpKind::GeluTanh: {
      std::string x3 = op("Mul", {op("Mul", {in[0], in[0]}), in[0]});
      std::string inner = op("Add", {in[0], op("Mul", {x3, scalar(0.044715, dt)})});
      std::string t =
          op("Tanh", {op("Mul", {inner, scalar(std::sqrt(2.0 / std::numbers::pi), dt)})});
      std::string h = op("Mul", {in[0], scalar(0.5, dt)});
      emit("Mul", {h, op("Add", {t, scalar(1.0, dt)})}, {out});
      return;
    }
    case OpKind::Cast:
      attr_i(emit("Cast", {in[0]}, {out}), "to", detail::to_onnx_type(n.attr<ir::CastAttrs>().to));
      return;
    case OpKind::Add:
      emit("Add", in, {out});
      return;
    case OpKind::Sub:
      emit("Sub", in, {out});
      return;
    case OpKind::Mul:
      emit("Mul", in, {out});
      return;
    case OpKind::Div:
      emit("Div", in, {out});
      return;
    case OpKind::Pow:
      emit("Pow", in, {out});
      return;
    case OpKind::Maximum:
      emit("Max", in, {out});
      return;
    case OpKind::Minimum:
      emit("Min", in, {out});
      return;
    case OpKind::Where:
      emit("Where", in, {out});
      return;
    case OpKind::Compare: {
      switch (n.attr<ir::CompareAttrs>().op) {
      case CmpOp::eq:
        emit("Equal", in, {out});
        return;
      case CmpOp::ne:
        emit("Not", {op("Equal", in)}, {out});
        return;
      case CmpOp::lt:
        emit("Less", in, {out});
        return;
      case CmpOp::le:
        emit("LessOrEqual", in, {out});
        return;
      case CmpOp::gt:
        emit("Greater", in, {out});
        return;
      case CmpOp::ge:
        emit("GreaterOrEqual", in, {out});
        return;
      }
      return;
    }
    case OpKind::MatMul: {
      const auto& a = n.attr<ir::MatMulAttrs>();
      auto swap_last = [&](const std::string& v, std::size_t rank) {
        std::vector<std::int64_t> perm(rank);
        for (std::size_t i = 0; i < rank; ++i)
          perm[i] = static_cast<std::int64_t>(i);
        std::swap(perm[rank - 1], perm[rank - 2]);
        std::string t = fresh();
        attr_ints(emit("Transpose", {v}, {t}), "perm", perm);
        return t;
      };
      std::string x = a.transpose_a ? swap_last(in[0], g_.shape(n.inputs[0]).rank()) : in[0];
      std::string y = a.transpose_b ? swap_last(in[1], g_.shape(n.inputs[1]).rank()) : in[1];
      emit("MatMul", {x, y}, {out});
      return;
    }
    case OpKind::DotGeneral: {
      const auto& a = n.attr<ir::DotGeneralAttrs>();
      std::size_t ra = g_.shape(n.inputs[0]).rank(), rb = g_.shape(n.inputs[1]).rank();
      if (ra + rb > 52)
        throw ExportError("dot_general of too many dims for an Einsum equation");
      std::string la(ra, '?'), lb(rb, '?'), res;
      char next = 'a';
      auto letter = [&] {
        char ch = next;
        next = next == 'z' ? 'A' : static_cast<char>(next + 1);
        return ch;
      };
      for (std::size_t i = 0; i < a.lhs_batch.size(); ++i) {
        char ch = letter();
        la[static_cast<std::size_t>(a.lhs_batch[i])] = ch;
        lb[static_cast<std::size_t>(a.rhs_batch[i])] = ch;
        res += ch;
      }
      for (std::size_t i = 0; i < a.lhs_contracting.size(); ++i) {
        char ch = letter();
        la[static_cast<std::size_t>(a.lhs_contracting[i])] = ch;
        lb[static_cast<std::size_t>(a.rhs_contracting[i])] = ch;
      }
      for (auto& ch : la)
        if (ch == '?')
          res += (ch = letter());
      for (auto& ch : lb)
        if (ch == '?')
          res += (ch = letter());
      attr_s(emit("Einsum", in, {out}), "equation", la + "," + lb + "->" + res);
      return;
    }
    case OpKind::Reshape:
      emit("Reshape",
           {in[0], ints(shape_spec(g_.shape(n.inputs[0]).dims, n.attr<ir::TargetShapeAttrs>().shape,
                                   false))},
           {out});
      return;
    case OpKind::Expand:
      emit("Expand",
           {in[0], ints(shape_spec(g_.shape(n.inputs[0]).dims, n.attr<ir::TargetShapeAttrs>().shape,
                                   true))},
           {out});
      return;
    case OpKind::Transpose:
      attr_ints(emit("Transpose", in, {out}), "perm", n.attr<ir::TransposeAttrs>().perm);
      return;
    case OpKind::Narrow: {
      const auto& a = n.attr<ir::NarrowAttrs>();
      emit("Slice", {in[0], ints({a.start}), ints({a.start + a.length}), ints({a.axis})}, {out});
      return;
    }
    case OpKind::Concat:
      attr_i(emit("Concat", in, {out}), "axis", n.attr<ir::AxisAttrs>().axis);
      return;
    case OpKind::Gather:
      attr_i(emit("Gather", in, {out}), "axis", n.attr<ir::AxisAttrs>().axis);
      return;
    case OpKind::Softmax:
      attr_i(emit("Softmax", in, {out}), "axis", n.attr<ir::AxisAttrs>().axis);
      return;
    case OpKind::LogSoftmax:
      attr_i(emit("LogSoftmax", in, {out}), "axis", n.attr<ir::AxisAttrs>().axis);
      return;
    case OpKind::ArgMax: {
      const auto& a = n.attr<ir::ArgMaxAttrs>();
      auto* e = emit("ArgMax", in, {out});
      attr_i(e, "axis", a.axis);
      attr_i(e, "keepdims", a.keep_dims ? 1 : 0);
      return;
    }
    case OpKind::Reduce: {
      const auto& a = n.attr<ir::ReduceAttrs>();
      static constexpr const char* kNames[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                               "ReduceProd"};
      const char* t = kNames[static_cast<int>(a.op)];
      pb::NodeProto* e;
      if (a.op == ir::ReduceOp::sum) {
        e = a.axes.empty() ? emit(t, {in[0]}, {out}) : emit(t, {in[0], ints(a.axes)}, {out});
      } else {
        e = emit(t, {in[0]}, {out});
        if (!a.axes.empty())
          attr_ints(e, "axes", a.axes);
      }
      attr_i(e, "keepdims", a.keep_dims ? 1 : 0);
      return;
    }
    case OpKind::LayerNorm: {
      auto* e = emit("LayerNormalization", in, {out});
      attr_i(e, "axis", -1);
      attr_f(e, "epsilon", n.attr<ir::NormAttrs>().eps);
      return;
    }
    case OpKind::RmsNorm: {
      std::string ms = fresh();
      auto* r = emit("ReduceMean", {op("Mul", {in[0], in[0]})}, {ms});
      attr_ints(r, "axes", {-1});
      attr_i(r, "keepdims", 1);
      std::string inv = op(
          "Reciprocal", {op("Sqrt", {op("Add", {ms, scalar(n.attr<ir::NormAttrs>().eps, dt)})})});
      emit("Mul", {op("Mul", {in[0], inv}), in[1]}, {out});
      return;
    }
    case OpKind::Conv2d: {
      const auto& a = n.attr<ir::Conv2dAttrs>();
      auto* e = emit("Conv", in, {out});
      attr_ints(e, "strides", a.stride);
      attr_ints(e, "dilations", a.dilation);
      attr_ints(e, "pads", {a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
      attr_i(e, "group", a.groups);
      return;
    }
    case OpKind::Pool2d: {
      const auto& a = n.attr<ir::Pool2dAttrs>();
      auto* e = emit(a.kind == ir::PoolKind::max ? "MaxPool" : "AveragePool", in, {out});
      attr_ints(e, "kernel_shape", a.kernel);
      attr_ints(e, "strides", a.stride);
      attr_ints(e, "pads", {a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
      if (a.kind == ir::PoolKind::avg)
        attr_i(e, "count_include_pad", 0);
      return;
    }
    default:
      throw ExportError("op " + std::string(ir::op_name(n.op)) +
                        " has no ONNX spelling in rlx's "
                        "exporter");
    }
  }

  const ir::Graph& g_;
  const TensorMap& params_;
  const ExportOptions& opts_;
  std::vector<std::string> names_;
  std::set<std::string> taken_;
  std::vector<std::string> problems_;
  pb::GraphProto* gp_ = nullptr;
  int counter_ = 0;
};

} // namespace

std::string export_model(const ir::Graph& g, const TensorMap& params, const ExportOptions& opts) {
  if (opts.opset != 17)
    throw ExportError("rlx exports opset 17 (LayerNormalization; Reduce* axes as attributes), "
                      "asked for " +
                      std::to_string(opts.opset));
  return Exporter(g, params, opts).run();
}

void export_file(const ir::Graph& g, const std::filesystem::path& path, const TensorMap& params,
                 const ExportOptions& opts) {
  std::string bytes = export_model(g, params, opts);
  std::ofstream f(path, std::ios::binary);
  if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw ExportError("cannot write " + path.string());
}

} // namespace rlx::onnx
