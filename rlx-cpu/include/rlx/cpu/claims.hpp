// claims.hpp: what the CPU backend claims, what it deliberately leaves to the compile pipeline,
// and which ops have kernels.
#pragma once

#include "rlx/ir/claims.hpp"
#include "rlx/ir/op.hpp"

#include <span>
#include <string_view>

namespace rlx::cpu {

/// An op kind the CPU backend does not claim on purpose, with the reason.
struct UnclaimedOp {
  ir::OpKind op;           ///< the op kind
  std::string_view reason; ///< why the CPU leaves it unclaimed (what handles it instead)
};

/// The op kinds and dtypes the CPU backend runs natively. With \p elementwise_regions (the
/// default), also ElementwiseRegion (f32 and bool): the generated region loop (kernels/region.cpp).
const ir::ClaimSet& cpu_claims(bool elementwise_regions = true);

/// Every op kind of the table the CPU backend deliberately leaves unclaimed, in table order, each
/// with its reason. Every other op kind is claimed.
std::span<const UnclaimedOp> deliberately_unclaimed();

/// \returns whether the kernel library has at least one implementation for \p op (what a claim
/// promises).
bool has_kernel(ir::OpKind op);

} // namespace rlx::cpu
