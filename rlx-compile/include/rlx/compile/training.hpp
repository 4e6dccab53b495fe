// training.hpp: one compiled training step: forward -> loss -> backward -> optimizer update, with
// the parameters and the optimizer state updated in place (ir::Graph::aliases).
//
// build_training_graph turns a model graph whose output loss_output is a scalar loss into the step
// graph:
//
//   inputs   the model's inputs, then kLearningRate ("train.lr", f32 []) and kStepCount
//            ("train.step", f32 [], the 1-based number of this step: AdamW's bias correction)
//   params   the model's params, then the optimizer state (optimizer_state_name(param, slot))
//   outputs  [loss, new value of every updated param, new value of every state tensor]
//   aliases  output 1 + i updates weights[i] in place (every param and state tensor)
//
// The learning rate and the step count are inputs, so a schedule never recompiles; the schedule
// itself is evaluated host-side (LrSchedule). The optimizers follow torch.optim's definitions.
#pragma once

#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace rlx::compile {

/// A training step could not be built (bad optimizer hyper-parameters, a loss that is not a float
/// scalar, nothing to train). The message says which.
class TrainingCompileError : public Error {
public:
  using Error::Error;
};

/// Stochastic gradient descent, as torch.optim.SGD (dampening 0): g += weight_decay * p;
/// buf = momentum * buf + g; g = nesterov ? g + momentum * buf : buf; p -= lr * g.
/// The momentum buffer starts at zero, which equals torch's first-step copy of g.
struct Sgd {
  double momentum = 0;
  bool nesterov = false; ///< needs momentum > 0
  double weight_decay = 0;
};

/// AdamW, as torch.optim.AdamW: p *= 1 - lr * weight_decay (decoupled); m = b1 m + (1 - b1) g;
/// v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
struct AdamW {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

/// The optimizer of a training step.
struct OptimizerSpec {
  std::variant<Sgd, AdamW> rule = Sgd{};
  /// Scale every gradient by min(1, clip_grad_norm / (||g||_2 + 1e-6)) over all gradients
  /// together (torch.nn.utils.clip_grad_norm_; the norm accumulates in f64 when a gradient is f64,
  /// else in f32); 0 = no clipping.
  double clip_grad_norm = 0;
};

/// Name of the learning-rate input of a step graph (f32 scalar).
inline constexpr const char* kLearningRate = "train.lr";
/// Name of the step-count input of a step graph (f32 scalar, 1 for the first step).
inline constexpr const char* kStepCount = "train.step";

/// The state tensors \p spec keeps per parameter, by slot name: SGD with momentum
/// {"momentum_buffer"}, AdamW {"exp_avg", "exp_avg_sq"} (torch's names), plain SGD none.
std::vector<std::string> optimizer_state_slots(const OptimizerSpec& spec);
/// The Param name of state \p slot of parameter \p param: "optim.<param>.<slot>".
std::string optimizer_state_name(const std::string& param, const std::string& slot);

/// Throws TrainingCompileError when a hyper-parameter is out of range (negative momentum or
/// weight decay, betas outside [0, 1), eps <= 0, Nesterov without momentum, negative clip norm).
void check_optimizer(const OptimizerSpec& spec);

/// Appends to \p b's graph the gradients scaled to a global L2 norm of at most \p max_norm
/// (torch's clip_grad_norm_ with its 1e-6 guard). \returns the clipped gradients, in order.
std::vector<ir::NodeId> clip_by_global_norm(ir::Builder& b, std::span<const ir::NodeId> grads,
                                            double max_norm);

/// Appends the update of one parameter \p p (Param named \p name) with gradient \p grad under
/// \p spec's rule (clipping is not applied here), creating its state Params. \p lr and \p step are
/// f32 scalars. \returns (weight name, new value) pairs: the parameter first, then its state in
/// optimizer_state_slots order.
std::vector<std::pair<std::string, ir::NodeId>>
append_update(ir::Builder& b, const OptimizerSpec& spec, const std::string& name, ir::NodeId p,
              ir::NodeId grad, ir::NodeId lr, ir::NodeId step);

/// A loss to append to a model (with_loss).
enum class Loss : std::uint8_t {
  /// mean over rows of softmax_cross_entropy(logits [N, C], Input "labels" [N] i64)
  softmax_cross_entropy,
  /// mean((y - Input "target")^2) over every element (target of y's type)
  mse,
};

/// \p model with its output \p output replaced by the scalar \p loss of it (the other outputs
/// dropped), reading the new Input "labels" or "target". Throws TrainingCompileError when the
/// output's type does not suit the loss (cross-entropy needs [N, C] float logits).
ir::Graph with_loss(const ir::Graph& model, Loss loss, std::size_t output = 0);

/// One persistent tensor of a training step: a trained parameter or an optimizer state tensor.
struct WeightSlot {
  std::string name;       ///< the Param name in the step graph (and in checkpoints)
  ir::Shape shape;        ///< its type
  std::string param;      ///< the model parameter it belongs to (itself for a parameter)
  bool state = false;     ///< an optimizer state tensor (starts at zero)
  std::size_t output = 0; ///< the step-graph output holding its new value (aliased to it)
};

/// Options of build_training_graph.
struct TrainingOptions {
  std::size_t loss_output = 0; ///< which output of the model graph is the scalar loss
  OptimizerSpec optimizer;
  /// The parameters to train by name; empty = every float Param of the model.
  std::vector<std::string> train;
};

/// A training step graph and where its persistent tensors are.
struct TrainingGraph {
  ir::Graph step;                  ///< see the file comment
  std::vector<WeightSlot> weights; ///< trained parameters (in order), then optimizer state
};

/// Builds the training step of \p model (grad_with_loss, then clipping and the updates, one
/// graph: the forward's values are computed once and read by the backward). Throws
/// TrainingCompileError or autodiff::AutodiffError (rlx/autodiff/grad.hpp) with a one-line
/// reason.
TrainingGraph build_training_graph(const ir::Graph& model, const TrainingOptions& opts = {});

/// A compiled training step.
struct TrainingCompileResult {
  TrainingGraph graph;   ///< the step graph before compilation
  CompileResult compile; ///< its LIR (one memory plan, updates in place) and reports
};

/// build_training_graph followed by \p pipeline.run: the whole step compiled and memory-planned
/// once. The model's symbolic dims must be bound by the pipeline's options.
TrainingCompileResult compile_training(const ir::Graph& model, const TrainingOptions& opts,
                                       const CompilePipeline& pipeline);

/// A learning-rate schedule, evaluated host-side per step (the step graph takes the rate as an
/// input, so changing it never recompiles).
struct LrSchedule {
  enum class Kind : std::uint8_t {
    constant,      ///< base_lr every step
    warmup_cosine, ///< linear warm-up from 0 over warmup_steps, then cosine decay to min_lr
  } kind = Kind::constant;
  double base_lr = 1e-3;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0; ///< warmup_cosine: the step at which min_lr is reached
  double min_lr = 0;

  /// The rate of 1-based step \p step (warm-up: base_lr * step / warmup_steps; cosine:
  /// min_lr + (base_lr - min_lr) (1 + cos(pi * progress)) / 2, progress clamped to [0, 1]).
  double at(std::int64_t step) const;
};

} // namespace rlx::compile
