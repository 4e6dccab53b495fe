// cmd_train.cpp: `rlx train`: train a model on .npy data with a compiled training step
// (Session::compile_training), evaluating on the test split as it goes.
#include "commands.hpp"
#include "report.hpp"
#include "rlx/compile/training.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/session.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

namespace rlx::cli {

namespace {

namespace fs = std::filesystem;

/// A split of a classification data set: features [N, F] f32 and labels [N] i64.
struct Split {
  ir::Tensor x, y;
  std::int64_t rows() const { return x.shape()[0].size(); }
};

Split read_split(const fs::path& dir, const std::string& name, bool required) {
  const fs::path xp = dir / (name + "_x.npy"), yp = dir / (name + "_y.npy");
  if (!fs::exists(xp) || !fs::exists(yp)) {
    if (required)
      throw Error("--data: '" + dir.string() + "' lacks " + name + "_x.npy / " + name + "_y.npy");
    return {};
  }
  Split s{runtime::read_npy(xp), runtime::read_npy(yp)};
  if (s.x.shape().rank() != 2 || s.x.shape().dtype != ir::DType::f32)
    throw Error("--data: " + xp.string() + " must be f32 [N, features], got " + s.x.shape().str());
  if (s.y.shape().rank() != 1 || s.y.shape().dtype != ir::DType::i64 ||
      s.y.shape()[0].size() != s.rows())
    throw Error("--data: " + yp.string() + " must be i64 [" + std::to_string(s.rows()) +
                "] (one label per row of " + xp.filename().string() + "), got " +
                s.y.shape().str());
  return s;
}

/// Rows \p idx[begin, begin + n) of \p s as a batch.
std::map<std::string, ir::Tensor> gather(const Split& s, const std::vector<std::int64_t>& idx,
                                         std::size_t begin, std::int64_t n) {
  const std::int64_t f = s.x.shape()[1].size();
  ir::Tensor x(ir::Shape({n, f})), y(ir::Shape({n}, ir::DType::i64));
  auto xs = s.x.data<float>();
  auto ys = s.y.data<std::int64_t>();
  for (std::int64_t r = 0; r < n; ++r) {
    const auto src = static_cast<std::size_t>(idx[begin + static_cast<std::size_t>(r)]);
    std::copy_n(xs.begin() + static_cast<std::ptrdiff_t>(src * static_cast<std::size_t>(f)), f,
                x.data<float>().begin() + r * f);
    y.data<std::int64_t>()[static_cast<std::size_t>(r)] = ys[src];
  }
  return {{"x", x}, {"labels", y}};
}

/// Mean cross-entropy and accuracy of \p logits [N, C] against \p labels.
std::pair<double, double> score(const ir::Tensor& logits, const ir::Tensor& labels) {
  const std::int64_t n = logits.shape()[0].size(), c = logits.shape()[1].size();
  double loss = 0;
  std::int64_t right = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double mx = -INFINITY;
    std::int64_t arg = 0;
    for (std::int64_t k = 0; k < c; ++k) {
      const double v = logits.get_f64(i * c + k);
      if (v > mx) {
        mx = v;
        arg = k;
      }
    }
    double z = 0;
    for (std::int64_t k = 0; k < c; ++k)
      z += std::exp(logits.get_f64(i * c + k) - mx);
    const std::int64_t label = labels.get_i64(i);
    loss += mx + std::log(z) - logits.get_f64(i * c + label);
    right += arg == label;
  }
  return {loss / static_cast<double>(n), static_cast<double>(right) / static_cast<double>(n)};
}

struct Train {
  std::string model = "mlp", data, optimizer = "sgd", schedule = "constant", save, resume, init;
  std::string loss = "xent";
  std::vector<std::int64_t> hidden{128};
  double lr = 0.1, momentum = 0.9, weight_decay = 0, clip = 0, beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  bool nesterov = false, json = false, no_shuffle = false;
  std::int64_t batch = 64, epochs = 10, steps = 0, warmup = 0, eval_every = 0;
  unsigned seed = 0;

  int run() {
    if (model != "mlp")
      throw Error("--model: only 'mlp' trains today (bert and llama training are not wired to "
                  "`rlx train` yet)");
    if (loss != "xent")
      throw Error("--loss: only 'xent' (softmax cross-entropy over integer labels) for now");
    const Split train = read_split(data, "train", true);
    const Split test = read_split(data, "test", false);
    if (batch < 1 || batch > train.rows())
      throw Error("--batch must be in [1, " + std::to_string(train.rows()) + "], got " +
                  std::to_string(batch));
    std::int64_t classes = 0;
    for (std::int64_t i = 0; i < train.rows(); ++i) {
      if (train.y.get_i64(i) < 0)
        throw Error("--data: a negative label in train_y.npy");
      classes = std::max(classes, train.y.get_i64(i) + 1);
    }

    runtime::MlpConfig cfg;
    cfg.dims = {train.x.shape()[1].size()};
    cfg.dims.insert(cfg.dims.end(), hidden.begin(), hidden.end());
    cfg.dims.push_back(classes);
    const ir::Graph net = runtime::build_mlp(cfg);

    runtime::TrainerOptions to;
    if (optimizer == "sgd")
      to.training.optimizer.rule = compile::Sgd{momentum, nesterov, weight_decay};
    else if (optimizer == "adamw")
      to.training.optimizer.rule = compile::AdamW{beta1, beta2, eps, weight_decay};
    else
      throw Error("--optimizer: expected sgd or adamw, got '" + optimizer + "'");
    to.training.optimizer.clip_grad_norm = clip;
    const std::int64_t per_epoch = train.rows() / batch; // the last partial batch is dropped
    const std::int64_t total = steps > 0 ? steps : epochs * per_epoch;
    to.schedule.base_lr = lr;
    if (schedule == "cosine") {
      to.schedule.kind = compile::LrSchedule::Kind::warmup_cosine;
      to.schedule.warmup_steps = warmup;
      to.schedule.total_steps = total;
    } else if (schedule != "constant") {
      throw Error("--schedule: expected constant or cosine, got '" + schedule + "'");
    }

    runtime::Session session;
    const auto t_compile = std::chrono::steady_clock::now();
    runtime::Trainer trainer =
        session.compile_training(compile::with_loss(net, compile::Loss::softmax_cross_entropy), to);
    runtime::CompileOptions shared; // the inference executable reads the trainer's weights
    shared.weights = trainer.weights();
    runtime::Executable infer = session.compile(net, shared);
    if (!resume.empty()) {
      trainer.load(resume);
    } else if (!init.empty()) {
      trainer.load_params(init); // e.g. torch's initial weights, for a parity run
    } else {
      // torch.nn.Linear's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
      std::mt19937 rng(seed);
      runtime::TensorMap start;
      for (std::size_t l = 0; l + 1 < cfg.dims.size(); ++l) {
        const std::string fc = "fc" + std::to_string(l + 1);
        const double bound = 1.0 / std::sqrt(static_cast<double>(cfg.dims[l]));
        std::uniform_real_distribution<float> u(static_cast<float>(-bound),
                                                static_cast<float>(bound));
        ir::Tensor w(ir::Shape({cfg.dims[l + 1], cfg.dims[l]})), b(ir::Shape({cfg.dims[l + 1]}));
        for (float& v : w.data<float>())
          v = u(rng);
        for (float& v : b.data<float>())
          v = u(rng);
        start[fc + ".weight"] = w;
        start[fc + ".bias"] = b;
      }
      trainer.set_params(start);
    }
    // Compile the step for the batch size now (not on the first step), so the timings below
    // separate compilation from training.
    trainer.step_executable().prepare({{"batch", batch}});
    if (test.x.numel() > 0)
      infer.prepare({{"batch", test.rows()}});
    const double compile_ms = ms_since(t_compile);

    auto evaluate = [&](std::int64_t step, double train_loss, double elapsed_ms) {
      nlohmann::json j{{"step", step},
                       {"epoch", static_cast<double>(step) / static_cast<double>(per_epoch)},
                       {"train_loss", train_loss},
                       {"lr", to.schedule.at(std::max<std::int64_t>(step, 1))},
                       {"elapsed_ms", elapsed_ms}};
      if (test.x.numel() > 0) {
        auto [l, acc] = score(infer.run({{"x", test.x}}).at("y"), test.y);
        j["test_loss"] = l;
        j["test_accuracy"] = acc;
      }
      if (json) {
        std::cout << j.dump() << std::endl;
        return;
      }
      std::ostringstream line;
      line << "step " << step << "/" << total << "  epoch " << step / per_epoch << "  train loss "
           << train_loss;
      if (j.contains("test_loss"))
        line << "  test loss " << j["test_loss"].get<double>() << "  test acc "
             << 100 * j["test_accuracy"].get<double>() << "%";
      line << "  " << format_ms(elapsed_ms);
      std::cout << line.str() << std::endl;
    };

    const std::int64_t every = eval_every > 0 ? eval_every : per_epoch;
    std::vector<std::int64_t> order(static_cast<std::size_t>(train.rows()));
    std::int64_t epoch_of_order = -1;
    double loss_sum = 0;
    std::int64_t loss_n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double step_ms = 0;
    std::int64_t taken = 0; // steps taken by this process (a resumed run starts later)
    while (trainer.steps() < total) {
      const std::int64_t s = trainer.steps(); // 0-based index of this step
      const std::int64_t epoch = s / per_epoch;
      if (epoch != epoch_of_order) { // a fixed shuffle per epoch: resuming replays the same order
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(seed * 1000003u + static_cast<unsigned>(epoch));
        if (!no_shuffle)
          std::shuffle(order.begin(), order.end(), rng);
        epoch_of_order = epoch;
      }
      const auto b = gather(train, order, static_cast<std::size_t>((s % per_epoch) * batch), batch);
      const auto ts = std::chrono::steady_clock::now();
      loss_sum += trainer.step(b);
      step_ms += ms_since(ts);
      ++loss_n;
      ++taken;
      if (trainer.steps() % every == 0 || trainer.steps() == total) {
        evaluate(trainer.steps(), loss_sum / static_cast<double>(loss_n), ms_since(t0));
        loss_sum = 0;
        loss_n = 0;
      }
    }
    const double train_ms = ms_since(t0);
    if (!save.empty())
      trainer.save(save);
    nlohmann::json done{
        {"done", true},
        {"steps", trainer.steps()},
        {"compile_ms", compile_ms},
        {"train_ms", train_ms},
        {"step_ms_mean", step_ms / static_cast<double>(std::max<std::int64_t>(taken, 1))},
        {"samples_per_s",
         train_ms > 0 ? static_cast<double>(taken * batch) / (train_ms / 1000) : 0.0}};
    // The step's memory plan: arena against the planner's lower bound (temporaries), and the
    // pinned regions (params, inputs, outputs; weights live in the region, not the arena).
    for (const runtime::VariantInfo* v : trainer.step_executable().variants()) {
      const ir::MemoryPlan& p = v->compiled->result.lir.plan();
      done["step_arena_bytes"] = p.arena_size;
      done["step_lower_bound_bytes"] = p.lower_bound;
      done["step_pinned_bytes"] = p.pinned_bytes;
      done["step_device_bytes"] = v->device_bytes;
    }
    if (json)
      std::cout << done.dump() << std::endl;
    else
      std::cout << "trained " << trainer.steps() << " steps in " << format_ms(train_ms)
                << " (compile " << format_ms(compile_ms) << ", "
                << static_cast<std::int64_t>(done["samples_per_s"].get<double>()) << " samples/s)"
                << (save.empty() ? "" : ", saved to " + save) << std::endl;
    if (!json && done.contains("step_arena_bytes"))
      std::cout << "step arena " << format_bytes(done["step_arena_bytes"].get<std::int64_t>())
                << " (lower bound "
                << format_bytes(done["step_lower_bound_bytes"].get<std::int64_t>()) << ")"
                << std::endl;
    return 0;
  }
};

} // namespace

Command add_train(CLI::App& root) {
  auto t = std::make_shared<Train>();
  CLI::App* app = root.add_subcommand("train", "train a model on .npy data (compiled step)");
  app->add_option("--model", t->model, "model to train (mlp)")->capture_default_str();
  app->add_option("--data", t->data,
                  "directory with train_x.npy (f32 [N, F]) and train_y.npy (i64 [N]); "
                  "test_x.npy / test_y.npy are evaluated when present")
      ->required()
      ->check(CLI::ExistingDirectory);
  app->add_option("--hidden", t->hidden, "hidden layer widths of the MLP")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16))
      ->capture_default_str();
  app->add_option("--loss", t->loss, "loss (xent)")->capture_default_str();
  app->add_option("--optimizer", t->optimizer, "sgd or adamw")->capture_default_str();
  app->add_option("--lr", t->lr, "base learning rate")
      ->check(CLI::Range(0.0, 1e3))
      ->capture_default_str();
  app->add_option("--momentum", t->momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_flag("--nesterov", t->nesterov, "SGD Nesterov momentum");
  app->add_option("--weight-decay", t->weight_decay, "weight decay (AdamW: decoupled)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--clip", t->clip, "clip gradients to this global L2 norm (0 = off)")
      ->check(CLI::Range(0.0, 1e6));
  app->add_option("--schedule", t->schedule, "constant or cosine (linear warm-up, cosine decay)")
      ->capture_default_str();
  app->add_option("--warmup", t->warmup, "warm-up steps of the cosine schedule")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  app->add_option("--batch", t->batch, "rows per step")->capture_default_str();
  auto* ep = app->add_option("--epochs", t->epochs, "passes over the training split")
                 ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
                 ->capture_default_str();
  app->add_option("--steps", t->steps, "train this many steps instead of --epochs")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->excludes(ep);
  app->add_option("--seed", t->seed, "seed of the initial weights and the shuffles")
      ->capture_default_str();
  app->add_option("--eval-every", t->eval_every, "evaluate every N steps (default: every epoch)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  app->add_option("--save", t->save, "write params, optimizer state and step to a .safetensors");
  app->add_option("--resume", t->resume, "continue from a --save checkpoint")
      ->check(CLI::ExistingFile);
  app->add_option("--init", t->init,
                  "initial params from a .safetensors (fc1.weight, fc1.bias, ...) instead of the "
                  "seeded init")
      ->check(CLI::ExistingFile);
  app->add_flag("--no-shuffle", t->no_shuffle, "batches in file order (for parity runs)");
  app->add_flag("--json", t->json, "JSON lines instead of text");
  return {app, [t] { return t->run(); }};
}

} // namespace rlx::cli
