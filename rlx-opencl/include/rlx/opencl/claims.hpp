// claims.hpp: what the OpenCL backend claims (op kinds x dtypes that a kernel of its program
// really runs), and what it leaves to the compile pipeline, with reasons.
#pragma once

#include "rlx/ir/claims.hpp"
#include "rlx/ir/op.hpp"

#include <span>
#include <string_view>

namespace rlx::opencl {

/// An op kind the OpenCL backend does not claim, with the reason.
struct UnclaimedOp {
  ir::OpKind op;           ///< the op kind
  std::string_view reason; ///< what handles it instead (or why it cannot run here yet)
};

/// The op kinds and dtypes the OpenCL backend runs natively.
const ir::ClaimSet& opencl_claims();

/// Every op kind of the table the OpenCL backend leaves unclaimed, in table order, with reasons.
/// Every other op kind is claimed.
std::span<const UnclaimedOp> opencl_unclaimed();

} // namespace rlx::opencl
