// fusion_pass_list.hpp (private): the factory of every fusion pass, one per file named for it.
#pragma once

#include "rlx/fusion/pass.hpp"

#include <memory>

namespace rlx::fusion {

/// fuse-gelu-spelling (fuse_gelu_spelling.cpp): erf- and tanh-GELU spelled in primitives → Gelu /
/// GeluTanh.
std::unique_ptr<Pass> make_fuse_gelu_spelling();
/// fuse-matmul-bias-act (fuse_matmul_bias_act.cpp): MatMul (+ bias) (+ activation) →
/// MatMulBiasAct.
std::unique_ptr<Pass> make_fuse_matmul_bias_act();
/// fuse-layer-norm-spelling (fuse_layer_norm_spelling.cpp): LayerNorm spelled in primitives →
/// LayerNorm.
std::unique_ptr<Pass> make_fuse_layer_norm_spelling();
/// fuse-rms-norm-spelling (fuse_rms_norm_spelling.cpp): RMSNorm spelled in primitives → RmsNorm.
std::unique_ptr<Pass> make_fuse_rms_norm_spelling();
/// fuse-rope-spelling (fuse_rope_spelling.cpp): rotate-half RoPE with constant cos / sin tables →
/// Rope (and Rope of a head Transpose → Transpose of a bshd Rope).
std::unique_ptr<Pass> make_fuse_rope_spelling();
/// unfuse (unfuse.cpp): every fused op (kFused) back to primitives through its decomposition.
std::unique_ptr<Pass> make_unfuse();

} // namespace rlx::fusion
