// trainer.hpp: Trainer, a compiled training step (rlx::compile::build_training_graph) run on
// batches, its parameters and optimizer state in the step's weight region, updated in place.
#pragma once

#include "rlx/compile/training.hpp"
#include "rlx/runtime/executable.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace rlx::runtime {

/// Options of Session::compile_training.
struct TrainerOptions {
  compile::TrainingOptions training; ///< loss output, optimizer, parameters to train
  compile::LrSchedule schedule;      ///< the learning rate step() uses
};

/// Name of the step counter in a Trainer checkpoint (an i64 scalar).
inline constexpr const char* kStepCountTensor = "optim.step";

/// A compiled training step and its state. Made by Session::compile_training.
///
/// The parameters and the optimizer state are Params of the step graph held in its weight region
/// (weights()) and updated in place by every step: no allocation and no host copy of a weight per
/// step; step() copies back only the loss. Compile the model (or any graph of it) with
/// `CompileOptions::weights = trainer.weights()` to get an inference executable that reads the
/// same bytes, so it sees every update. One step at a time: step() is not meant to run on
/// several threads at once.
class Trainer {
public:
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  ~Trainer();

  /// Runs one step on \p batch (every model input by name) with the schedule's rate for this step.
  /// \returns the loss (computed with the parameters before the update).
  double step(const std::map<std::string, ir::Tensor>& batch);
  /// The same with learning rate \p lr.
  double step(const std::map<std::string, ir::Tensor>& batch, double lr);
  /// Steps taken so far (the next step is number steps() + 1).
  std::int64_t steps() const;

  /// Sets model parameters by name (untrained params included); optimizer state is not touched.
  void set_params(const TensorMap& values);
  /// Loads model parameters from a safetensors file (see Executable::load_params; the optimizer
  /// state is not read from it).
  void load_params(const std::filesystem::path& path, const LoadOptions& opts = {});
  /// Copies of every model parameter (trained or not), by name.
  TensorMap params() const;
  /// Copies of the optimizer state tensors, by name ("optim.<param>.<slot>").
  TensorMap optimizer_state() const;

  /// Writes parameters, optimizer state and the step count (kStepCountTensor) to a safetensors
  /// file.
  void save(const std::filesystem::path& path) const;
  /// Restores what save() wrote: every tensor must be there with its type (one error listing the
  /// missing, unexpected and mistyped ones), so training resumes bit-identically.
  void load(const std::filesystem::path& path);

  /// The step graph and where its weights are.
  const compile::TrainingGraph& graph() const;
  /// The compiled step.
  Executable& step_executable();
  /// The weight region holding parameters and optimizer state.
  std::shared_ptr<compile::WeightRegion> weights() const;

private:
  friend class Session;
  struct State;
  explicit Trainer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace rlx::runtime
