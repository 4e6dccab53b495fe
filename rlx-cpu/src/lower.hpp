// lower.hpp (private): how a node becomes a kernel. Every op kind has an ordered list of kernel
// implementations (oneDNN primitive → OpenBLAS → our TBB kernels → plain loops); the first that
// accepts a node wins, so the choice is made once, at compile time, and the same choice answers
// scratch_bytes() for the memory planner.
#pragma once

#include "dtypes.hpp"
#include "kernel.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlx::cpu {

namespace onednn {
class WeightPacker;
} // namespace onednn

/// What a kernel implementation may look at to decide whether it accepts a node and how much
/// scratch it needs: the graph, the node, and the backend's options.
struct NodeView {
  const ir::Graph& graph;
  ir::NodeId id;
  const CpuOptions& opts;
  int threads;

  const ir::Node& node() const { return graph.node(id); }
  /// The type of operand \p i.
  const ir::Shape& in(std::size_t i) const { return graph.shape(node().inputs.at(i)); }
  /// The node's own type.
  const ir::Shape& out() const { return node().shape; }
  /// Number of operands.
  std::size_t arity() const { return node().inputs.size(); }
};

/// A NodeView plus the resolved arena addresses of the node's operands, result and scratch.
struct LowerContext : NodeView {
  const ir::MemoryPlan& plan;
  std::byte* arena;
  /// Keeper of packed weight copies (the executable); null when none is available.
  onednn::WeightPacker* packer = nullptr;
  /// By node id: where a Param's bytes live in the weight region (null for other nodes). Null
  /// when Params live in their arena slots.
  const std::vector<std::byte*>* weights = nullptr;
  /// By node id: counts the reads of each Param's plain bytes made through addr() (may be null).
  std::vector<int>* plain_reads = nullptr;
  /// The address of the buffer of node \p id: its planned slot, or for a Param (or a view of one)
  /// its bytes in the weight region.
  std::byte* addr(ir::NodeId id) const;
  /// The address of operand \p i.
  std::byte* src(std::size_t i) const { return addr(node().inputs.at(i)); }
  /// The address of the node's own buffer.
  std::byte* dst() const { return addr(id); }
  /// The node's planned scratch buffer, which must hold at least \p bytes; throws Error when the
  /// plan has none (planned without the backend's scratch_bytes()).
  std::byte* scratch(std::int64_t bytes) const;
  /// "matmul %3 'q_proj'" for messages.
  std::string what() const;
};

/// One implementation of an op kind.
struct KernelImpl {
  const char* name;                           ///< "onednn", "openblas", "tbb", "loop"...
  bool (*accepts)(const NodeView& n);         ///< whether it can run this node
  std::int64_t (*scratch)(const NodeView& n); ///< scratch bytes it needs (may be null)
  std::unique_ptr<Kernel> (*make)(const LowerContext& c); ///< builds the kernel
};

/// The implementations of \p op in preference order (empty for ops without a kernel).
std::span<const KernelImpl> implementations(ir::OpKind op);

/// The implementation chosen for a node: the first of implementations() that accepts it, or null.
const KernelImpl* select_kernel(const NodeView& n);

/// Accepts every node (the last, always-correct implementation of a list).
inline bool accept_all(const NodeView&) {
  return true;
}
/// Accepts nodes whose output is f32.
inline bool accept_f32(const NodeView& n) {
  return n.out().dtype == ir::DType::f32;
}

/// Builds kernel template \p K for the storage type of the node's output dtype, which must be a
/// float type (the generic loops of conv, pool and their backward ops); an integer or bool dtype
/// is an Error naming the node.
template <template <class> class K> std::unique_ptr<Kernel> make_float_loop(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<K<T>>(c);
    else
      throw Error("rlx-cpu: " + c.what() + ": runs float types only");
  });
}

// ---- the implementation lists of every kernel file (kernels/*.cpp)
// -------------------------------

std::span<const KernelImpl> unary_impls();
std::span<const KernelImpl> binary_impls();
std::span<const KernelImpl> compare_impls();
std::span<const KernelImpl> where_impls();
std::span<const KernelImpl> cast_impls();
std::span<const KernelImpl> matmul_impls();
std::span<const KernelImpl> dense_solve_impls();
std::span<const KernelImpl> view_copy_impls();
std::span<const KernelImpl> transpose_impls();
std::span<const KernelImpl> narrow_impls();
std::span<const KernelImpl> concat_impls();
std::span<const KernelImpl> expand_impls();
std::span<const KernelImpl> gather_impls();
std::span<const KernelImpl> scatter_add_impls();
std::span<const KernelImpl> reduce_impls();
std::span<const KernelImpl> softmax_impls();
std::span<const KernelImpl> argmax_impls();
std::span<const KernelImpl> softmax_cross_entropy_impls();
std::span<const KernelImpl> layer_norm_impls();
std::span<const KernelImpl> rms_norm_impls();
std::span<const KernelImpl> attention_impls();
std::span<const KernelImpl> rope_impls();
std::span<const KernelImpl> conv2d_impls();
std::span<const KernelImpl> pool2d_impls();
std::span<const KernelImpl> quant_impls();
std::span<const KernelImpl> custom_impls();
std::span<const KernelImpl> if_impls();            ///< control_flow.cpp: the chosen branch, nested
std::span<const KernelImpl> while_impls();         ///< control_flow.cpp: cond / body, nested
std::span<const KernelImpl> split_impls();         // tuple.cpp
std::span<const KernelImpl> get_impls();           // tuple.cpp
std::span<const KernelImpl> swiglu_impls();        // swiglu.cpp
std::span<const KernelImpl> swiglu_matmul_impls(); // swiglu.cpp
std::span<const KernelImpl> topk_impls();          // topk.cpp
std::span<const KernelImpl> if_impls();            ///< control_flow.cpp: the chosen branch, nested
std::span<const KernelImpl> while_impls();         ///< control_flow.cpp: cond / body, nested
std::span<const KernelImpl> split_impls();         // tuple.cpp
std::span<const KernelImpl> get_impls();           // tuple.cpp
std::span<const KernelImpl> region_impls();        ///< region.cpp: the generated elementwise loop
std::span<const KernelImpl> residual_layer_norm_impls(); // residual_norm.cpp
std::span<const KernelImpl> residual_rms_norm_impls();   // residual_norm.cpp
std::span<const KernelImpl> layer_norm_grad_impls();     // norm_grad.cpp: backward ops
std::span<const KernelImpl> rms_norm_grad_impls();       // norm_grad.cpp
std::span<const KernelImpl> softmax_grad_impls();        // norm_grad.cpp
std::span<const KernelImpl> log_softmax_grad_impls();    // norm_grad.cpp
std::span<const KernelImpl> attention_grad_impls();      // attention_grad.cpp: backward ops 2
std::span<const KernelImpl> softmax_cross_entropy_grad_impls(); // loss_grad.cpp
std::span<const KernelImpl> attention_block_impls();            // attention_block.cpp
std::span<const KernelImpl> conv2d_grad_input_impls();  // conv_grad.cpp: conv / pool backward
std::span<const KernelImpl> conv2d_grad_weight_impls(); // conv_grad.cpp
std::span<const KernelImpl> pool2d_grad_impls();        // conv_grad.cpp
std::span<const KernelImpl> transformer_layer_impls();  // transformer_layer.cpp

} // namespace rlx::cpu
