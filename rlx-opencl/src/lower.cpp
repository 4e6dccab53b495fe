// lower.cpp: every op family's lowering to launches of the program's kernels, and the switch over
// ops.def that picks the family.
#include "lower.hpp"

#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

namespace rlx::opencl {
namespace {

using ir::DType;
using K = ir::OpKind;

} // namespace

/// Strides (in elements) of a row-major operand of \p in read as the broadcast shape \p out:
/// trailing-aligned, 0 where the operand has size 1 (or lacks the dim).
Sizes broadcast_strides(const Sizes& in, const Sizes& out) {
  Sizes st(out.size(), 0);
  const Sizes c = ir::contiguous_strides(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i)
    st[lead + i] = in[i] == 1 ? 0 : c[i];
  return st;
}

/// The metadata of a strided walk over \p dims with one stride list per operand: size-1 dims
/// dropped, neighbouring dims merged when every operand walks them as one. Layout: rank, dims,
/// then each stride list.
std::vector<std::int64_t> strided_meta(Sizes dims, std::vector<Sizes> strides) {
  Sizes d;
  std::vector<Sizes> s(strides.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1)
      continue;
    bool merge = !d.empty();
    for (std::size_t k = 0; k < strides.size() && merge; ++k)
      merge = s[k].back() == strides[k][i] * dims[i];
    if (merge) {
      d.back() *= dims[i];
      for (std::size_t k = 0; k < strides.size(); ++k)
        s[k].back() = strides[k][i];
      continue;
    }
    d.push_back(dims[i]);
    for (std::size_t k = 0; k < strides.size(); ++k)
      s[k].push_back(strides[k][i]);
  }
  std::vector<std::int64_t> m{static_cast<std::int64_t>(d.size())};
  m.insert(m.end(), d.begin(), d.end());
  for (const Sizes& x : s)
    m.insert(m.end(), x.begin(), x.end());
  return m;
}

namespace {

/// The product of dims [from, to) of \p s (to clamped to the rank).
std::int64_t product(const Sizes& s, std::size_t from, std::size_t to) {
  to = std::min(to, s.size());
  return from >= to ? 1
                    : std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(from),
                                      s.begin() + static_cast<std::ptrdiff_t>(to), std::int64_t{1},
                                      std::multiplies<>());
}
std::int64_t product(const Sizes& s) {
  return product(s, 0, s.size());
}

/// The copy / where / gather kernel of elements of \p bytes bytes.
std::string sized(const char* family, std::size_t bytes) {
  switch (bytes) {
  case 1:
    return std::string(family) + "_uchar";
  case 2:
    return std::string(family) + "_ushort";
  case 4:
    return std::string(family) + "_uint";
  case 8:
    return std::string(family) + "_ulong";
  default:
    throw Error("rlx-opencl: no " + std::string(family) + " kernel for " + std::to_string(bytes) +
                "-byte elements");
  }
}

} // namespace

NormGradBlocks norm_grad_blocks(std::int64_t rows) {
  // Blocks of at least 64 rows, at most 64 blocks: enough items for a GPU at the models' widths
  // (D x blocks), few enough partials that the second level is short.
  NormGradBlocks b;
  b.blocks = std::clamp<std::int64_t>((rows + 63) / 64, 1, 64);
  b.chunk = std::max<std::int64_t>((rows + b.blocks - 1) / b.blocks, 1);
  return b;
}

std::int64_t norm_grad_scratch_bytes(const ir::Graph& g, ir::NodeId id) {
  const ir::Shape& x = g.shape(g.node(id).inputs[0]);
  const std::int64_t d = x.rank() == 0 ? 1 : x.sizes().back();
  if (d == 0)
    return 0;
  const std::int64_t rows = x.numel() / d;
  return (2 * rows + norm_grad_blocks(rows).blocks * 2 * d) *
         static_cast<std::int64_t>(sizeof(float));
}

namespace {
/// Rows (and keys) of attention_tiled_f32_k's tiles: ATTN_TQ (= ATTN_TK) of attention_tiled.cl.
constexpr std::int64_t kAttnTileRows = 16;
} // namespace

std::size_t attention_tile_bytes(std::int64_t D, std::int64_t Dv) {
  return static_cast<std::size_t>(kAttnTileRows * (D + 1) + kAttnTileRows * (D + Dv)) *
         sizeof(float);
}

bool attention_tiled(AttentionKernel k, std::int64_t Sq, std::size_t tile_bytes,
                     std::int64_t local_memory) {
  const bool fits = static_cast<std::int64_t>(tile_bytes) <= local_memory;
  switch (k) {
  case AttentionKernel::rows:
    return false;
  case AttentionKernel::tiled:
  case AttentionKernel::gpu: // pinned gpu where its local memory does not fit: pinned tiled
    return fits;
  case AttentionKernel::automatic:
    break;
  }
  // Measured on pocl (DESIGN.md, "Attention"; rlx_opencl_attention_bench): the tiles took 0.8-1.0x
  // the rows kernel's time at every anchor shape (s128-s512), so tiled wherever they fit. On a
  // GPU they read K / V from global memory once per 16 query rows instead of once per row (not
  // measured here). A group of 16 items needs 16 query rows to fill it: decode steps (and other
  // short query blocks) keep the rows kernel. The device type does not enter the rule yet (a GPU
  // measurement may make it).
  return fits && Sq >= kAttnTileRows;
}

namespace {
/// attention_gpu.cl's ATTNG_WG (work-group items, = ATTNG_TK keys a tile) and ATTNG_BQ (rows).
constexpr std::int64_t kAttnGpuItems = 64, kAttnGpuRows = 8;
} // namespace

std::size_t attention_gpu_bytes(std::int64_t D, std::int64_t Dv) {
  const std::int64_t floats = kAttnGpuRows * D + kAttnGpuItems * (D + 1) + kAttnGpuItems * Dv +
                              kAttnGpuRows * (kAttnGpuItems + 1) + kAttnGpuItems;
  return static_cast<std::size_t>(floats) * sizeof(float) +
         static_cast<std::size_t>(kAttnGpuRows) * sizeof(cl_int);
}

AttentionPath attention_path(AttentionKernel k, const std::string& device_type, std::int64_t Sq,
                             std::int64_t D, std::int64_t Dv, std::int64_t local_memory) {
  // On a GPU the rows and tiled kernels launch one item per query row (~1.5k items for BERT-base
  // b1 s128 on 132 compute units), each walking every key and feature serially: the NVIDIA H200
  // took 0.45 ms for that shape (DESIGN.md, "Measured on an NVIDIA H200"). The gpu kernel splits
  // each row's keys and features over a work-group, for every query count (decode steps too).
  const bool want_gpu =
      k == AttentionKernel::gpu || (k == AttentionKernel::automatic && device_type == "gpu");
  if (want_gpu && static_cast<std::int64_t>(attention_gpu_bytes(D, Dv)) <= local_memory)
    return AttentionPath::gpu;
  return attention_tiled(k, Sq, attention_tile_bytes(D, Dv), local_memory) ? AttentionPath::tiled
                                                                           : AttentionPath::rows;
}

int unary_code(K op) {
  switch (op) {
  case K::Neg:
    return 0;
  case K::Abs:
    return 1;
  case K::Exp:
    return 2;
  case K::Log:
    return 3;
  case K::Sqrt:
    return 4;
  case K::Rsqrt:
    return 5;
  case K::Reciprocal:
    return 6;
  case K::Tanh:
    return 7;
  case K::Sigmoid:
    return 8;
  case K::Relu:
    return 9;
  case K::Gelu:
    return 10;
  case K::GeluTanh:
    return 11;
  case K::Silu:
    return 12;
  case K::Sin:
    return 13;
  case K::Cos:
    return 14;
  case K::Erf:
    return 15;
  default:
    throw Error("rlx-opencl: not a unary op");
  }
}

int binary_code(K op) {
  switch (op) {
  case K::Add:
    return 0;
  case K::Sub:
    return 1;
  case K::Mul:
    return 2;
  case K::Div:
    return 3;
  case K::Pow:
    return 4;
  case K::Maximum:
    return 5;
  case K::Minimum:
    return 6;
  default:
    throw Error("rlx-opencl: not a binary op");
  }
}

namespace {

// ---- op families ------------------------------------------------------------------------------

void lower_unary(Lowerer& L) {
  const ir::Node& n = L.graph().node(L.node());
  L.launch("unary_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(n.shape.numel());
  L.arg<cl_int>(unary_code(n.op));
  L.range1(n.shape.numel());
}

void lower_binary(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes out = n.shape.sizes();
  const Sizes a = g.shape(n.inputs[0]).sizes(), b = g.shape(n.inputs[1]).sizes();
  const bool compare = n.op == K::Compare;
  L.launch(compare ? "compare_k" : "binary_f32_k");
  const DType dt = g.shape(n.inputs[0]).dtype;
  const std::int64_t unit = compare ? 1 : 4;
  L.tensor(n.inputs[0], unit);
  L.tensor(n.inputs[1], unit);
  if (compare)
    L.arg<cl_int>(static_cast<int>(dt));
  L.tensor(L.node(), unit);
  L.arg<cl_long>(n.shape.numel());
  L.arg<cl_int>(compare ? static_cast<int>(n.attr<ir::CompareAttrs>().op) : binary_code(n.op));
  L.meta(strided_meta(out, {broadcast_strides(a, out), broadcast_strides(b, out)}));
  L.range1(n.shape.numel());
}

void lower_where(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes out = n.shape.sizes();
  const std::int64_t es = static_cast<std::int64_t>(ir::dtype_size(n.shape.dtype));
  L.launch(sized("where", static_cast<std::size_t>(es)).c_str());
  L.tensor(n.inputs[0], 1);
  L.tensor(n.inputs[1], es);
  L.tensor(n.inputs[2], es);
  L.tensor(L.node(), es);
  L.arg<cl_long>(n.shape.numel());
  std::vector<Sizes> st;
  for (ir::NodeId in : n.inputs)
    st.push_back(broadcast_strides(g.shape(in).sizes(), out));
  L.meta(strided_meta(out, st));
  L.range1(n.shape.numel());
}

void lower_cast(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  L.launch("cast_k");
  L.tensor(n.inputs[0], 1);
  L.arg<cl_int>(static_cast<int>(g.shape(n.inputs[0]).dtype));
  L.tensor(L.node(), 1);
  L.arg<cl_int>(static_cast<int>(n.shape.dtype));
  L.arg<cl_long>(n.shape.numel());
  L.range1(n.shape.numel());
}

/// One strided copy of \p dims elements: from \p src (+ \p src_extra elements) through
/// \p src_strides into the node's buffer (+ \p dst_extra) through \p dst_strides.
void strided_copy(Lowerer& L, ir::NodeId src, std::int64_t src_extra, const Sizes& dims,
                  const Sizes& src_strides, std::int64_t dst_extra, const Sizes& dst_strides) {
  const std::int64_t es =
      static_cast<std::int64_t>(ir::dtype_size(L.graph().node(L.node()).shape.dtype));
  const std::int64_t n = product(dims);
  if (n == 0)
    return;
  L.launch(sized("copy", static_cast<std::size_t>(es)).c_str());
  L.tensor(src, es, src_extra);
  L.tensor(L.node(), es, dst_extra);
  L.arg<cl_long>(n);
  L.meta(strided_meta(dims, {src_strides, dst_strides}));
  L.range1(n);
}

void lower_movement(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes out = n.shape.sizes();
  const Sizes dst = ir::contiguous_strides(out);
  const Sizes in = g.shape(n.inputs[0]).sizes();
  const Sizes ins = ir::contiguous_strides(in);
  switch (n.op) {
  case K::Reshape: // not aliased: the same bytes
    strided_copy(L, n.inputs[0], 0, {n.shape.numel()}, {1}, 0, {1});
    return;
  case K::Transpose: {
    const auto& perm = n.attr<ir::TransposeAttrs>().perm;
    Sizes src(out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      src[i] = ins[static_cast<std::size_t>(perm[i])];
    strided_copy(L, n.inputs[0], 0, out, src, 0, dst);
    return;
  }
  case K::Expand:
    strided_copy(L, n.inputs[0], 0, out, broadcast_strides(in, out), 0, dst);
    return;
  case K::Narrow: {
    const auto& a = n.attr<ir::NarrowAttrs>();
    const auto axis = static_cast<std::size_t>(ir::normalize_axis(a.axis, in.size(), "narrow"));
    strided_copy(L, n.inputs[0], a.start * ins[axis], out, ins, 0, dst);
    return;
  }
  case K::Concat: {
    const auto axis = static_cast<std::size_t>(
        ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, out.size(), "concat"));
    std::int64_t at = 0;
    for (ir::NodeId src : n.inputs) {
      const Sizes s = g.shape(src).sizes();
      strided_copy(L, src, 0, s, ir::contiguous_strides(s), at * dst[axis], dst);
      at += s[axis];
    }
    return;
  }
  default:
    throw Error("rlx-opencl: not a movement op");
  }
}

void lower_gather(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes table = g.shape(n.inputs[0]).sizes();
  const auto axis = static_cast<std::size_t>(
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, table.size(), "gather"));
  const DType idt = g.shape(n.inputs[1]).dtype;
  if (!ir::is_int(idt) && idt != DType::boolean)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + " has " +
                std::string(ir::dtype_name(idt)) + " indices; expected an integer type");
  const std::int64_t es = static_cast<std::int64_t>(ir::dtype_size(n.shape.dtype));
  L.launch(sized("gather", static_cast<std::size_t>(es)).c_str());
  L.tensor(n.inputs[0], es);
  L.tensor(n.inputs[1], 1);
  L.arg<cl_int>(static_cast<int>(idt));
  L.tensor(L.node(), es);
  L.arg<cl_long>(product(table, 0, axis));
  L.arg<cl_long>(table[axis]);
  L.arg<cl_long>(g.shape(n.inputs[1]).numel());
  L.arg<cl_long>(product(table, axis + 1, table.size()));
  L.status_arg();
  L.range1(n.shape.numel());
}

/// ScatterAdd (training: the transpose of Gather): one item per output element, deterministic.
void lower_scatter_add(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes target = n.shape.sizes();
  const auto axis = static_cast<std::size_t>(
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, target.size(), "scatter_add"));
  const DType idt = g.shape(n.inputs[1]).dtype;
  if (!ir::is_int(idt) && idt != DType::boolean)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + " has " +
                std::string(ir::dtype_name(idt)) + " indices; expected an integer type");
  const DType dt = n.shape.dtype;
  if (dt != DType::f32 && dt != DType::i8 && dt != DType::i32 && dt != DType::i64 &&
      dt != DType::u8)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + ": scatter_add runs f32, i8, i32, " +
                "i64 and u8 only");
  L.launch("scatter_add_k");
  L.tensor(n.inputs[0], 1);
  L.tensor(n.inputs[1], 1);
  L.arg<cl_int>(static_cast<int>(idt));
  L.tensor(n.inputs[2], 1);
  L.tensor(L.node(), 1);
  L.arg<cl_int>(static_cast<int>(dt));
  L.arg<cl_long>(product(target, 0, axis));
  L.arg<cl_long>(target[axis]);
  L.arg<cl_long>(g.shape(n.inputs[1]).numel());
  L.arg<cl_long>(product(target, axis + 1, target.size()));
  L.status_arg();
  L.range1(n.shape.numel());
}

// The GEMM epilogue word (matmul.cl: EPI_*; the activation code is rlx::ir::Activation's order).
constexpr int kEpiBias = 0x100;
constexpr int kEpiGlu = 0x200;

/// One GEMM launch: the node's buffer = epilogue(op(a) · op(b)) with MatMul's transpose flags and
/// batch broadcasting; \p bias (invalid: none) is [N]; \p epi the epilogue word.
void gemm(Lowerer& L, ir::NodeId an, ir::NodeId bn, bool transpose_a, bool transpose_b,
          ir::NodeId bias, int epi) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes a = g.shape(an).sizes(), b = g.shape(bn).sizes();
  const Sizes out = n.shape.sizes();
  const std::size_t r = out.size();
  std::int64_t M = out[r - 2], N = out[r - 1];
  const std::int64_t Kd = transpose_a ? a[a.size() - 2] : a[a.size() - 1];
  // A(m, k) and B(k, n) through strides: a transpose flag swaps them, no copy.
  const std::int64_t a_rs = transpose_a ? 1 : Kd, a_cs = transpose_a ? M : 1;
  const std::int64_t b_rs = transpose_b ? 1 : N, b_cs = transpose_b ? Kd : 1;
  // Batch strides: trailing-aligned, 0 where an operand's batch dim is 1 or missing.
  const Sizes batch(out.begin(), out.end() - 2);
  auto batch_strides = [&](const Sizes& s) {
    Sizes bs(batch.size(), 0);
    const Sizes lead(s.begin(), s.end() - 2);
    const std::int64_t mat = s[s.size() - 2] * s[s.size() - 1];
    const Sizes c = ir::contiguous_strides(lead);
    const std::size_t off = batch.size() - lead.size();
    for (std::size_t i = 0; i < lead.size(); ++i)
      bs[off + i] = lead[i] == 1 ? 0 : c[i] * mat;
    return bs;
  };
  Sizes abs = batch_strides(a), bbs = batch_strides(b);
  Sizes dims = batch;
  // x · W with W shared by every batch: one [batch · M, K] product.
  const bool shared_b = std::all_of(bbs.begin(), bbs.end(), [](std::int64_t s) { return s == 0; });
  // a walks every batch dim (a dim of size 1 has stride 0 and is walked too), so the batch rows
  // are one contiguous [batch · M, K]: BERT's [1, S, E] · Wᵀ at batch 1 included.
  bool full_a = product(Sizes(a.begin(), a.end() - 2)) == product(batch);
  for (std::size_t i = 0; i < batch.size(); ++i)
    full_a = full_a && (abs[i] != 0 || batch[i] == 1);
  if (!batch.empty() && shared_b && !transpose_a && full_a) {
    M *= product(batch);
    dims.clear();
    abs.clear();
    bbs.clear();
  }
  const GemmPath path = gemm_path(L.gemm(), L.runtime().device.info.type, M, N, Kd,
                                  a_cs == 1 && b_rs == 1, dims.empty() && (epi & kEpiGlu) == 0);
  if (path == GemmPath::clblast) {
    // One SGEMM, then the bias + activation in place when there is an epilogue.
    clblast_gemm(L, an, bn, transpose_a, transpose_b, M, N, Kd);
    if (epi != 0 || bias.valid()) {
      L.launch("epilogue_f32_k");
      L.tensor(L.node(), 4);
      L.tensor(bias.valid() ? bias : an, 4);
      L.arg<cl_long>(M * N);
      L.arg<cl_long>(N);
      L.arg<cl_int>(epi | (bias.valid() ? kEpiBias : 0));
      L.range1(M * N);
    }
    return;
  }
  std::vector<std::int64_t> meta{static_cast<std::int64_t>(dims.size())};
  meta.insert(meta.end(), dims.begin(), dims.end());
  meta.insert(meta.end(), abs.begin(), abs.end());
  meta.insert(meta.end(), bbs.begin(), bbs.end());
  const bool tiled = path == GemmPath::tiled;
  Step& s = L.launch(tiled ? "matmul_f32_k" : "matmul_rows_f32_k");
  L.tensor(an, 4);
  L.tensor(bn, 4);
  L.tensor(L.node(), 4);
  for (std::int64_t v : {M, N, Kd, a_rs, a_cs, b_rs, b_cs})
    L.arg<cl_long>(v);
  L.meta(meta);
  L.tensor(bias.valid() ? bias : an, 4);
  L.arg<cl_int>(epi | (bias.valid() ? kEpiBias : 0));
  s.dims = 3;
  s.global[2] = static_cast<std::size_t>(product(dims));
  s.local[2] = 1;
  if (tiled) {
    s.global[0] = static_cast<std::size_t>((N + 63) / 64 * 16);
    s.global[1] = static_cast<std::size_t>((M + 63) / 64 * 16);
    s.local[0] = 16;
    s.local[1] = 16;
  } else {
    s.global[0] = static_cast<std::size_t>((N + 63) / 64 * 64);
    s.global[1] = static_cast<std::size_t>(M);
    s.local[0] = 64;
    s.local[1] = 1;
  }
}

void lower_matmul(Lowerer& L) {
  const ir::Node& n = L.graph().node(L.node());
  const auto& at = n.attr<ir::MatMulAttrs>();
  gemm(L, n.inputs[0], n.inputs[1], at.transpose_a, at.transpose_b, ir::NodeId{}, 0);
}

/// MatMulBiasAct: one GEMM whose epilogue adds the bias and applies the activation.
void lower_matmul_bias_act(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const auto& at = n.attr<ir::MatMulBiasActAttrs>();
  ir::NodeId bias{};
  if (n.inputs.size() > 2) {
    bias = n.inputs[2];
    const std::int64_t N = n.shape.sizes().back();
    if (g.shape(bias).numel() != N)
      throw Error("rlx-opencl: " + ir::describe(g, L.node()) + ": the bias must have " +
                  std::to_string(N) + " elements (one per column)");
  }
  gemm(L, n.inputs[0], n.inputs[1], at.transpose_a, at.transpose_b, bias, static_cast<int>(at.act));
}

/// SwiGluMatMul ([N, K] weights, or [K, N] with weights_kn): the gate product into the result, then
/// the up product whose epilogue reads it back: silu(gate) * up, element by element, by the item
/// that wrote it (no scratch buffer).
void lower_swiglu_matmul(Lowerer& L) {
  const ir::Node& n = L.graph().node(L.node());
  if (n.shape.rank() < 2)
    throw Error("rlx-opencl: " + ir::describe(L.graph(), L.node()) +
                ": swiglu_matmul needs x of rank 2 or more");
  const bool tb = !n.attr<ir::SwiGluMatMulAttrs>().weights_kn; // [N, K] weights: x w^T
  gemm(L, n.inputs[0], n.inputs[1], false, tb, ir::NodeId{}, 0);
  gemm(L, n.inputs[0], n.inputs[2], false, tb, ir::NodeId{}, kEpiGlu);
}

/// SwiGlu: silu(gate) * up over equal shapes.
void lower_swiglu(Lowerer& L) {
  const ir::Node& n = L.graph().node(L.node());
  L.launch("swiglu_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(n.inputs[1], 4);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(n.shape.numel());
  L.range1(n.shape.numel());
}

void lower_reduce(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const auto& a = n.attr<ir::ReduceAttrs>();
  const Sizes in = g.shape(n.inputs[0]).sizes();
  const Sizes st = ir::contiguous_strides(in);
  std::vector<bool> reduced(in.size(), a.axes.empty());
  for (std::int64_t ax : a.axes)
    reduced[static_cast<std::size_t>(ir::normalize_axis(ax, in.size(), "reduce"))] = true;
  Sizes kd, ks, rd, rs;
  for (std::size_t i = 0; i < in.size(); ++i) {
    (reduced[i] ? rd : kd).push_back(in[i]);
    (reduced[i] ? rs : ks).push_back(st[i]);
  }
  if (product(rd) == 0 && (a.op == ir::ReduceOp::max || a.op == ir::ReduceOp::min))
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + ": max / min over no elements");
  std::vector<std::int64_t> meta = strided_meta(kd, {ks});
  // An all-reduced or all-kept side still needs its rank word.
  const std::vector<std::int64_t> red = strided_meta(rd, {rs});
  meta.insert(meta.end(), red.begin(), red.end());
  L.launch("reduce_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(n.shape.numel());
  L.arg<cl_int>(static_cast<int>(a.op));
  L.meta(meta);
  L.range1(n.shape.numel());
}

void lower_softmax(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes in = n.shape.sizes();
  const auto axis = static_cast<std::size_t>(
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, in.size(), "softmax"));
  const std::int64_t outer = product(in, 0, axis), inner = product(in, axis + 1, in.size());
  L.launch("softmax_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(outer);
  L.arg<cl_long>(in[axis]);
  L.arg<cl_long>(inner);
  L.arg<cl_int>(n.op == K::LogSoftmax ? 1 : 0);
  L.range1(outer * inner);
}

void lower_norm(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes in = n.shape.sizes();
  const std::int64_t D = in.empty() ? 1 : in.back();
  const std::int64_t rows = D == 0 ? 0 : n.shape.numel() / D;
  const bool layer = n.op == K::LayerNorm;
  Step& s = L.launch(layer ? "layer_norm_f32_k" : "rms_norm_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(n.inputs[1], 4);
  if (layer) {
    const bool beta = n.inputs.size() > 2;
    L.tensor(n.inputs[beta ? 2 : 1], 4);
    L.arg<cl_int>(beta ? 1 : 0);
  }
  L.tensor(L.node(), 4);
  L.arg<cl_long>(D);
  L.arg<cl_float>(static_cast<float>(n.attr<ir::NormAttrs>().eps));
  s.global[0] = static_cast<std::size_t>(rows) * 64;
  s.local[0] = 64;
}

/// ResidualLayerNorm / ResidualRmsNorm: the sum into part 0, its norm into part 1 of the node's
/// tuple buffer, one work-group per row.
void lower_residual_norm(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes in = g.shape(n.inputs[0]).sizes();
  const std::int64_t D = in.empty() ? 1 : in.back();
  const std::int64_t rows = D == 0 ? 0 : g.shape(n.inputs[0]).numel() / D;
  if (rows == 0)
    return;
  const bool rms = n.op == K::ResidualRmsNorm;
  const bool beta = !rms && n.inputs.size() > 3;
  Step& s = L.launch("residual_norm_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(n.inputs[1], 4);
  L.tensor(n.inputs[2], 4);
  L.tensor(n.inputs[beta ? 3 : 2], 4);
  L.arg<cl_int>(beta ? 1 : 0);
  L.tensor(L.node(), 4, n.shape.part_offset(0) / 4);
  L.tensor(L.node(), 4, n.shape.part_offset(1) / 4);
  L.arg<cl_long>(D);
  L.arg<cl_float>(static_cast<float>(n.attr<ir::NormAttrs>().eps));
  L.arg<cl_int>(rms ? 1 : 0);
  s.global[0] = static_cast<std::size_t>(rows) * 64;
  s.local[0] = 64;
}

/// LayerNormGrad / RmsNormGrad: dx row by row (one work-group per row, each row's mean and
/// 1 / std into the node's scratch), then dgamma (and dbeta) in two levels: per (column, row
/// block) partial sums into the scratch, then per column their sum in block order.
void lower_norm_grad(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes in = g.shape(n.inputs[0]).sizes();
  const std::int64_t D = in.empty() ? 1 : in.back();
  const std::int64_t rows = D == 0 ? 0 : g.shape(n.inputs[0]).numel() / D;
  const bool ln = n.op == K::LayerNormGrad;
  const float eps = static_cast<float>(n.attr<ir::NormAttrs>().eps);
  const Loc stats = L.scratch(norm_grad_scratch_bytes(g, L.node()));
  if (rows > 0) {
    Step& s = L.launch("norm_grad_rows_f32_k");
    L.tensor(n.inputs[0], 4);
    L.tensor(n.inputs[1], 4);
    L.tensor(n.inputs[2], 4);
    L.tensor(L.node(), 4, n.shape.part_offset(0) / 4);
    L.arg<cl_mem>(stats.mem);
    L.arg<cl_long>(stats.offset / 4);
    L.arg<cl_long>(D);
    L.arg<cl_float>(eps);
    L.arg<cl_int>(ln ? 1 : 0);
    s.global[0] = static_cast<std::size_t>(rows) * 64;
    s.local[0] = 64;
  }
  if (D == 0)
    return;
  // The partial sums follow the rows' statistics in the scratch.
  const NormGradBlocks nb = norm_grad_blocks(rows);
  const std::int64_t parts = stats.offset / 4 + 2 * rows;
  Step& p = L.launch("norm_grad_partials_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(n.inputs[2], 4);
  L.arg<cl_mem>(stats.mem);
  L.arg<cl_long>(stats.offset / 4);
  L.arg<cl_mem>(stats.mem);
  L.arg<cl_long>(parts);
  L.arg<cl_long>(rows);
  L.arg<cl_long>(D);
  L.arg<cl_long>(nb.chunk);
  L.arg<cl_int>(ln ? 1 : 0);
  p.dims = 2;
  p.global[0] = static_cast<std::size_t>((D + 63) / 64 * 64);
  p.global[1] = static_cast<std::size_t>(nb.blocks);
  p.local[0] = 64;
  p.local[1] = 1;
  L.launch("norm_grad_params_f32_k");
  L.arg<cl_mem>(stats.mem);
  L.arg<cl_long>(parts);
  L.tensor(L.node(), 4, n.shape.part_offset(1) / 4);
  L.tensor(L.node(), 4, n.shape.part_offset(ln ? 2 : 1) / 4);
  L.arg<cl_long>(nb.blocks);
  L.arg<cl_long>(D);
  L.arg<cl_int>(ln ? 1 : 0);
  L.range1(D);
}

/// SoftmaxGrad / LogSoftmaxGrad along any axis, one item per lane (as softmax_f32_k).
void lower_softmax_grad(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const Sizes in = n.shape.sizes();
  const auto axis = static_cast<std::size_t>(
      ir::normalize_axis(n.attr<ir::AxisAttrs>().axis, in.size(), "softmax_grad"));
  const std::int64_t outer = product(in, 0, axis), inner = product(in, axis + 1, in.size());
  L.launch("softmax_grad_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(n.inputs[1], 4);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(outer);
  L.arg<cl_long>(in[axis]);
  L.arg<cl_long>(inner);
  L.arg<cl_int>(n.op == K::LogSoftmaxGrad ? 1 : 0);
  L.range1(outer * inner);
}

/// (batch, seq, head) strides of a 4-D operand [B, S, H, D] (bshd) or [B, H, S, D] (bhsd).
Sizes bsh_strides(const Sizes& s, ir::AttnLayout layout) {
  const Sizes c = ir::contiguous_strides(s);
  return layout == ir::AttnLayout::bshd ? Sizes{c[0], c[1], c[2]} : Sizes{c[0], c[2], c[1]};
}

void lower_rope(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const auto& a = n.attr<ir::RopeAttrs>();
  const Sizes x = n.shape.sizes();
  const bool bshd = a.layout == ir::AttnLayout::bshd;
  const std::int64_t B = x[0], S = bshd ? x[1] : x[2], H = bshd ? x[2] : x[1], D = x[3];
  const std::int64_t nrot = a.n_rot == 0 ? D : a.n_rot, half = nrot / 2;
  // cos then sin, [S, half] each, in double, rounded once.
  std::vector<float> tab(static_cast<std::size_t>(2 * S * half));
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t k = 0; k < half; ++k) {
      const double p = static_cast<double>(s + a.position_offset);
      const double angle =
          p * std::pow(a.theta, -2.0 * static_cast<double>(k) / static_cast<double>(nrot));
      tab[static_cast<std::size_t>(s * half + k)] = static_cast<float>(std::cos(angle));
      tab[static_cast<std::size_t>(S * half + s * half + k)] = static_cast<float>(std::sin(angle));
    }
  const Sizes st = bsh_strides(x, a.layout);
  L.launch("rope_f32_k");
  L.tensor(n.inputs[0], 4);
  L.tensor(L.node(), 4);
  L.table(tab);
  for (std::int64_t v : {B, S, H, D, st[0], st[1], st[2], nrot})
    L.arg<cl_long>(v);
  L.arg<cl_int>(a.style == ir::RopeStyle::interleaved ? 1 : 0);
  L.range1(n.shape.numel());
}

void lower_attention(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const auto& a = n.attr<ir::AttentionAttrs>();
  const bool bshd = a.layout == ir::AttnLayout::bshd;
  const Sizes q = g.shape(n.inputs[0]).sizes(), k = g.shape(n.inputs[1]).sizes(),
              v = g.shape(n.inputs[2]).sizes(), o = n.shape.sizes();
  const std::int64_t B = q[0], H = a.num_heads, KVH = a.num_kv_heads;
  const std::int64_t Sq = bshd ? q[1] : q[2], Sk = bshd ? k[1] : k[2], D = q[3], Dv = v[3];
  if (Dv > 256)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + " has value head dim " +
                std::to_string(Dv) + "; the attention kernel takes at most 256");
  std::vector<std::int64_t> meta{B, H, KVH, Sq, Sk, D, Dv};
  for (const Sizes* s : {&q, &k, &v, &o}) {
    const Sizes st = bsh_strides(*s, a.layout);
    meta.insert(meta.end(), st.begin(), st.end());
  }
  meta.push_back(static_cast<std::int64_t>(a.mask));
  meta.push_back(a.window);
  const bool has_mask = a.mask == ir::MaskKind::padding || a.mask == ir::MaskKind::bias;
  meta.push_back(has_mask ? static_cast<std::int64_t>(g.shape(n.inputs[3]).dtype) : 0);
  Sizes bias(4, 0);
  if (a.mask == ir::MaskKind::bias) {
    if (g.shape(n.inputs[3]).dtype != DType::f32)
      throw Error("rlx-opencl: " + ir::describe(g, L.node()) + " needs an f32 bias");
    bias = broadcast_strides(g.shape(n.inputs[3]).sizes(), {B, H, Sq, Sk});
  }
  meta.insert(meta.end(), bias.begin(), bias.end());
  if (D == 0 && !a.scale)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) +
                ": the default scale 1/sqrt(D) needs head_dim D > 0");
  const double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));
  const AttentionPath path = attention_path(L.attention(), L.runtime().device.info.type, Sq, D, Dv,
                                            L.runtime().device.info.local_memory);
  Step& s = L.launch(path == AttentionPath::gpu     ? "attention_gpu_f32_k"
                     : path == AttentionPath::tiled ? "attention_tiled_f32_k"
                                                    : "attention_f32_k");
  for (std::size_t i = 0; i < 3; ++i)
    L.tensor(n.inputs[i], 4);
  L.tensor(L.node(), 4);
  L.tensor(has_mask ? n.inputs[3] : n.inputs[0], 1);
  L.arg<cl_float>(static_cast<float>(scale));
  L.arg<cl_float>(a.softcap ? static_cast<float>(*a.softcap) : 0.0f);
  L.meta(meta);
  if (path == AttentionPath::rows) {
    L.range1(B * H * Sq, 32);
    return;
  }
  const bool gpu = path == AttentionPath::gpu;
  const std::int64_t rows = gpu ? kAttnGpuRows : kAttnTileRows;
  L.local_arg(gpu ? attention_gpu_bytes(D, Dv) : attention_tile_bytes(D, Dv));
  s.dims = 2;
  s.global[0] = static_cast<std::size_t>((Sq + rows - 1) / rows * (gpu ? kAttnGpuItems : rows));
  s.global[1] = static_cast<std::size_t>(B * H);
  s.local[0] = static_cast<std::size_t>(gpu ? kAttnGpuItems : rows);
  s.local[1] = 1;
}

void lower_dequantize(Lowerer& L) {
  const ir::Graph& g = L.graph();
  const ir::Node& n = g.node(L.node());
  const auto& a = n.attr<ir::QuantAttrs>();
  if (g.shape(n.inputs[0]).dtype != DType::i8 || n.shape.dtype != DType::f32)
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + ": dequantize runs i8 -> f32 only");
  const Sizes in = n.shape.sizes();
  std::int64_t inner = 1, channels = 1;
  if (a.axis) {
    const auto axis =
        static_cast<std::size_t>(ir::normalize_axis(*a.axis, in.size(), "dequantize"));
    channels = in[axis];
    inner = product(in, axis + 1, in.size());
  }
  if (a.scales.size() != static_cast<std::size_t>(channels) ||
      a.zero_points.size() != static_cast<std::size_t>(channels))
    throw Error("rlx-opencl: " + ir::describe(g, L.node()) + ": expected " +
                std::to_string(channels) + " scales and zero points");
  std::vector<std::int64_t> meta;
  for (std::size_t c = 0; c < a.scales.size(); ++c) {
    std::int64_t d = 0;
    std::int32_t f = 0;
    const float sf = static_cast<float>(a.scales[c]);
    std::memcpy(&d, &a.scales[c], sizeof d);
    std::memcpy(&f, &sf, sizeof f);
    meta.insert(meta.end(), {a.zero_points[c], d, f});
  }
  L.launch("dequantize_k");
  L.tensor(n.inputs[0], 1);
  L.tensor(L.node(), 4);
  L.arg<cl_long>(n.shape.numel());
  L.arg<cl_long>(inner);
  L.arg<cl_long>(channels);
  L.meta(meta);
  L.range1(n.shape.numel());
}

} // namespace

Step& Lowerer::launch(const char* name, cl_program program) {
  const ir::Node& n = g_.node(id_);
  cl_int err = CL_SUCCESS;
  Step s;
  s.kernel = Kernel(clCreateKernel(program ? program : program_, name, &err));
  check(err, std::string("clCreateKernel ") + name);
  s.label = "%" + std::to_string(id_.v) + " " + std::string(ir::op_name(n.op)) + " [" + name + "]";
  s.node = id_.v;
  s.what = name;
  steps_.push_back(std::move(s));
  next_arg_ = 0;
  return steps_.back();
}

Step& Lowerer::call(std::function<void(cl_command_queue)> fn, const std::string& what) {
  Step s;
  s.call = std::move(fn);
  s.label = "%" + std::to_string(id_.v) + " " + std::string(ir::op_name(g_.node(id_).op)) + " [" +
            what + "]";
  s.node = id_.v;
  s.what = what.substr(0, what.find(' ', what.find(' ') + 1)); // "clblast sgemm"
  std::replace(s.what.begin(), s.what.end(), ' ', '_');
  steps_.push_back(std::move(s));
  return steps_.back();
}

Loc Lowerer::loc(ir::NodeId n) const {
  return exe_.loc(g_, n);
}

void Lowerer::tensor(ir::NodeId n, std::int64_t unit, std::int64_t extra) {
  const Loc l = exe_.loc(g_, n);
  if (l.offset % unit != 0)
    throw Error("rlx-opencl: the buffer of " + ir::describe(g_, n) + " is not aligned to its " +
                std::to_string(unit) + "-byte elements");
  arg<cl_mem>(l.mem);
  arg<cl_long>(l.offset / unit + extra);
  steps_.back().label += " %" + std::to_string(n.v) + "@" + std::to_string(l.offset);
}

void Lowerer::meta(const std::vector<std::int64_t>& words) {
  deferred_.push_back({steps_.back().kernel.get(), next_arg_});
  cl_mem none = nullptr;
  arg<cl_mem>(none); // set by bind_aux
  arg<cl_long>(static_cast<cl_long>(aux_.size()));
  aux_.insert(aux_.end(), words.begin(), words.end());
}

void Lowerer::table(const std::vector<float>& values) {
  deferred_.push_back({steps_.back().kernel.get(), next_arg_});
  cl_mem none = nullptr;
  arg<cl_mem>(none);
  arg<cl_long>(static_cast<cl_long>(2 * aux_.size())); // in floats
  const std::size_t at = aux_.size();
  aux_.resize(at + (values.size() + 1) / 2, 0);
  if (!values.empty())
    std::memcpy(aux_.data() + at, values.data(), values.size() * sizeof(float));
}

Loc Lowerer::scratch(std::int64_t bytes) const {
  const auto [l, have] = exe_.scratch_loc(id_);
  if (bytes > 0 && have < bytes)
    throw Error("rlx-opencl: " + ir::describe(g_, id_) + " needs " + std::to_string(bytes) +
                " scratch bytes the memory plan does not provide; plan with the backend's "
                "scratch_bytes()");
  return l;
}

void Lowerer::status_arg() {
  arg<cl_mem>(status_);
  status_labels_.push_back(ir::describe(g_, id_));
  arg<cl_int>(static_cast<cl_int>(status_labels_.size()));
}

void Lowerer::local_arg(std::size_t bytes) {
  check(clSetKernelArg(steps_.back().kernel.get(), next_arg_++, bytes, nullptr),
        "clSetKernelArg (local memory) for " + steps_.back().label);
}

void Lowerer::range1(std::int64_t n, std::size_t wg) {
  Step& s = steps_.back();
  s.dims = 1;
  s.global[0] = (static_cast<std::size_t>(n) + wg - 1) / wg * wg;
  s.local[0] = wg;
}

void Lowerer::bind_aux(cl_mem aux) {
  for (const Deferred& d : deferred_)
    check(clSetKernelArg(d.kernel, d.index, sizeof(cl_mem), &aux), "clSetKernelArg (metadata)");
}

void Lowerer::lower(ir::NodeId id) {
  id_ = id;
  const K op = g_.node(id).op;
  // One case per row of ops.def and no default: a new op does not compile until it is lowered
  // here or listed as unclaimed (claims.cpp).
  switch (op) {
  case K::Neg:
  case K::Abs:
  case K::Exp:
  case K::Log:
  case K::Sqrt:
  case K::Rsqrt:
  case K::Reciprocal:
  case K::Tanh:
  case K::Sigmoid:
  case K::Relu:
  case K::Gelu:
  case K::GeluTanh:
  case K::Silu:
  case K::Sin:
  case K::Cos:
  case K::Erf:
    return lower_unary(*this);
  case K::Cast:
    return lower_cast(*this);
  case K::Add:
  case K::Sub:
  case K::Mul:
  case K::Div:
  case K::Pow:
  case K::Maximum:
  case K::Minimum:
  case K::Compare:
    return lower_binary(*this);
  case K::Where:
    return lower_where(*this);
  case K::MatMul:
    return lower_matmul(*this);
  case K::MatMulBiasAct:
    return lower_matmul_bias_act(*this);
  case K::SwiGlu:
    return lower_swiglu(*this);
  case K::SwiGluMatMul:
    return lower_swiglu_matmul(*this);
  case K::Reshape:
  case K::Transpose:
  case K::Narrow:
  case K::Concat:
  case K::Expand:
    return lower_movement(*this);
  case K::Gather:
    return lower_gather(*this);
  case K::ScatterAdd:
    return lower_scatter_add(*this);
  case K::Reduce:
    return lower_reduce(*this);
  case K::Softmax:
  case K::LogSoftmax:
    return lower_softmax(*this);
  case K::LayerNorm:
  case K::RmsNorm:
    return lower_norm(*this);
  case K::Attention:
    return lower_attention(*this);
  case K::Rope:
    return lower_rope(*this);
  case K::Dequantize:
    return lower_dequantize(*this);
  case K::ElementwiseRegion:
    return lower_region(*this);
  case K::ResidualLayerNorm:
  case K::ResidualRmsNorm:
    return lower_residual_norm(*this);
  case K::LayerNormGrad:
  case K::RmsNormGrad:
    return lower_norm_grad(*this);
  case K::SoftmaxGrad:
  case K::LogSoftmaxGrad:
    return lower_softmax_grad(*this);
  case K::Input:
  case K::Param:
  case K::Constant:
  case K::DotGeneral:
  case K::DenseSolve:
  case K::ArgMax:
  case K::SoftmaxCrossEntropy:
  case K::Conv2d:
  case K::Pool2d:
  case K::If:
  case K::While:
  case K::Custom:
  case K::CustomFn:
  case K::Split:
  case K::Get:
  case K::Quantize:
  case K::FakeQuantize:
  case K::Linear:
  case K::AttentionBlock:
  case K::SwiGluFfn:
  case K::BertLayer:
  case K::LlamaBlock:
  // ---- onnx3: topk, trig (unclaimed: CPU kernels only) ----
  case K::TopK:
  case K::Sinh:
  case K::Cosh:
  case K::Asin:
  case K::Acos:
  case K::Atan:
  case K::Asinh:
  case K::Acosh:
  case K::Atanh:
  case K::AttentionGrad:
  case K::SoftmaxCrossEntropyGrad:
  case K::RopeGrad:
  case K::Conv2dGradInput:
  case K::Conv2dGradWeight:
  case K::Pool2dGrad:
  case K::FusedAttentionBlock: // not claimed: legalisation runs its decomposition
  case K::FusedTransformerLayer:
    break;
  }
  throw Error("rlx-opencl: no kernel for " + ir::describe(g_, id));
}

} // namespace rlx::opencl
