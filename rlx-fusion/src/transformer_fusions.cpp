// transformer_fusions.cpp: the transformer fusion passes, each a PatternPass over its Pattern list
// (rows of the fusion pass table in fusion_passes.cpp).
#include "rlx/fusion/transformer_fusions.hpp"

#include "pattern_pass.hpp"

#include <memory>

namespace rlx::fusion {

std::unique_ptr<Pass> make_fuse_swiglu_matmul() {
  return std::make_unique<PatternPass>("fuse-swiglu-matmul", swiglu_matmul_patterns());
}
std::unique_ptr<Pass> make_fuse_shared_input_matmul() {
  return std::make_unique<PatternPass>("fuse-shared-input-matmul", shared_input_matmul_patterns());
}
std::unique_ptr<Pass> make_fuse_swiglu() {
  return std::make_unique<PatternPass>("fuse-swiglu", swiglu_patterns());
}
std::unique_ptr<Pass> make_fuse_attention() {
  return std::make_unique<PatternPass>("fuse-attention", attention_patterns());
}
std::unique_ptr<Pass> make_fuse_attention_block() {
  return std::make_unique<PatternPass>("fuse-attention-block", attention_block_patterns());
}

} // namespace rlx::fusion
