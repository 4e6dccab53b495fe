// attrs.hpp: the attribute structs of the ops in ops.def.
//
// Every struct lists its fields once with RLX_ATTRS; the printer, parser, JSON, hashing and
// equality are generic over that list, so adding a field is one line here.
#pragma once

#include "rlx/ir/activation.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/ir/tensor.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace rlx::ir {

class Graph;

// ---- enums with printable names ---------------------------------------------------------------

#define RLX_ENUM_NAMES(Enum, ...)                                                                  \
  inline constexpr auto enum_names(Enum) {                                                         \
    return std::to_array<std::string_view>({__VA_ARGS__});                                         \
  }

/// Comparison predicate of Compare.
enum class CmpOp : std::uint8_t { eq, ne, lt, le, gt, ge };
RLX_ENUM_NAMES(CmpOp, "eq", "ne", "lt", "le", "gt", "ge")
/// Reduction of Reduce and Pool2d.
enum class ReduceOp : std::uint8_t { sum, mean, max, min, prod };
RLX_ENUM_NAMES(ReduceOp, "sum", "mean", "max", "min", "prod")
/// Axis order of 4-D attention and RoPE operands: [batch, seq, heads, head_dim] or
/// [batch, heads, seq, head_dim].
enum class AttnLayout : std::uint8_t { bshd, bhsd };
RLX_ENUM_NAMES(AttnLayout, "bshd", "bhsd")
/// Attention masking: none; causal (query i sees keys j <= i + Sk - Sq); sliding_window (causal and
/// j > i + Sk - Sq - window); padding (4th input [B, Sk], nonzero = keep); bias (4th input added to
/// the scaled scores, broadcastable to [B, H, Sq, Sk]).
enum class MaskKind : std::uint8_t { none, causal, sliding_window, padding, bias };
RLX_ENUM_NAMES(MaskKind, "none", "causal", "sliding_window", "padding", "bias")
/// RoPE pairing: half pairs element i with i + n_rot/2 (NeoX / HF LLaMA rotate_half); interleaved
/// pairs 2i with 2i+1 (GPT-J / original RoFormer).
enum class RopeStyle : std::uint8_t { half, interleaved };
RLX_ENUM_NAMES(RopeStyle, "half", "interleaved")
/// Pooling kind of Pool2d.
enum class PoolKind : std::uint8_t { max, avg };
RLX_ENUM_NAMES(PoolKind, "max", "avg")
/// Activation (activation.hpp).
RLX_ENUM_NAMES(Activation, "none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
/// The layer FusedTransformerLayer runs: BERT's post-norm encoder layer or LLaMA's pre-norm
/// decoder block (ops.def's row says what each computes).
enum class LayerKind : std::uint8_t { bert_post_norm, llama_pre_norm };
RLX_ENUM_NAMES(LayerKind, "bert_post_norm", "llama_pre_norm")

#undef RLX_ENUM_NAMES

/// A sub-graph attribute (If branches, While cond/body, CustomFn bodies). Compared structurally;
/// may be empty (an absent optional body).
struct SubGraph {
  std::shared_ptr<const Graph> graph;
  explicit operator bool() const { return graph != nullptr; }
  const Graph& operator*() const { return *graph; }
  const Graph* operator->() const { return graph.get(); }
  friend bool operator==(const SubGraph& a, const SubGraph& b);
};

// ---- field lists
// ---------------------------------------------------------------------------------

/// Visits one field of an attribute struct: `fn(name, field)`, or, when the field is itself an
/// attribute struct, each of its fields in turn (flattened: the text and JSON forms name the inner
/// fields directly, so their names must not clash with the outer struct's).
template <class F, class Fn> void visit_attr_field(const char* name, F& f, Fn& fn) {
  if constexpr (requires { std::remove_const_t<F>::visit_fields(f, fn); })
    std::remove_const_t<F>::visit_fields(f, fn);
  else
    fn(name, f);
}

#define RLX_FIELD_1(f) ::rlx::ir::visit_attr_field(#f, s.f, fn);
#define RLX_FIELD_2(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_1(__VA_ARGS__)
#define RLX_FIELD_3(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_2(__VA_ARGS__)
#define RLX_FIELD_4(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_3(__VA_ARGS__)
#define RLX_FIELD_5(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_4(__VA_ARGS__)
#define RLX_FIELD_6(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_5(__VA_ARGS__)
#define RLX_FIELD_7(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_6(__VA_ARGS__)
#define RLX_FIELD_8(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_7(__VA_ARGS__)
#define RLX_FIELD_9(f, ...)                                                                        \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_8(__VA_ARGS__)
#define RLX_FIELD_10(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_9(__VA_ARGS__)
#define RLX_FIELD_11(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_10(__VA_ARGS__)
#define RLX_FIELD_12(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_11(__VA_ARGS__)
#define RLX_FIELD_13(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_12(__VA_ARGS__)
#define RLX_FIELD_14(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_13(__VA_ARGS__)
#define RLX_FIELD_15(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_14(__VA_ARGS__)
#define RLX_FIELD_16(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_15(__VA_ARGS__)
#define RLX_FIELD_17(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_16(__VA_ARGS__)
#define RLX_FIELD_18(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_17(__VA_ARGS__)
#define RLX_FIELD_19(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_18(__VA_ARGS__)
#define RLX_FIELD_20(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_19(__VA_ARGS__)
#define RLX_FIELD_21(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_20(__VA_ARGS__)
#define RLX_FIELD_22(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_21(__VA_ARGS__)
#define RLX_FIELD_23(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_22(__VA_ARGS__)
#define RLX_FIELD_24(f, ...)                                                                       \
  ::rlx::ir::visit_attr_field(#f, s.f, fn);                                                        \
  RLX_FIELD_23(__VA_ARGS__)
#define RLX_FIELD_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, \
                       _18, _19, _20, _21, _22, _23, _24, N, ...)                                  \
  N
#define RLX_FIELDS_OF(...)                                                                         \
  RLX_FIELD_PICK(__VA_ARGS__, RLX_FIELD_24, RLX_FIELD_23, RLX_FIELD_22, RLX_FIELD_21,              \
                 RLX_FIELD_20, RLX_FIELD_19, RLX_FIELD_18, RLX_FIELD_17, RLX_FIELD_16,             \
                 RLX_FIELD_15, RLX_FIELD_14, RLX_FIELD_13, RLX_FIELD_12, RLX_FIELD_11,             \
                 RLX_FIELD_10, RLX_FIELD_9, RLX_FIELD_8, RLX_FIELD_7, RLX_FIELD_6, RLX_FIELD_5,    \
                 RLX_FIELD_4, RLX_FIELD_3, RLX_FIELD_2, RLX_FIELD_1, )                             \
  (__VA_ARGS__)

/// Declares the field list of an attribute struct: `visit_fields(self, fn)` calls
/// `fn("name", self.name)` per field in order, and equality compares every field.
#define RLX_ATTRS(Type, ...)                                                                       \
  template <class Self, class Fn> static void visit_fields(Self& s, Fn&& fn) {                     \
    RLX_FIELDS_OF(__VA_ARGS__)                                                                     \
  }                                                                                                \
  friend bool operator==(const Type&, const Type&) = default;

/// Ops without attributes.
struct NoAttrs {
  template <class Self, class Fn> static void visit_fields(Self&, Fn&&) {}
  friend bool operator==(const NoAttrs&, const NoAttrs&) = default;
};

/// Input and Param: the interface name (unique per graph and kind) and the declared type.
struct LeafAttrs {
  std::string name;
  Shape shape;
  RLX_ATTRS(LeafAttrs, name, shape)
};

/// Constant: the value, inline in the graph.
struct ConstantAttrs {
  Tensor value;
  RLX_ATTRS(ConstantAttrs, value)
};

/// Cast to \p to (float → int truncates toward zero; to bool tests != 0).
struct CastAttrs {
  DType to = DType::f32;
  RLX_ATTRS(CastAttrs, to)
};

struct CompareAttrs {
  CmpOp op = CmpOp::eq;
  RLX_ATTRS(CompareAttrs, op)
};

/// MatMul: [..., M, K] x [..., K, N] with NumPy batch broadcasting; a rank-1 operand is not
/// accepted (reshape it). transpose_a/transpose_b swap the last two axes of that operand first.
struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  RLX_ATTRS(MatMulAttrs, transpose_a, transpose_b)
};

/// DotGeneral (XLA dimension numbers): output dims are the batch dims (lhs order), then the lhs
/// free dims, then the rhs free dims.
struct DotGeneralAttrs {
  std::vector<std::int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  RLX_ATTRS(DotGeneralAttrs, lhs_batch, rhs_batch, lhs_contracting, rhs_contracting)
};

/// Reshape target / Expand target. Reshape: one -1 may be inferred (static inputs only).
/// Expand: -1 keeps the input dim.
struct TargetShapeAttrs {
  std::vector<Dim> shape;
  RLX_ATTRS(TargetShapeAttrs, shape)
};

struct TransposeAttrs {
  std::vector<std::int64_t> perm;
  RLX_ATTRS(TransposeAttrs, perm)
};

/// Narrow: elements [start, start + length) along \p axis.
struct NarrowAttrs {
  std::int64_t axis = 0;
  std::int64_t start = 0;
  std::int64_t length = 0;
  RLX_ATTRS(NarrowAttrs, axis, start, length)
};

/// SwiGluMatMul: the weights' layout. false: `[N, K]` (`[out, in]`, x w^T, the builders' layout);
/// true: `[K, N]` (x w, the layout ONNX exports store), so no transposed copy is needed.
struct SwiGluMatMulAttrs {
  bool weights_kn = false;
  RLX_ATTRS(SwiGluMatMulAttrs, weights_kn)
};

/// TopK: the \p k largest (or smallest) entries along \p axis, sorted (largest: descending,
/// smallest: ascending), ties by the lower index (ONNX's TopK).
struct TopKAttrs {
  std::int64_t axis = -1;
  std::int64_t k = 1;
  bool largest = true;
  RLX_ATTRS(TopKAttrs, axis, k, largest)
};

/// Split: the operand cut along \p axis into consecutive pieces of \p sizes (which must sum to
/// the axis' length); the result is a tuple with one part per piece.
struct SplitAttrs {
  std::int64_t axis = 0;
  std::vector<std::int64_t> sizes;
  RLX_ATTRS(SplitAttrs, axis, sizes)
};

/// Get: part \p index of a tuple value (XLA's get-tuple-element).
struct GetAttrs {
  std::int64_t index = 0;
  RLX_ATTRS(GetAttrs, index)
};

/// One axis (Concat, Gather, ScatterAdd, Softmax, LogSoftmax); negative counts from the end.
struct AxisAttrs {
  std::int64_t axis = -1;
  RLX_ATTRS(AxisAttrs, axis)
};

/// Reduce over \p axes (empty = all axes).
struct ReduceAttrs {
  ReduceOp op = ReduceOp::sum;
  std::vector<std::int64_t> axes;
  bool keep_dims = false;
  RLX_ATTRS(ReduceAttrs, op, axes, keep_dims)
};

/// ArgMax along \p axis (first maximum wins); i64 result.
struct ArgMaxAttrs {
  std::int64_t axis = -1;
  bool keep_dims = false;
  RLX_ATTRS(ArgMaxAttrs, axis, keep_dims)
};

/// LayerNorm / RmsNorm over the last axis with epsilon \p eps.
struct NormAttrs {
  double eps = 1e-5;
  RLX_ATTRS(NormAttrs, eps)
};

/// Attention (scaled dot-product). See the op's doc in ops.def for the exact definition.
struct AttentionAttrs {
  AttnLayout layout = AttnLayout::bshd;
  std::int64_t num_heads = 1;
  std::int64_t num_kv_heads = 1;
  MaskKind mask = MaskKind::none;
  std::int64_t window = 0;
  std::optional<double> scale;
  std::optional<double> softcap;
  RLX_ATTRS(AttentionAttrs, layout, num_heads, num_kv_heads, mask, window, scale, softcap)
};

/// RoPE over 4-D [.., S, .., D] in \p layout; rotates the first \p n_rot features (0 = all).
struct RopeAttrs {
  AttnLayout layout = AttnLayout::bshd;
  RopeStyle style = RopeStyle::half;
  std::int64_t n_rot = 0;
  std::int64_t position_offset = 0;
  double theta = 10000.0;
  RLX_ATTRS(RopeAttrs, layout, style, n_rot, position_offset, theta)
};

/// Conv2d, NCHW, weight [O, C/groups, KH, KW]; pairs are (h, w).
struct Conv2dAttrs {
  std::vector<std::int64_t> stride{1, 1};
  std::vector<std::int64_t> padding{0, 0};
  std::vector<std::int64_t> dilation{1, 1};
  std::int64_t groups = 1;
  RLX_ATTRS(Conv2dAttrs, stride, padding, dilation, groups)
};

/// Pool2d, NCHW; avg excludes padded cells from the count.
struct Pool2dAttrs {
  PoolKind kind = PoolKind::max;
  std::vector<std::int64_t> kernel{2, 2};
  std::vector<std::int64_t> stride{2, 2};
  std::vector<std::int64_t> padding{0, 0};
  RLX_ATTRS(Pool2dAttrs, kind, kernel, stride, padding)
};

/// conv2d_grad_input / conv2d_grad_weight: the forward's Conv2dAttrs plus the spatial size of
/// the gradient's result, which stride > 1 loses: the input's (H, W) for conv2d_grad_input, the
/// kernel's (KH, KW) for conv2d_grad_weight.
struct Conv2dGradAttrs {
  std::vector<std::int64_t> stride{1, 1};
  std::vector<std::int64_t> padding{0, 0};
  std::vector<std::int64_t> dilation{1, 1};
  std::int64_t groups = 1;
  std::vector<std::int64_t> size{1, 1};
  RLX_ATTRS(Conv2dGradAttrs, stride, padding, dilation, groups, size)
};

/// pool2d_grad: the forward's Pool2dAttrs plus the input's spatial size (H, W).
struct Pool2dGradAttrs {
  PoolKind kind = PoolKind::max;
  std::vector<std::int64_t> kernel{2, 2};
  std::vector<std::int64_t> stride{2, 2};
  std::vector<std::int64_t> padding{0, 0};
  std::vector<std::int64_t> input_size{1, 1};
  RLX_ATTRS(Pool2dGradAttrs, kind, kernel, stride, padding, input_size)
};

/// If: inputs are the predicate (bool scalar) then the captures, bound in order to the branches'
/// Inputs. Both branches have one output of the same type.
struct IfAttrs {
  SubGraph then_branch;
  SubGraph else_branch;
  RLX_ATTRS(IfAttrs, then_branch, else_branch)
};

/// While: inputs are the initial loop-carried values, bound in order to cond's and body's Inputs.
/// cond returns a bool scalar; body returns the next carries. The loop runs while cond holds, at
/// most \p max_iterations times: cond is tested before every body run, and reaching
/// \p max_iterations ends the loop without error. The node's value is the final carry number
/// \p output_index.
struct WhileAttrs {
  SubGraph cond;
  SubGraph body;
  std::int64_t max_iterations = 0;
  std::int64_t output_index = 0;
  RLX_ATTRS(WhileAttrs, cond, body, max_iterations, output_index)
};

/// Custom: a user op from the CustomOpRegistry, with free-form \p params text passed to it.
struct CustomAttrs {
  std::string name;
  std::string params;
  RLX_ATTRS(CustomAttrs, name, params)
};

/// CustomFn: \p body evaluated on the inputs; \p vjp (optional) maps (inputs..., d_output) to one
/// gradient per input.
struct CustomFnAttrs {
  SubGraph body;
  SubGraph vjp;
  RLX_ATTRS(CustomFnAttrs, body, vjp)
};

/// ElementwiseRegion (a fused op): \p body is a graph of elementwise / broadcast ops whose Inputs
/// bind in order to the node's operands and whose outputs are the node's results (one output: its
/// tensor; several: a tuple, part i = body output i). See the op's row in ops.def for the rules.
struct RegionAttrs {
  SubGraph body;
  RLX_ATTRS(RegionAttrs, body)
};

/// Int8 quantization: per-tensor (no axis, one scale and zero point) or per-channel along \p axis.
/// q = clamp(round_half_even(x / scale) + zero_point, -128, 127).
struct QuantAttrs {
  std::optional<std::int64_t> axis;
  std::vector<double> scales;
  std::vector<std::int64_t> zero_points;
  RLX_ATTRS(QuantAttrs, axis, scales, zero_points)
};

/// HIR Linear: y = act(x · Wᵀ + b), W in the [out, in] layout of PyTorch / HuggingFace.
struct LinearAttrs {
  Activation act = Activation::none;
  RLX_ATTRS(LinearAttrs, act)
};

/// HIR multi-head attention block (projections, optional RoPE, attention, output projection).
struct AttentionBlockAttrs {
  std::int64_t num_heads = 1;
  std::int64_t num_kv_heads = 1;
  MaskKind mask = MaskKind::none;
  std::int64_t window = 0;
  bool bias = false;
  bool rope = false;
  double rope_theta = 10000.0;
  RLX_ATTRS(AttentionBlockAttrs, num_heads, num_kv_heads, mask, window, bias, rope, rope_theta)
};

/// HIR BERT post-norm encoder layer.
struct BertLayerAttrs {
  std::int64_t num_heads = 1;
  double eps = 1e-12;
  Activation act = Activation::gelu;
  bool padding_mask = false;
  RLX_ATTRS(BertLayerAttrs, num_heads, eps, act, padding_mask)
};

/// HIR LLaMA pre-norm decoder block.
struct LlamaBlockAttrs {
  std::int64_t num_heads = 1;
  std::int64_t num_kv_heads = 1;
  double eps = 1e-6;
  double rope_theta = 10000.0;
  RLX_ATTRS(LlamaBlockAttrs, num_heads, num_kv_heads, eps, rope_theta)
};

// ---- fused ops (emitted by rlx-fusion) ----------------------------------------------------------

/// MatMulBiasAct: act(matmul(a, b) + bias), MatMul's transpose flags, then the epilogue.
struct MatMulBiasActAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  Activation act = Activation::none;
  RLX_ATTRS(MatMulBiasActAttrs, transpose_a, transpose_b, act)
};

/// The fused attention block (rlx-fusion's fuse-attention-block): the packed Q / K / V projection,
/// optional RoPE of q and k, attention (bshd heads read from the packed projection) and the output
/// projection. The attention fields mean what AttentionAttrs' do; the rope fields what RopeAttrs'
/// do; the flags say which optional operands are present and how each weight is laid out
/// (transpose: [N, K], the [out, in] form; otherwise [K, N], as ONNX exports store it).
struct FusedAttentionBlockAttrs {
  std::int64_t num_heads = 1;
  std::int64_t num_kv_heads = 1;
  MaskKind mask = MaskKind::none;
  std::int64_t window = 0;
  std::optional<double> scale;
  std::optional<double> softcap;
  bool qkv_transpose_b = true;
  bool qkv_bias = false;
  bool out_transpose_b = true;
  bool out_bias = false;
  bool rope = false;
  RopeStyle rope_style = RopeStyle::half;
  std::int64_t rope_n_rot = 0;
  std::int64_t rope_position_offset = 0;
  double rope_theta = 10000.0;
  RLX_ATTRS(FusedAttentionBlockAttrs, num_heads, num_kv_heads, mask, window, scale, softcap,
            qkv_transpose_b, qkv_bias, out_transpose_b, out_bias, rope, rope_style, rope_n_rot,
            rope_position_offset, rope_theta)
};

/// The fused transformer layer (rlx-fusion's fuse-transformer-layer): the attention block's
/// attributes, the two norms' eps (and whether both LayerNorms have a
/// beta), and the FFN: up (BERT, with act and an optional bias) or gate / up (LLaMA's SwiGLU,
/// no bias), down with an optional bias; each weight [N, K] with its transpose flag, else [K, N].
struct FusedTransformerLayerAttrs {
  LayerKind kind = LayerKind::bert_post_norm;
  FusedAttentionBlockAttrs block; ///< the attention block (its fields flattened in text / JSON)
  double eps = 1e-12;
  bool norm_beta = false;
  Activation act = Activation::none;
  bool up_transpose_b = true;
  bool up_bias = false;
  bool down_transpose_b = true;
  bool down_bias = false;
  RLX_ATTRS(FusedTransformerLayerAttrs, kind, block, eps, norm_beta, act, up_transpose_b, up_bias,
            down_transpose_b, down_bias)
};

#undef RLX_FIELD_1
#undef RLX_FIELD_9
#undef RLX_FIELD_10
#undef RLX_FIELD_11
#undef RLX_FIELD_12
#undef RLX_FIELD_13
#undef RLX_FIELD_14
#undef RLX_FIELD_15
#undef RLX_FIELD_16
#undef RLX_FIELD_17
#undef RLX_FIELD_18
#undef RLX_FIELD_19
#undef RLX_FIELD_20
#undef RLX_FIELD_21
#undef RLX_FIELD_22
#undef RLX_FIELD_23
#undef RLX_FIELD_24
#undef RLX_FIELD_2
#undef RLX_FIELD_3
#undef RLX_FIELD_4
#undef RLX_FIELD_5
#undef RLX_FIELD_6
#undef RLX_FIELD_7
#undef RLX_FIELD_8
#undef RLX_FIELD_PICK
#undef RLX_FIELDS_OF
#undef RLX_ATTRS

/// Every attribute struct; a node holds exactly the alternative its op's row in ops.def names.
using Attrs = std::variant<
    NoAttrs, LeafAttrs, ConstantAttrs, CastAttrs, CompareAttrs, MatMulAttrs, DotGeneralAttrs,
    TargetShapeAttrs, TransposeAttrs, NarrowAttrs, AxisAttrs, ReduceAttrs, ArgMaxAttrs, NormAttrs,
    AttentionAttrs, RopeAttrs, Conv2dAttrs, Pool2dAttrs, IfAttrs, WhileAttrs, CustomAttrs,
    CustomFnAttrs, QuantAttrs, LinearAttrs, AttentionBlockAttrs, BertLayerAttrs, LlamaBlockAttrs,
    SplitAttrs, GetAttrs, MatMulBiasActAttrs, RegionAttrs, SwiGluMatMulAttrs, TopKAttrs,
    FusedAttentionBlockAttrs, Conv2dGradAttrs, Pool2dGradAttrs, FusedTransformerLayerAttrs>;

} // namespace rlx::ir
