// loss.cpp: the losses of `rlx grad` appended to a forward graph, and its gradient graph.
#include "rlx/runtime/loss.hpp"

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"

namespace rlx::runtime {

LossKind parse_loss(const std::string& name) {
  if (name == "sum")
    return LossKind::sum;
  if (name == "mse")
    return LossKind::mse;
  if (name == "xent")
    return LossKind::xent;
  throw Error("--loss must be sum, mse or xent, got '" + name + "'");
}

ir::Graph with_loss(const ir::Graph& forward, LossKind kind,
                    const std::optional<ir::Tensor>& given) {
  if (forward.outputs().empty())
    throw Error("the model has no output to take a loss of");
  ir::Graph g = forward;
  ir::Builder b(g);
  const ir::NodeId y = g.outputs()[0];
  const ir::Shape ty = g.shape(y);
  if (!ty.is_static())
    throw Error("the model's output " + ty.str() + " has symbolic dims: bind --batch / --seq");
  if (!ir::is_float(ty.dtype))
    throw Error("the model's output is " + std::string(ir::dtype_name(ty.dtype)) +
                ": a loss needs a float output");
  std::vector<std::int64_t> all(ty.rank());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<std::int64_t>(i);
  ir::NodeId loss;
  switch (kind) {
  case LossKind::sum:
    loss = b.sum(y, all);
    break;
  case LossKind::mse: {
    if (!given)
      throw Error("--loss mse needs --target t.npy (the output's shape " + ty.str() + ")");
    const ir::Tensor& target = *given;
    if (!ir::is_float(target.dtype()))
      throw Error("--target must be a float tensor, got " +
                  std::string(ir::dtype_name(target.dtype())));
    if (target.shape().sizes() != ty.sizes())
      throw Error("--target has shape " + target.shape().str() + ", the model's output is " +
                  ty.str());
    const ir::NodeId d = b.sub(y, b.constant(target.cast(ty.dtype), "target"));
    loss = b.mean(b.mul(d, d), all);
    break;
  }
  case LossKind::xent: {
    if (ty.rank() < 1 || ty[ty.rank() - 1].size() < 1)
      throw Error("--loss xent needs an output with a class axis, got " + ty.str());
    if (!given)
      throw Error("--loss xent needs --labels l.npy (integer, the output's shape " + ty.str() +
                  " without its class axis)");
    const ir::Tensor& target = *given;
    if (!ir::is_int(target.dtype()))
      throw Error("--labels must be an integer tensor (i64 or i32), got " +
                  std::string(ir::dtype_name(target.dtype())));
    std::vector<std::int64_t> rows_shape = ty.sizes();
    const std::int64_t classes = rows_shape.back();
    rows_shape.pop_back();
    if (target.shape().sizes() != rows_shape)
      throw Error("--labels has shape " + target.shape().str() + ", expected " +
                  ir::Shape::of(rows_shape, target.dtype()).str() +
                  " (the output's shape without its class axis)");
    for (std::int64_t i = 0; i < target.numel(); ++i)
      if (const std::int64_t v = target.get_i64(i); v < 0 || v >= classes)
        throw Error("--labels: label " + std::to_string(v) + " at element " + std::to_string(i) +
                    " is outside [0, " + std::to_string(classes) + ")");
    std::int64_t rows = 1;
    for (auto s : rows_shape)
      rows *= s;
    const ir::NodeId logits = b.reshape(y, {ir::Dim(rows), ir::Dim(classes)});
    const ir::NodeId labels = b.constant(target.cast(ir::DType::i64).reshaped({rows}), "labels");
    loss = b.mean(b.softmax_cross_entropy(logits, labels), {0});
    break;
  }
  }
  g.set_outputs({loss});
  ir::verify(g);
  return g;
}

ir::Graph gradient_graph(const ir::Graph& forward, LossKind kind,
                         const std::optional<ir::Tensor>& given) {
  const ir::Graph g = with_loss(forward, kind, given);
  const auto wrt = autodiff::float_params(g);
  if (wrt.empty())
    throw Error("the model has no float parameter to differentiate");
  autodiff::GradOptions opts;
  opts.on_missing = autodiff::MissingGradient::zeros;
  return autodiff::grad_with_loss(g, wrt, opts);
}

} // namespace rlx::runtime
