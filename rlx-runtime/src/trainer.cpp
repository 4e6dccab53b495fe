// trainer.cpp: Trainer and Session::compile_training.
#include "rlx/runtime/trainer.hpp"

#include "rlx/runtime/safetensors.hpp"
#include "rlx/runtime/session.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace rlx::runtime {

struct Trainer::State {
  compile::TrainingGraph graph;
  std::optional<Executable> exe;
  compile::LrSchedule schedule;
  std::vector<std::string> model_params; ///< every Param of the model, in graph order
  std::int64_t steps = 0;
};

Trainer::Trainer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

Trainer Session::compile_training(const ir::Graph& model, const TrainerOptions& topts,
                                  const CompileOptions& opts) const {
  auto st = std::make_unique<Trainer::State>();
  st->graph = compile::build_training_graph(model, topts.training);
  st->schedule = topts.schedule;
  for (ir::NodeId p : model.params())
    st->model_params.push_back(model.node(p).attr<ir::LeafAttrs>().name);
  st->exe.emplace(compile(st->graph.step, opts));
  for (const compile::WeightSlot& w : st->graph.weights)
    if (w.state && !st->exe->weights()->is_set(w.name))
      st->exe->set_param(w.name, ir::Tensor(w.shape)); // optimizer state starts at zero
  return Trainer(std::move(st));
}

double Trainer::step(const std::map<std::string, ir::Tensor>& batch) {
  return step(batch, state_->schedule.at(state_->steps + 1));
}

double Trainer::step(const std::map<std::string, ir::Tensor>& batch, double lr) {
  for (const char* reserved : {compile::kLearningRate, compile::kStepCount})
    if (batch.count(reserved))
      throw Error(std::string("Trainer::step: the batch holds '") + reserved +
                  "', an input the trainer sets itself");
  std::map<std::string, ir::Tensor> in = batch;
  in[compile::kLearningRate] = ir::Tensor::scalar(static_cast<float>(lr));
  in[compile::kStepCount] = ir::Tensor::scalar(static_cast<float>(state_->steps + 1));
  std::vector<ir::Tensor> out = state_->exe->run_selected(in, {0});
  ++state_->steps;
  return out[0].get_f64(0);
}

std::int64_t Trainer::steps() const {
  return state_->steps;
}

void Trainer::set_params(const TensorMap& values) {
  for (const auto& [name, value] : values) {
    bool model = std::find(state_->model_params.begin(), state_->model_params.end(), name) !=
                 state_->model_params.end();
    if (!model)
      throw Error("Trainer::set_params: the model has no param named '" + name + "'");
    state_->exe->set_param(name, value);
  }
}

void Trainer::load_params(const std::filesystem::path& path, const LoadOptions& opts) {
  LoadOptions o = opts;
  o.allow_missing = true; // the optimizer state is not in a model checkpoint
  state_->exe->load_params(path, o);
  std::vector<std::string> missing;
  for (const std::string& n : state_->model_params)
    if (!state_->exe->weights()->is_set(n))
      missing.push_back(n);
  if (!missing.empty() && !opts.allow_missing) {
    std::string list;
    for (const auto& n : missing)
      list += (list.empty() ? "" : ", ") + n;
    throw Error("Trainer::load_params: '" + path.string() + "' lacks params: " + list);
  }
}

TensorMap Trainer::params() const {
  TensorMap out;
  for (const std::string& n : state_->model_params)
    out.emplace(n, state_->exe->weights()->read(n));
  return out;
}

TensorMap Trainer::optimizer_state() const {
  TensorMap out;
  for (const compile::WeightSlot& w : state_->graph.weights)
    if (w.state)
      out.emplace(w.name, state_->exe->weights()->read(w.name));
  return out;
}

void Trainer::save(const std::filesystem::path& path) const {
  TensorMap all = params();
  for (auto& [name, value] : optimizer_state())
    all.emplace(name, std::move(value));
  all.emplace(kStepCountTensor, ir::Tensor::scalar<std::int64_t>(state_->steps));
  write_safetensors(path, all);
}

void Trainer::load(const std::filesystem::path& path) {
  SafetensorsFile f = read_safetensors(path);
  std::map<std::string, ir::Shape> expected;
  for (const auto& [name, type] : state_->exe->params())
    expected.emplace(name, type);
  expected.emplace(kStepCountTensor, ir::Shape::scalar(ir::DType::i64));
  std::string missing, unexpected, mistyped;
  auto add = [](std::string& list, const std::string& item) {
    list += (list.empty() ? "" : ", ") + item;
  };
  for (const auto& [name, type] : expected) {
    auto it = f.tensors.find(name);
    if (it == f.tensors.end())
      add(missing, name);
    else if (it->second.shape() != type)
      add(mistyped, name + " (" + it->second.shape().str() + ", expected " + type.str() + ")");
  }
  for (const auto& [name, value] : f.tensors)
    if (!expected.count(name))
      add(unexpected, name);
  if (!missing.empty() || !unexpected.empty() || !mistyped.empty())
    throw Error("Trainer::load: '" + path.string() + "' does not match the training step:" +
                (missing.empty() ? "" : " missing " + missing + ";") +
                (unexpected.empty() ? "" : " unexpected " + unexpected + ";") +
                (mistyped.empty() ? "" : " mistyped " + mistyped + ";"));
  for (const auto& [name, value] : f.tensors)
    if (name != kStepCountTensor)
      state_->exe->set_param(name, value);
  const std::int64_t steps = f.tensors.at(kStepCountTensor).data<std::int64_t>()[0];
  if (steps < 0)
    throw Error("Trainer::load: '" + path.string() + "' holds a negative step count");
  state_->steps = steps;
}

const compile::TrainingGraph& Trainer::graph() const {
  return state_->graph;
}

Executable& Trainer::step_executable() {
  return *state_->exe;
}

std::shared_ptr<compile::WeightRegion> Trainer::weights() const {
  return state_->exe->weights();
}

} // namespace rlx::runtime
