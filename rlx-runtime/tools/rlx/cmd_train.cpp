// cmd_train.cpp: `rlx train`: train a model with a compiled training step
// (Session::compile_training): the MLP on feature rows, BERT (masked-LM or classifier head) and
// LLaMA (causal LM) on token ids, or any graph file with a loss; evaluating as it goes, with a
// progress bar on a terminal, JSON lines otherwise, and an SVG plot of the loss curves.
#include "commands.hpp"
#include "loss_plot.hpp"
#include "model_args.hpp"
#include "report.hpp"
#include "rlx/compile/training.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/session.hpp"
#include "rlx/runtime/training_heads.hpp"
#include "train_data.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

namespace rlx::cli {

namespace {

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

/// torch.nn.Linear's default init for the MLP: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and
/// bias, layer by layer from one seeded generator.
runtime::TensorMap mlp_init(const std::vector<std::int64_t>& dims, unsigned seed) {
  std::mt19937 rng(seed);
  runtime::TensorMap start;
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    const std::string fc = "fc" + std::to_string(l + 1);
    const double bound = 1.0 / std::sqrt(static_cast<double>(dims[l]));
    std::uniform_real_distribution<float> u(static_cast<float>(-bound), static_cast<float>(bound));
    ir::Tensor w(ir::Shape({dims[l + 1], dims[l]})), b(ir::Shape({dims[l + 1]}));
    for (float& v : w.data<float>())
      v = u(rng);
    for (float& v : b.data<float>())
      v = u(rng);
    start[fc + ".weight"] = w;
    start[fc + ".bias"] = b;
  }
  return start;
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("--graph: cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Starts or stops timing the kernels of the trainer's compiled step (a CPU executable).
void set_profiling(runtime::Trainer& trainer, bool on) {
  for (const runtime::VariantInfo* v : trainer.step_executable().variants())
    if (v->executable) // the Executable owns it; profiling only toggles its timers
      cpu::set_kernel_profiling(const_cast<compile::Executable&>(*v->executable), on);
}

/// What a run trains: the graph with its loss, the batches, and how to evaluate.
struct Setup {
  ir::Graph lossy;             ///< the model with its scalar loss (output loss_output)
  std::size_t loss_output = 0; ///< which output of lossy is the loss
  std::unique_ptr<BatchSource> src;
  ir::Bindings bindings;        ///< sizes of lossy's symbols
  std::string description;      ///< one line: the model
  std::optional<ir::Graph> net; ///< mlp: the plain net (test accuracy on the whole test split)
  ir::Tensor test_x, test_y;    ///< mlp: the test split
  runtime::TensorMap init;      ///< seeded initial params (when not --init / --resume)
};

struct Train {
  std::string model, graph_file, data, optimizer = "sgd", schedule = "constant", save, resume;
  std::string init, loss, loss_output, head = "auto", config = "tiny", plot, profile;
  std::string device = "cpu", gemm = "auto";
  int threads = 0;
  std::vector<std::int64_t> hidden;
  std::optional<int> layers, heads, kv_heads, ffn, vocab;
  std::optional<std::int64_t> mask_id;
  double lr = 0.1, momentum = 0.9, weight_decay = 0, clip = 0, beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  bool nesterov = false, json = false, no_shuffle = false, no_io_gate = false;
  std::int64_t batch = 64, epochs = 10, steps = 0, warmup = 0, eval_every = 0, seq = 64;
  std::int64_t eval_batches = 8;
  unsigned seed = 0;

  Setup setup_mlp() const {
    if (!loss.empty() && loss != "xent")
      throw Error("--loss: the mlp trains with xent (softmax cross-entropy over integer labels)");
    DataFiles files(data);
    auto need = [&](const char* name) {
      auto t = files.find(name);
      if (!t)
        throw Error("--data: '" + data + "' lacks train_x.npy / train_y.npy");
      return *t;
    };
    const ir::Tensor x = need("train_x"), y = need("train_y");
    auto check = [&](const ir::Tensor& tx, const ir::Tensor& ty, const std::string& n) {
      if (tx.shape().rank() != 2 || tx.dtype() != ir::DType::f32)
        throw Error("--data: " + files.where(n + "_x") + " must be f32 [N, features], got " +
                    tx.shape().str());
      if (ty.shape().rank() != 1 || ty.dtype() != ir::DType::i64 ||
          ty.shape()[0].size() != tx.shape()[0].size())
        throw Error("--data: " + files.where(n + "_y") + " must be i64 [" +
                    std::to_string(tx.shape()[0].size()) + "] (one label per row of " + n +
                    "_x), got " + ty.shape().str());
    };
    check(x, y, "train");
    std::int64_t classes = 0;
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      if (y.get_i64(i) < 0)
        throw Error("--data: a negative label in " + files.where("train_y"));
      classes = std::max(classes, y.get_i64(i) + 1);
    }
    Setup s;
    runtime::MlpConfig cfg;
    cfg.dims = {x.shape()[1].size()};
    const std::vector<std::int64_t> widths =
        hidden.empty() ? std::vector<std::int64_t>{128} : hidden;
    cfg.dims.insert(cfg.dims.end(), widths.begin(), widths.end());
    cfg.dims.push_back(classes);
    s.net = runtime::build_mlp(cfg);
    s.lossy = compile::with_loss(*s.net, compile::Loss::softmax_cross_entropy);
    s.bindings = {{"batch", batch}};
    s.src = row_source({{"x", x}, {"labels", y}}, {}, batch, seed, !no_shuffle, 0);
    auto tx = files.find("test_x"), ty = files.find("test_y");
    if (tx && ty) {
      check(*tx, *ty, "test");
      for (std::int64_t i = 0; i < ty->numel(); ++i)
        if (ty->get_i64(i) < 0 || ty->get_i64(i) >= classes)
          throw Error("--data: label " + std::to_string(ty->get_i64(i)) + " in " +
                      files.where("test_y") + " is outside the training labels [0, " +
                      std::to_string(classes) + ")");
      s.test_x = *tx;
      s.test_y = *ty;
    }
    s.init = mlp_init(cfg.dims, seed);
    std::string d;
    for (auto v : cfg.dims)
      d += (d.empty() ? "" : "-") + std::to_string(v);
    s.description = "mlp " + d;
    return s;
  }

  Setup setup_tokens() const {
    if (!loss.empty() && loss != "xent")
      throw Error("--loss: " + model + " trains with xent (token cross-entropy)");
    if (hidden.size() > 1)
      throw Error("--hidden: " + model + " takes one width, got " + std::to_string(hidden.size()));
    if (config != "tiny" && config != "mini")
      throw Error("--config: expected tiny or mini, got '" + config + "'");
    if (seq < 1 || seq > (1 << 20))
      throw Error("--seq must be in [1, 1048576], got " + std::to_string(seq));
    if (batch < 1 || batch > (1 << 20))
      throw Error("--batch must be in [1, 1048576], got " + std::to_string(batch));
    DataFiles files(data);
    const std::int64_t given_vocab = vocab.value_or(0);
    TokenIds train = read_token_ids(files, "train_ids", given_vocab);
    if (train.ids.empty())
      throw Error("--data: '" + data +
                  "' lacks train_ids (token ids: .npy in a directory or a "
                  "tensor of a .safetensors file)");
    TokenIds eval = read_token_ids(files, "val_ids", given_vocab);
    std::string eval_name = "val";
    if (eval.ids.empty()) {
      eval = read_token_ids(files, "test_ids", given_vocab);
      eval_name = "test";
    }
    const bool is_bert = model == "bert";
    std::string h = head;
    if (h == "auto")
      h = is_bert && files.find("train_labels") ? "cls" : "mlm";
    if (h != "mlm" && h != "cls")
      throw Error("--head: expected mlm or cls, got '" + head + "'");
    if (!is_bert && head != "auto")
      throw Error("--head is a bert option (llama trains as a causal LM)");

    TokenSourceOptions o;
    o.batch = batch;
    o.seq = seq;
    o.seed = seed;
    o.eval_batches = eval_batches;
    o.shuffle = !no_shuffle;
    std::int64_t data_vocab =
        given_vocab > 0 ? given_vocab : std::max(train.max_id, eval.max_id) + 1;
    std::int64_t model_vocab = data_vocab;
    std::int64_t classes = 0;
    auto read_labels = [&](const std::string& name, const TokenIds& ids) {
      std::vector<std::int64_t> r;
      auto t = files.find(name);
      if (!t)
        return r;
      if (!ir::is_int(t->dtype()) || t->shape().rank() != 1 || t->shape()[0].size() != ids.rows)
        throw Error("--data: " + files.where(name) + " must be int32/int64 [" +
                    std::to_string(ids.rows) + "] (one label per sequence), got " +
                    t->shape().str());
      for (std::int64_t i = 0; i < t->numel(); ++i) {
        if (t->get_i64(i) < 0)
          throw Error("--data: a negative label in " + files.where(name));
        r.push_back(t->get_i64(i));
      }
      return r;
    };
    if (!is_bert) {
      o.task = TokenTask::causal;
    } else if (h == "mlm") {
      o.task = TokenTask::masked;
      o.bert_inputs = true;
      if (mask_id) {
        if (*mask_id < 0 || *mask_id >= data_vocab)
          throw Error("--mask-id " + std::to_string(*mask_id) + " is outside the vocabulary [0, " +
                      std::to_string(data_vocab) + ")");
        o.mask_id = *mask_id;
      } else {
        o.mask_id = data_vocab; // one extra embedding row for the mask token
        model_vocab = data_vocab + 1;
      }
    } else {
      o.task = TokenTask::classify;
      o.bert_inputs = true;
      o.labels = read_labels("train_labels", train);
      if (o.labels.empty())
        throw Error("--head cls: '" + data + "' lacks train_labels (one class per sequence)");
      for (auto v : o.labels)
        classes = std::max(classes, v + 1);
      o.eval_labels = read_labels(eval_name + "_labels", eval);
      for (auto v : o.eval_labels)
        if (v >= classes)
          throw Error("--data: label " + std::to_string(v) + " in " +
                      files.where(eval_name + "_labels") + " is outside the training labels [0, " +
                      std::to_string(classes) + ")");
    }
    if (model_vocab > runtime::ModelLimits::vocab)
      throw Error("--vocab: " + std::to_string(model_vocab) + " is past the limit " +
                  std::to_string(runtime::ModelLimits::vocab));

    Setup s;
    const bool mini = config == "mini";
    if (is_bert) {
      runtime::BertConfig c;
      c.layers = layers.value_or(mini ? 4 : 2);
      c.hidden = hidden.empty() ? (mini ? 256 : 128) : static_cast<int>(hidden[0]);
      c.heads = heads.value_or(mini ? 4 : 2);
      c.ffn = ffn.value_or(4 * c.hidden);
      c.embeddings = true;
      c.vocab = static_cast<int>(model_vocab);
      c.max_positions = static_cast<int>(std::max<std::int64_t>(512, seq));
      c.batch = ir::Dim(batch);
      c.seq = ir::Dim(seq);
      const ir::Graph enc = runtime::build_bert(c);
      s.lossy = o.task == TokenTask::masked
                    ? runtime::with_token_loss(runtime::add_mlm_head(enc, c.eps), true)
                    : compile::with_loss(runtime::add_classifier_head(enc, classes),
                                         compile::Loss::softmax_cross_entropy);
      s.description = "bert (" +
                      std::string(o.task == TokenTask::masked
                                      ? "masked LM"
                                      : "classifier, " + std::to_string(classes) + " classes") +
                      "): " + std::to_string(c.layers) + " layers, hidden " +
                      std::to_string(c.hidden) + ", " + std::to_string(c.heads) + " heads, ffn " +
                      std::to_string(c.ffn) + ", vocab " + std::to_string(c.vocab);
    } else {
      runtime::LlamaConfig c;
      c.layers = layers.value_or(mini ? 4 : 2);
      c.hidden = hidden.empty() ? (mini ? 256 : 64) : static_cast<int>(hidden[0]);
      c.heads = heads.value_or(4);
      c.kv_heads = kv_heads.value_or(c.heads);
      c.ffn = ffn.value_or(mini ? 688 : 176);
      c.embeddings = true;
      c.lm_head = true;
      c.vocab = static_cast<int>(model_vocab);
      c.batch = ir::Dim(batch);
      c.seq = ir::Dim(seq);
      s.lossy = runtime::with_token_loss(runtime::build_llama(c));
      s.description = "llama (causal LM): " + std::to_string(c.layers) + " blocks, hidden " +
                      std::to_string(c.hidden) + ", " + std::to_string(c.heads) + " heads / " +
                      std::to_string(c.kv_heads) + " kv heads, ffn " + std::to_string(c.ffn) +
                      ", vocab " + std::to_string(c.vocab);
    }
    s.src = token_source(std::move(train), eval, o);
    s.init = runtime::init_params(s.lossy, seed);
    return s;
  }

  Setup setup_graph() const {
    ir::Graph g = ir::load_json(read_file_text(graph_file));
    Setup s;
    if (!loss_output.empty()) {
      if (!loss.empty())
        throw Error("--loss-output and --loss both choose the loss; give one");
      bool found = false;
      for (std::size_t i = 0; i < g.outputs().size(); ++i)
        if (g.node(g.outputs()[i]).name == loss_output) {
          s.loss_output = i;
          found = true;
        }
      if (!found)
        throw Error("--loss-output: the graph has no output named '" + loss_output + "'");
      s.lossy = g;
    } else if (loss == "xent" || loss == "mse") {
      s.lossy = compile::with_loss(g, loss == "xent" ? compile::Loss::softmax_cross_entropy
                                                     : compile::Loss::mse);
    } else {
      throw Error("--graph needs --loss xent|mse (a loss of its output 0) or --loss-output NAME "
                  "(an output that is the loss)");
    }
    // Every input but the trainer's own is read from the data: train_<input>, and
    // val_<input> / test_<input> for evaluation.
    DataFiles files(data);
    std::map<std::string, ir::Tensor> train, eval;
    std::string eval_prefix = "val_";
    for (const char* p : {"val_", "test_"}) {
      bool all = true;
      for (ir::NodeId in : s.lossy.inputs())
        all = all && files.find(p + s.lossy.node(in).attr<ir::LeafAttrs>().name).has_value();
      if (all) {
        eval_prefix = p;
        break;
      }
    }
    for (ir::NodeId in : s.lossy.inputs()) {
      const std::string& n = s.lossy.node(in).attr<ir::LeafAttrs>().name;
      const ir::Shape& type = s.lossy.shape(in);
      auto t = files.find("train_" + n);
      if (!t)
        throw Error("--data: '" + data + "' lacks train_" + n + " (the graph's input '" + n +
                    "', " + type.str() + ", one row per sample)");
      if (t->dtype() != type.dtype || t->shape().rank() != type.rank())
        throw Error("--data: " + files.where("train_" + n) + " is " + t->shape().str() +
                    ", the graph's input '" + n + "' is " + type.str());
      train[n] = *t;
      if (auto e = files.find(eval_prefix + n))
        eval[n] = *e;
    }
    if (eval.size() != train.size())
      eval.clear();
    if (train.empty())
      throw Error("--graph: the graph has no input to feed");
    s.src = row_source(train, eval, batch, seed, !no_shuffle, eval_batches);
    for (const std::string& sym : s.lossy.symbols())
      if (sym == "batch")
        s.bindings[sym] = batch;
      else if (sym == "seq")
        s.bindings[sym] = seq;
    s.init = runtime::init_params(s.lossy, seed);
    s.description = "graph '" + g.name() + "' from " + graph_file;
    return s;
  }

  int run() {
    const bool from_graph = !graph_file.empty();
    if (from_graph && !model.empty())
      throw Error("--graph and --model both choose the model; give one");
    if (!from_graph && model.empty())
      model = "mlp";
    if (!from_graph && model != "mlp" && model != "bert" && model != "llama")
      throw Error("--model: expected mlp, bert or llama, got '" + model + "'");
    Setup s = from_graph ? setup_graph() : model == "mlp" ? setup_mlp() : setup_tokens();
    BatchSource& src = *s.src;

    runtime::TrainerOptions to;
    to.training.loss_output = s.loss_output;
    if (optimizer == "sgd")
      to.training.optimizer.rule = compile::Sgd{momentum, nesterov, weight_decay};
    else if (optimizer == "adamw")
      to.training.optimizer.rule = compile::AdamW{beta1, beta2, eps, weight_decay};
    else
      throw Error("--optimizer: expected sgd or adamw, got '" + optimizer + "'");
    to.training.optimizer.clip_grad_norm = clip;
    const std::int64_t per_epoch = src.per_epoch();
    const std::int64_t total = steps > 0 ? steps : epochs * per_epoch;
    to.schedule.base_lr = lr;
    if (schedule == "cosine") {
      to.schedule.kind = compile::LrSchedule::Kind::warmup_cosine;
      to.schedule.warmup_steps = warmup;
      to.schedule.total_steps = total;
    } else if (schedule != "constant") {
      throw Error("--schedule: expected constant or cosine, got '" + schedule + "'");
    }

    const bool as_json = json || !isatty(fileno(stdout));
    const bool bar = !as_json;
    if (bar)
      std::cout << "training " << s.description << " on " << device << std::endl;

    if (device == "auto")
      throw Error("--device auto picks by predicted inference time; give the training device: "
                  "cpu or opencl[:N]");
    const runtime::Device dev = runtime::Device::parse(device);
    if (!profile.empty() && dev.kind != runtime::DeviceKind::cpu)
      throw Error("--profile times the kernels of the cpu device, not " + dev.str());
    runtime::SessionOptions so;
    so.cpu.use_io_gate = !no_io_gate;
    so.cpu.gemm = cpu::parse_gemm_provider(gemm);
    so.cpu.num_threads = threads;
    runtime::Session session(dev, std::move(so));
    const auto t_compile = std::chrono::steady_clock::now();
    runtime::Trainer trainer = session.compile_training(s.lossy, to);
    runtime::CompileOptions shared; // evaluation reads the trainer's weights
    shared.weights = trainer.weights();
    std::optional<runtime::Executable> infer, eval_exe;
    if (s.net)
      infer.emplace(session.compile(*s.net, shared));
    else if (!src.eval.empty())
      eval_exe.emplace(session.compile(s.lossy, shared));
    if (!resume.empty())
      trainer.load(resume);
    else if (!init.empty())
      trainer.load_params(init); // e.g. torch's initial weights, for a parity run
    else
      trainer.set_params(s.init);
    // Compile now (not on the first step), so the timings separate compilation from training.
    trainer.step_executable().prepare(s.bindings);
    if (infer && s.test_x.numel() > 0)
      infer->prepare({{"batch", s.test_x.shape()[0].size()}});
    if (eval_exe)
      eval_exe->prepare(s.bindings);
    const double compile_ms = ms_since(t_compile);

    LossCurve train_curve, eval_curve;
    auto clear_bar = [&] {
      if (bar)
        std::cout << "\r\033[K";
    };
    auto evaluate = [&](std::int64_t step, double train_loss, double elapsed_ms) {
      nlohmann::json j{{"step", step},
                       {"epoch", static_cast<double>(step) / static_cast<double>(per_epoch)},
                       {"train_loss", train_loss},
                       {"lr", to.schedule.at(std::max<std::int64_t>(step, 1))},
                       {"elapsed_ms", elapsed_ms}};
      if (infer && s.test_x.numel() > 0) {
        auto [l, acc] = score(infer->run({{"x", s.test_x}}).at("y"), s.test_y);
        j["test_loss"] = l;
        j["test_accuracy"] = acc;
      } else if (eval_exe) {
        double sum = 0;
        for (const Batch& b : src.eval)
          sum += eval_exe->run_selected(b, {s.loss_output})[0].get_f64(0);
        j["eval_loss"] = sum / static_cast<double>(src.eval.size());
      }
      const char* key = j.contains("test_loss") ? "test_loss" : "eval_loss";
      if (j.contains(key))
        eval_curve.emplace_back(step, j[key].get<double>());
      if (as_json) {
        std::cout << j.dump() << std::endl;
        return;
      }
      std::ostringstream line;
      line << "step " << step << "/" << total << "  epoch " << step / per_epoch << "  train loss "
           << train_loss;
      if (j.contains("test_loss"))
        line << "  test loss " << j["test_loss"].get<double>() << "  test acc "
             << 100 * j["test_accuracy"].get<double>() << "%";
      if (j.contains("eval_loss"))
        line << "  eval loss " << j["eval_loss"].get<double>();
      line << "  " << format_ms(elapsed_ms);
      clear_bar();
      std::cout << line.str() << std::endl;
    };

    const std::int64_t every = eval_every > 0 ? eval_every : per_epoch;
    double loss_sum = 0;
    std::int64_t loss_n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto last_draw = t0 - std::chrono::seconds(1);
    double step_ms = 0;
    std::int64_t taken = 0; // steps taken by this process (a resumed run starts later)
    const std::int64_t first = trainer.steps();
    while (trainer.steps() < total) {
      const Batch b = src.train(trainer.steps());
      const auto ts = std::chrono::steady_clock::now();
      const double l = trainer.step(b);
      step_ms += ms_since(ts);
      if (!profile.empty() && taken == 0) // time the kernels of every step after the first
        set_profiling(trainer, true);
      loss_sum += l;
      ++loss_n;
      ++taken;
      train_curve.emplace_back(trainer.steps(), l);
      if (bar && (std::chrono::steady_clock::now() - last_draw > std::chrono::milliseconds(100) ||
                  trainer.steps() == total)) {
        last_draw = std::chrono::steady_clock::now();
        const double done = static_cast<double>(trainer.steps()) / static_cast<double>(total);
        const int width = 30, full = static_cast<int>(done * width);
        const double secs = ms_since(t0) / 1000;
        std::ostringstream o;
        o << "\r[" << std::string(static_cast<std::size_t>(full), '#')
          << std::string(static_cast<std::size_t>(width - full), '.') << "] " << trainer.steps()
          << "/" << total << "  loss " << l << "  "
          << static_cast<std::int64_t>(
                 secs > 0 ? static_cast<double>(taken * src.items_per_step) / secs : 0)
          << " " << src.items << "/s\033[K";
        std::cout << o.str() << std::flush;
      }
      if (trainer.steps() % every == 0 || trainer.steps() == total) {
        evaluate(trainer.steps(), loss_sum / static_cast<double>(loss_n), ms_since(t0));
        loss_sum = 0;
        loss_n = 0;
      }
    }
    clear_bar();
    const double train_ms = ms_since(t0);
    if (!profile.empty()) {
      std::ofstream f(profile);
      for (const runtime::VariantInfo* v : trainer.step_executable().variants())
        if (v->executable)
          f << cpu::kernel_profile(*v->executable);
      if (!f)
        throw runtime::IoError("--profile: cannot write '" + profile + "'");
    }
    if (!save.empty())
      trainer.save(save);
    if (!plot.empty())
      write_loss_svg(plot, train_curve, eval_curve,
                     "rlx train: " + s.description + " (steps " + std::to_string(first + 1) + "-" +
                         std::to_string(trainer.steps()) + ")");
    const double rate =
        train_ms > 0 ? static_cast<double>(taken * src.items_per_step) / (train_ms / 1000) : 0.0;
    nlohmann::json done{
        {"done", true},
        {"device", session.device().str()},
        {"steps", trainer.steps()},
        {"compile_ms", compile_ms},
        {"train_ms", train_ms},
        {"step_ms_mean", step_ms / static_cast<double>(std::max<std::int64_t>(taken, 1))},
        {src.items + "_per_s", rate}};
    // The step's memory plan: arena against the planner's lower bound (temporaries), and the
    // pinned regions (params, inputs, outputs; weights live in the region, not the arena).
    for (const runtime::VariantInfo* v : trainer.step_executable().variants()) {
      const ir::MemoryPlan& p = v->compiled->result.lir.plan();
      done["step_arena_bytes"] = p.arena_size;
      done["step_lower_bound_bytes"] = p.lower_bound;
      done["step_pinned_bytes"] = p.pinned_bytes;
      done["step_device_bytes"] = v->device_bytes;
    }
    if (as_json) {
      std::cout << done.dump() << std::endl;
      return 0;
    }
    std::cout << "trained " << trainer.steps() << " steps in " << format_ms(train_ms)
              << " (compile " << format_ms(compile_ms) << ", " << static_cast<std::int64_t>(rate)
              << " " << src.items << "/s)" << (save.empty() ? "" : ", saved to " + save)
              << (plot.empty() ? "" : ", plot in " + plot) << std::endl;
    if (done.contains("step_arena_bytes"))
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
  CLI::App* app = root.add_subcommand(
      "train", "train a model (mlp on feature rows, bert / llama on token ids, or a graph file)");
  auto* model =
      app->add_option("--model", t->model, "model to train: mlp (default), bert or llama");
  app->add_option("--graph", t->graph_file,
                  "a graph JSON file to train (with --loss or --loss-output); its inputs read "
                  "train_<input> (and val_<input> / test_<input>) from --data")
      ->check(CLI::ExistingFile)
      ->excludes(model);
  app->add_option("--data", t->data,
                  "a directory of .npy files or a .safetensors file. mlp: train_x (f32 [N, F]), "
                  "train_y (i64 [N]), test_x / test_y; bert / llama: train_ids and val_ids (or "
                  "test_ids), int32/int64 token ids, a stream [T] or sequences [N, L]; bert --head "
                  "cls: train_labels / val_labels [N]")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--hidden", t->hidden,
                  "mlp: hidden layer widths (default 128); bert / llama: the hidden size")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  app->add_option("--config", t->config,
                  "bert / llama size preset: tiny (bert 2x128, llama 2x64) or mini (bert_mini "
                  "4x256, llama 4x256)")
      ->capture_default_str();
  auto bounded = [&](const char* name, std::optional<int>& dst, int max, const char* doc) {
    app->add_option_function<int>(
           name, [&dst](const int& v) { dst = v; }, doc)
        ->check(CLI::Range(1, max));
  };
  bounded("--layers", t->layers, runtime::ModelLimits::layers, "bert / llama: layers");
  bounded("--heads", t->heads, runtime::ModelLimits::heads, "bert / llama: attention heads");
  bounded("--kv-heads", t->kv_heads, runtime::ModelLimits::heads, "llama: key/value heads");
  bounded("--ffn", t->ffn, runtime::ModelLimits::ffn, "bert / llama: feed-forward width");
  bounded("--vocab", t->vocab, runtime::ModelLimits::vocab,
          "bert / llama: vocabulary size (default: the largest id in the data + 1); an id past "
          "it is an error");
  app->add_option("--seq", t->seq, "bert / llama: tokens per sequence")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
  app->add_option("--head", t->head,
                  "bert: mlm (masked LM) or cls (classifier; the default when the data has "
                  "train_labels)");
  app->add_option_function<std::int64_t>(
         "--mask-id", [t](const std::int64_t& v) { t->mask_id = v; },
         "bert mlm: the [MASK] token id (default: one past the data's vocabulary)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30));
  app->add_option("--loss", t->loss,
                  "xent (softmax cross-entropy; the built-in models' loss) or mse (--graph only)");
  app->add_option("--loss-output", t->loss_output,
                  "--graph: the name of the output that is the scalar loss");
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
  app->add_option("--batch", t->batch, "rows (sequences) per step")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24))
      ->capture_default_str();
  auto* ep = app->add_option("--epochs", t->epochs, "passes over the training split")
                 ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
                 ->capture_default_str();
  app->add_option("--steps", t->steps, "train this many steps instead of --epochs")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->excludes(ep);
  app->add_option("--seed", t->seed, "seed of the initial weights, the shuffles and the masks")
      ->capture_default_str();
  app->add_option("--eval-every", t->eval_every, "evaluate every N steps (default: every epoch)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  app->add_option("--eval-batches", t->eval_batches,
                  "evaluate on at most this many batches (bert / llama / --graph)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
  app->add_option("--save", t->save, "write params, optimizer state and step to a .safetensors");
  app->add_option("--resume", t->resume, "continue from a --save checkpoint")
      ->check(CLI::ExistingFile);
  app->add_option("--init", t->init,
                  "initial params from a .safetensors (HF names: fc1.weight, "
                  "embeddings.word_embeddings.weight, ...) instead of the seeded init")
      ->check(CLI::ExistingFile);
  app->add_option("--plot", t->plot, "write the training and evaluation loss curves to an SVG");
  app->add_option("--profile", t->profile,
                  "write the step's per-kernel times (every step after the first, slowest first) "
                  "to this file (CPU)");
  app->add_flag("--no-io-gate", t->no_io_gate,
                "cpu: apply every legal fusion, without the IO fusion-benefit gate's verdict");
  app->add_option("--gemm", t->gemm,
                  "cpu matrix-product library: auto (per shape, the fastest measured at compile "
                  "time), onednn, openblas or packed (rlx's own)")
      ->check(CLI::IsMember({"auto", "onednn", "openblas", "packed"}))
      ->capture_default_str();
  app->add_option("--threads", t->threads, "cpu threads (0 = all cores)")
      ->check(CLI::Range(0, CliLimits::threads));
  app->add_flag("--no-shuffle", t->no_shuffle,
                "batches of rows or sequences in file order (for parity runs)");
  app->add_option("--device", t->device,
                  "the device the training step runs on: cpu (default) or opencl[:N] (parameters "
                  "and optimizer state stay on it, updated in place; the loss is read back)");
  app->add_flag("--json", t->json,
                "JSON lines (the default when stdout is not a terminal; a progress bar otherwise)");
  return {app, [t] { return t->run(); }};
}

} // namespace rlx::cli
