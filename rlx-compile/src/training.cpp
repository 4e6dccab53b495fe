// training.cpp: the optimizers as graph builders, build_training_graph, compile_training and the
// host-side learning-rate schedules.
#include "rlx/compile/training.hpp"

#include "rlx/autodiff/grad.hpp"

#include "rlx/ir/verify.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rlx::compile {

using ir::NodeId;

namespace {

/// \p x in dtype \p t (no node when it already is).
NodeId as_dtype(ir::Builder& b, NodeId x, ir::DType t) {
  return b.shape(x).dtype == t ? x : b.cast(x, t);
}

void require(bool ok, const std::string& what) {
  if (!ok)
    throw TrainingCompileError("optimizer: " + what);
}

} // namespace

std::vector<std::string> optimizer_state_slots(const OptimizerSpec& spec) {
  if (const auto* s = std::get_if<Sgd>(&spec.rule))
    return s->momentum != 0 ? std::vector<std::string>{"momentum_buffer"}
                            : std::vector<std::string>{};
  return {"exp_avg", "exp_avg_sq"};
}

std::string optimizer_state_name(const std::string& param, const std::string& slot) {
  return "optim." + param + "." + slot;
}

void check_optimizer(const OptimizerSpec& spec) {
  auto finite = [](double v) { return std::isfinite(v); };
  require(finite(spec.clip_grad_norm) && spec.clip_grad_norm >= 0,
          "clip_grad_norm must be >= 0 (0 = no clipping), got " +
              std::to_string(spec.clip_grad_norm));
  if (const auto* s = std::get_if<Sgd>(&spec.rule)) {
    require(finite(s->momentum) && s->momentum >= 0,
            "SGD momentum must be >= 0, got " + std::to_string(s->momentum));
    require(finite(s->weight_decay) && s->weight_decay >= 0,
            "SGD weight_decay must be >= 0, got " + std::to_string(s->weight_decay));
    require(!s->nesterov || s->momentum > 0, "SGD Nesterov momentum needs momentum > 0");
    return;
  }
  const auto& a = std::get<AdamW>(spec.rule);
  require(finite(a.beta1) && a.beta1 >= 0 && a.beta1 < 1,
          "AdamW beta1 must lie in [0, 1), got " + std::to_string(a.beta1));
  require(finite(a.beta2) && a.beta2 >= 0 && a.beta2 < 1,
          "AdamW beta2 must lie in [0, 1), got " + std::to_string(a.beta2));
  require(finite(a.eps) && a.eps > 0, "AdamW eps must be > 0, got " + std::to_string(a.eps));
  require(finite(a.weight_decay) && a.weight_decay >= 0,
          "AdamW weight_decay must be >= 0, got " + std::to_string(a.weight_decay));
}

std::vector<NodeId> clip_by_global_norm(ir::Builder& b, std::span<const NodeId> grads,
                                        double max_norm) {
  if (grads.empty())
    return {};
  // The norm accumulates in f64 when any gradient is f64, else in f32 (f16 / bf16 widen).
  ir::DType acc = ir::DType::f32;
  for (NodeId g : grads)
    if (b.shape(g).dtype == ir::DType::f64)
      acc = ir::DType::f64;
  NodeId total;
  for (NodeId g : grads) {
    const auto rank = static_cast<std::int64_t>(b.shape(g).rank());
    std::vector<std::int64_t> axes;
    for (std::int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
    NodeId wide = as_dtype(b, g, acc);
    NodeId sq = b.mul(wide, wide);
    NodeId part = rank == 0 ? sq : b.sum(sq, axes);
    total = total.valid() ? b.add(total, part) : part;
  }
  NodeId norm = b.sqrt(total);
  NodeId coef = b.minimum(b.scalar(1.0, acc),
                          b.div(b.scalar(max_norm, acc), b.add(norm, b.scalar(1e-6, acc))));
  std::vector<NodeId> out;
  for (NodeId g : grads)
    out.push_back(b.mul(g, as_dtype(b, coef, b.shape(g).dtype)));
  return out;
}

std::vector<std::pair<std::string, NodeId>> append_update(ir::Builder& b, const OptimizerSpec& spec,
                                                          const std::string& name, NodeId p,
                                                          NodeId grad, NodeId lr, NodeId step) {
  const ir::Shape type = b.shape(p); // a copy: adding nodes moves the node list
  const ir::DType t = type.dtype;
  auto c = [&](double v) { return b.scalar(v, t); };
  const NodeId lr_t = as_dtype(b, lr, t);
  std::vector<std::pair<std::string, NodeId>> out;
  if (const auto* s = std::get_if<Sgd>(&spec.rule)) {
    NodeId g = grad;
    if (s->weight_decay != 0)
      g = b.add(g, b.mul(c(s->weight_decay), p));
    NodeId buf_new;
    if (s->momentum != 0) {
      NodeId buf = b.param(optimizer_state_name(name, "momentum_buffer"), type);
      buf_new = b.add(b.mul(c(s->momentum), buf), g);
      g = s->nesterov ? b.add(g, b.mul(c(s->momentum), buf_new)) : buf_new;
    }
    out.emplace_back(name, b.sub(p, b.mul(lr_t, g)));
    if (buf_new.valid())
      out.emplace_back(optimizer_state_name(name, "momentum_buffer"), buf_new);
    return out;
  }
  const auto& a = std::get<AdamW>(spec.rule);
  const NodeId step_t = as_dtype(b, step, t);
  NodeId m = b.param(optimizer_state_name(name, "exp_avg"), type);
  NodeId v = b.param(optimizer_state_name(name, "exp_avg_sq"), type);
  NodeId m_new = b.add(b.mul(c(a.beta1), m), b.mul(c(1 - a.beta1), grad));
  NodeId v_new = b.add(b.mul(c(a.beta2), v), b.mul(c(1 - a.beta2), b.mul(grad, grad)));
  // 1 - beta^t as 1 - exp(t log beta) (beta = 0: log gives -inf, exp 0, the correction 1).
  auto correction = [&](double beta) {
    return b.sub(c(1), b.exp(b.mul(step_t, c(std::log(beta)))));
  };
  NodeId step_size = b.div(lr_t, correction(a.beta1));
  NodeId denom = b.add(b.div(b.sqrt(v_new), b.sqrt(correction(a.beta2))), c(a.eps));
  NodeId decayed = a.weight_decay != 0 ? b.mul(p, b.sub(c(1), b.mul(lr_t, c(a.weight_decay)))) : p;
  out.emplace_back(name, b.sub(decayed, b.mul(step_size, b.div(m_new, denom))));
  out.emplace_back(optimizer_state_name(name, "exp_avg"), m_new);
  out.emplace_back(optimizer_state_name(name, "exp_avg_sq"), v_new);
  return out;
}

ir::Graph with_loss(const ir::Graph& model, Loss loss, std::size_t output) {
  if (output >= model.outputs().size())
    throw TrainingCompileError("with_loss: output " + std::to_string(output) +
                               " is out of range (the model has " +
                               std::to_string(model.outputs().size()) + " outputs)");
  ir::Graph g = model;
  g.set_aliases({});
  ir::Builder b(g);
  const NodeId y = g.outputs()[output];
  const ir::Shape t = g.shape(y); // a copy: adding nodes moves the node list
  if (!ir::is_float(t.dtype))
    throw TrainingCompileError("with_loss: output " + std::to_string(output) + " is " + t.str() +
                               ", not a float tensor");
  NodeId l;
  if (loss == Loss::softmax_cross_entropy) {
    if (t.rank() != 2)
      throw TrainingCompileError("with_loss: cross-entropy needs logits [N, C], got " + t.str());
    NodeId labels = b.input("labels", ir::Shape({t[0]}, ir::DType::i64));
    l = b.mean(b.softmax_cross_entropy(y, labels), {0});
  } else {
    NodeId target = b.input("target", t);
    NodeId d = b.sub(y, target);
    std::vector<std::int64_t> axes;
    for (std::size_t a = 0; a < t.rank(); ++a)
      axes.push_back(static_cast<std::int64_t>(a));
    NodeId sq = b.mul(d, d);
    l = t.rank() == 0 ? sq : b.mean(sq, axes);
  }
  g.set_outputs({l});
  g.compact();
  return g;
}

TrainingGraph build_training_graph(const ir::Graph& model, const TrainingOptions& opts) {
  check_optimizer(opts.optimizer);
  if (opts.loss_output >= model.outputs().size())
    throw TrainingCompileError("training: loss_output " + std::to_string(opts.loss_output) +
                               " is out of range (the model has " +
                               std::to_string(model.outputs().size()) + " outputs)");
  std::vector<autodiff::Wrt> wrt;
  if (opts.train.empty()) {
    wrt = autodiff::float_params(model);
  } else {
    for (const std::string& n : opts.train) {
      NodeId p = model.find_leaf(n, true);
      if (!p.valid())
        throw TrainingCompileError("training: the model has no param named '" + n + "'");
      if (!ir::is_float(model.shape(p).dtype))
        throw TrainingCompileError("training: param '" + n + "' is " + model.shape(p).str() +
                                   ", not a float tensor, so it cannot be trained");
      wrt.push_back({n, true});
    }
  }
  if (wrt.empty())
    throw TrainingCompileError("training: the model has no float param to train");
  for (NodeId in : model.inputs()) {
    const std::string& n = model.node(in).attr<ir::LeafAttrs>().name;
    if (n == kLearningRate || n == kStepCount)
      throw TrainingCompileError("training: the model has an input named '" + n +
                                 "', a name the training step reserves");
  }

  autodiff::GradOptions go;
  go.loss_output = opts.loss_output;
  TrainingGraph r;
  r.step = autodiff::grad_with_loss(model, wrt, go);
  r.step.set_name(model.name() + ".train_step");
  ir::Graph& g = r.step;
  ir::Builder b(g);
  const NodeId lr = b.input(kLearningRate, ir::Shape::scalar(ir::DType::f32));
  const NodeId step = b.input(kStepCount, ir::Shape::scalar(ir::DType::f32));
  const NodeId loss = g.outputs()[0];
  std::vector<NodeId> grads(g.outputs().begin() + 1, g.outputs().end());
  if (opts.optimizer.clip_grad_norm > 0)
    grads = clip_by_global_norm(b, grads, opts.optimizer.clip_grad_norm);

  std::vector<std::pair<std::string, NodeId>> params, states;
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    const NodeId p = g.find_leaf(wrt[i].name, true);
    auto upd = append_update(b, opts.optimizer, wrt[i].name, p, grads[i], lr, step);
    params.push_back(upd[0]);
    for (std::size_t k = 1; k < upd.size(); ++k)
      states.push_back(upd[k]);
  }
  std::vector<NodeId> outs{loss};
  auto add = [&](const std::vector<std::pair<std::string, NodeId>>& list, bool state) {
    for (const auto& [name, value] : list) {
      const std::size_t index = outs.size();
      outs.push_back(value);
      const std::string owner =
          state ? name.substr(6, name.rfind('.') - 6) : name; // "optim.<param>.<slot>"
      r.weights.push_back({name, g.shape(value), owner, state, index});
    }
  };
  add(params, false);
  add(states, true);
  g.set_outputs(outs);
  for (const WeightSlot& w : r.weights)
    g.add_alias(w.output, w.name);
  ir::verify(g);
  return r;
}

TrainingCompileResult compile_training(const ir::Graph& model, const TrainingOptions& opts,
                                       const CompilePipeline& pipeline) {
  TrainingCompileResult r;
  r.graph = build_training_graph(model, opts);
  r.compile = pipeline.run(r.graph.step);
  return r;
}

double LrSchedule::at(std::int64_t step) const {
  if (kind == Kind::constant)
    return base_lr;
  if (warmup_steps > 0 && step <= warmup_steps)
    return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  const double span = static_cast<double>(std::max<std::int64_t>(total_steps - warmup_steps, 1));
  double progress = static_cast<double>(step - warmup_steps) / span;
  progress = std::clamp(progress, 0.0, 1.0);
  return min_lr + (base_lr - min_lr) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

} // namespace rlx::compile
