// mlp.cpp: the MLP builder (Linear layers fc1, fc2, ... as in the peer anchor model).
#include "config_check.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/runtime/models.hpp"

namespace rlx::runtime {

ir::Graph build_mlp(const MlpConfig& c) {
  detail::require(c.dims.size() >= 2, "mlp", "dims needs at least an input and an output width");
  detail::require(c.dims.size() <= ModelLimits::mlp_layers, "mlp",
                  "dims has " + std::to_string(c.dims.size()) + " widths, more than " +
                      std::to_string(ModelLimits::mlp_layers));
  for (std::size_t i = 0; i < c.dims.size(); ++i)
    detail::require(c.dims[i] > 0 && c.dims[i] <= ModelLimits::mlp_width, "mlp",
                    "dims[" + std::to_string(i) + "] must be in [1, " +
                        std::to_string(ModelLimits::mlp_width) + "], got " +
                        std::to_string(c.dims[i]));
  ir::Graph g("mlp");
  ir::Builder b(g);
  ir::NodeId x = b.input("x", ir::Shape({c.batch, ir::Dim(c.dims.front())}, ir::DType::f32));
  const std::size_t n = c.dims.size() - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string fc = "fc" + std::to_string(i + 1);
    ir::NodeId w = b.param(fc + ".weight", ir::Shape::of({c.dims[i + 1], c.dims[i]}));
    ir::NodeId bias = b.param(fc + ".bias", ir::Shape::of({c.dims[i + 1]}));
    const bool last = i + 1 == n;
    x = b.op(ir::OpKind::Linear, {x, w, bias}, ir::LinearAttrs{last ? ir::Activation::none : c.act},
             last ? "y" : fc);
  }
  b.output(x);
  return g;
}

} // namespace rlx::runtime
