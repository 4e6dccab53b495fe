// region.cpp: an ElementwiseRegion lowered to one generated OpenCL C kernel.
//
// The region's body becomes straight-line code, one statement per body op, inside a kernel with
// one work-item per element of the iteration space (the body outputs' dims, row-major). Each
// operand is read once per item: in place (index i) when it spans the iteration space, else
// through its broadcast strides (the metadata). Values are f32; bool values (bool operands,
// Compare, a Cast to bool) are carried as 0 / 1 floats and stored as bytes, as the CPU's region
// loop does. Scalar body constants are literals; larger ones are read from the metadata buffer.
// The kernel text depends only on the body and on which operands broadcast, so equal regions
// share one program (generated_program: built once per process and device, cached on disk).
#include "lower.hpp"

#include "rlx/ir/error.hpp"

#include <cstdio>
#include <cstring>
#include <span>
#include <sstream>

namespace rlx::opencl {
namespace {

using ir::DType;
using ir::NodeId;
using K = ir::OpKind;

/// Where the generated kernel reads a value from memory.
struct Source {
  bool constant = false;     ///< a body constant from the metadata table (else an operand)
  std::size_t index = 0;     ///< operand index (or constant's table index among sources)
  DType dtype = DType::f32;  ///< f32 or bool
  bool full = false;         ///< spans the iteration space: read at index i
  int stride_list = -1;      ///< its stride list in the metadata (when not full)
  Sizes sizes;               ///< its dims
  std::vector<float> values; ///< a constant's values (as f32)
};

bool region_dtype(DType t) {
  return t == DType::f32 || t == DType::boolean;
}

/// "as_float(0x3f800000u)": the exact f32 value \p v as an OpenCL C expression.
std::string float_literal(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[32];
  std::snprintf(buf, sizeof buf, "as_float(0x%08xu)", bits);
  return buf;
}

/// The statement computing body node \p id (value v<id>) from its operands' values.
std::string statement(const ir::Graph& body, NodeId id) {
  const ir::Node& n = body.node(id);
  auto v = [&](std::size_t k) { return "v" + std::to_string(n.inputs.at(k).v); };
  std::string e;
  switch (n.op) {
  case K::Compare:
    e = "(compare_op(" + std::to_string(static_cast<int>(n.attr<ir::CompareAttrs>().op)) + ", " +
        v(0) + " == " + v(1) + ", " + v(0) + " < " + v(1) + ", " + v(0) + " > " + v(1) +
        ") ? 1.0f : 0.0f)";
    break;
  case K::Where:
    e = "(" + v(0) + " != 0.0f ? " + v(1) + " : " + v(2) + ")";
    break;
  case K::Cast:
    // f32 / bool only: to bool tests != 0 (NaN is true); every other cast keeps the value.
    e = n.attr<ir::CastAttrs>().to == DType::boolean ? "(" + v(0) + " != 0.0f ? 1.0f : 0.0f)"
                                                     : v(0);
    break;
  case K::Expand: // every value spans the iteration space already
    e = v(0);
    break;
  case K::SwiGlu:
    e = "unary_f32(U_SILU, " + v(0) + ") * " + v(1);
    break;
  default:
    if (n.inputs.size() == 1)
      e = "unary_f32(" + std::to_string(unary_code(n.op)) + ", " + v(0) + ")";
    else if (n.inputs.size() == 2)
      e = "binary_f32(" + std::to_string(binary_code(n.op)) + ", " + v(0) + ", " + v(1) + ")";
    else
      throw Error("rlx-opencl: no region statement for " + ir::describe(body, id));
  }
  // A bool result of an arithmetic op is stored as != 0 (as a Cast would).
  if (n.shape.dtype == DType::boolean && n.op != K::Compare && n.op != K::Cast &&
      n.op != K::Where && n.op != K::Expand)
    e = "((" + e + ") != 0.0f ? 1.0f : 0.0f)";
  return "  const float v" + std::to_string(id.v) + " = " + e + ";\n";
}

} // namespace

void lower_region(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const ir::Graph& body = *n.attr<ir::RegionAttrs>().body;
  const std::span<const NodeId> outs = body.outputs();
  if (outs.empty())
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + " has a body without outputs");
  for (NodeId id : body.ids())
    if (!body.shape(id).is_static() || !region_dtype(body.shape(id).dtype))
      throw Error("rlx-opencl: " + ir::describe(g, L.node()) +
                  ": the region kernel computes f32 "
                  "and bool values only, not " +
                  ir::describe(body, id));
  const Sizes dims = body.shape(outs[0]).sizes();
  const std::int64_t numel = body.shape(outs[0]).numel();
  if (numel == 0)
    return; // nothing to compute (a tuple of empty parts; an empty tensor is skipped earlier)
  for (NodeId o : outs)
    if (body.shape(o).sizes() != dims)
      throw Error("rlx-opencl: " + ir::describe(g, L.node()) +
                  ": the region's outputs must share one iteration space");

  // Sources: operands (body Inputs, in order) and non-scalar constants; strides for the
  // broadcast ones.
  std::vector<Source> sources;
  std::vector<int> source_of(body.size(), -1);
  std::vector<Sizes> stride_lists;
  std::size_t next_input = 0;
  std::ostringstream code;
  for (NodeId id : body.ids()) {
    const ir::Node& b = body.node(id);
    if (b.op == K::Constant) {
      const ir::Tensor& t = b.attr<ir::ConstantAttrs>().value;
      if (t.numel() == 1) {
        code << "  const float v" << id.v << " = "
             << float_literal(static_cast<float>(t.get_f64(0))) << ";\n";
        continue;
      }
      Source s{true, sources.size(), DType::f32, false, -1, b.shape.sizes(), {}};
      for (std::int64_t i = 0; i < t.numel(); ++i)
        s.values.push_back(static_cast<float>(t.get_f64(i)));
      source_of[id.v] = static_cast<int>(sources.size());
      sources.push_back(std::move(s));
      continue;
    }
    if (b.op != K::Input)
      continue;
    if (next_input >= n.inputs.size())
      throw Error("rlx-opencl: " + ir::describe(g, L.node()) +
                  "'s body has more inputs than the "
                  "region has operands");
    Source s{false, next_input++, b.shape.dtype, false, -1, b.shape.sizes(), {}};
    s.full = b.shape.numel() == numel && b.shape.sizes().size() <= dims.size();
    source_of[id.v] = static_cast<int>(sources.size());
    sources.push_back(std::move(s));
  }
  for (Source& s : sources)
    if (!s.full) {
      s.stride_list = static_cast<int>(stride_lists.size());
      stride_lists.push_back(broadcast_strides(s.sizes, dims));
    }

  // The kernel: parameters (each source, each output part as a byte-addressed (buffer, offset)
  // pair), the loads, one statement per op, the stores.
  std::ostringstream k;
  k << "__kernel void region_k(";
  for (std::size_t i = 0; i < sources.size(); ++i)
    k << (sources[i].constant ? "__global const float* s" : "__global const uchar* s") << i
      << ", long so" << i << ", ";
  for (std::size_t i = 0; i < outs.size(); ++i)
    k << "__global uchar* d" << i << ", long do" << i << ", ";
  k << "long n, __global const long* meta, long mo) {\n"
    << "  const long i = get_global_id(0);\n  if (i >= n)\n    return;\n"
    << "  __global const long* m = meta + mo;\n";
  for (NodeId id : body.ids()) {
    const int si = source_of[id.v];
    if (si < 0)
      continue;
    const Source& s = sources[static_cast<std::size_t>(si)];
    const std::string idx =
        s.full ? "i" : "strided_offset(m, i, " + std::to_string(s.stride_list) + ")";
    const std::string ptr = "s" + std::to_string(si);
    const std::string off = "so" + std::to_string(si);
    if (s.constant)
      k << "  const float v" << id.v << " = " << ptr << "[" << off << " + " << idx << "];\n";
    else if (s.dtype == DType::boolean)
      k << "  const float v" << id.v << " = (" << ptr << " + " << off << ")[" << idx
        << "] ? 1.0f : 0.0f;\n";
    else
      k << "  const float v" << id.v << " = ((__global const float*)(" << ptr << " + " << off
        << "))[" << idx << "];\n";
  }
  k << code.str();
  for (NodeId id : body.ids()) {
    const ir::Node& b = body.node(id);
    if (b.op != K::Input && b.op != K::Constant)
      k << statement(body, id);
  }
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string v = "v" + std::to_string(outs[i].v);
    if (body.shape(outs[i]).dtype == DType::boolean)
      k << "  (d" << i << " + do" << i << ")[i] = " << v << " != 0.0f ? 1 : 0;\n";
    else
      k << "  ((__global float*)(d" << i << " + do" << i << "))[i] = " << v << ";\n";
  }
  k << "}\n";

  cl_program program = generated_program(L.runtime(), k.str());
  Step& st = L.launch("region_k", program);
  for (const Source& s : sources) {
    if (s.constant)
      L.table(s.values);
    else
      L.tensor(n.inputs[s.index], 1);
  }
  for (std::size_t i = 0; i < outs.size(); ++i)
    L.tensor(L.node(), 1,
             n.shape.is_tuple() ? n.shape.part_offset(static_cast<std::int64_t>(i)) : 0);
  L.arg<cl_long>(numel);
  L.meta(strided_meta(dims, stride_lists));
  L.range1(numel);
  st.label += " region of " + std::to_string(body.size()) + " body nodes";
}

} // namespace rlx::opencl
