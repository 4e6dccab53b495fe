// pass_manager.cpp: PassRegistry, pipeline strings and the PassManager (verify, dump, time).
#include "rlx/fusion/pass.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace rlx::fusion {

void PassRegistry::add(std::string name, Factory factory) {
  if (name.empty())
    throw Error("PassRegistry: a pass needs a name");
  if (!factory)
    throw Error("PassRegistry: pass '" + name + "' has no factory");
  if (factories_.contains(name))
    throw Error("PassRegistry: pass '" + name + "' is registered twice");
  factories_.emplace(std::move(name), std::move(factory));
}

bool PassRegistry::contains(std::string_view name) const {
  return factories_.contains(name);
}

std::unique_ptr<Pass> PassRegistry::create(std::string_view name) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [n, f] : factories_)
      known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown pass '" + std::string(name) +
                "' (known passes: " + (known.empty() ? std::string("none") : known) + ")");
  }
  auto pass = it->second();
  if (!pass || pass->name() != name)
    throw Error("PassRegistry: the factory of '" + std::string(name) +
                "' made a pass with another name");
  return pass;
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_)
    out.push_back(n);
  return out;
}

std::vector<std::string> parse_pipeline(std::string_view pipeline) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= pipeline.size()) {
    std::size_t comma = pipeline.find(',', pos);
    if (comma == std::string_view::npos)
      comma = pipeline.size();
    std::string_view item = pipeline.substr(pos, comma - pos);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty())
      throw Error("pipeline '" + std::string(pipeline) + "': empty pass name at offset " +
                  std::to_string(pos));
    out.emplace_back(item);
    pos = comma + 1;
  }
  return out;
}

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v)
    return false;
  std::string s(v);
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "on" || s == "yes";
}

// Rethrows the exception in flight with \p prefix, keeping its rlx error type.
[[noreturn]] void rethrow_with_prefix(const std::string& prefix) {
  try {
    throw;
  } catch (const ir::VerifyError& e) {
    throw ir::VerifyError(prefix + e.what());
  } catch (const ir::ShapeError& e) {
    throw ir::ShapeError(prefix + e.what());
  } catch (const ir::EvalError& e) {
    throw ir::EvalError(prefix + e.what());
  } catch (const ir::ParseError& e) {
    throw ir::ParseError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

// A file-name-safe version of a stage name.
std::string file_stem(std::string_view s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

} // namespace

PassManagerOptions PassManagerOptions::from_env() {
  PassManagerOptions o;
#ifndef NDEBUG
  o.verify = true;
#endif
  if (env_flag("RLX_VERIFY"))
    o.verify = true;
  if (const char* d = std::getenv("RLX_IR_DUMP"))
    o.dump_dir = d;
  o.print_passes = env_flag("RLX_PRINT_PASSES");
  return o;
}

PassManager::PassManager(PassManagerOptions opts) : opts_(std::move(opts)) {}

PassManager& PassManager::add(std::unique_ptr<Pass> pass, bool to_fixed_point) {
  if (!pass)
    throw Error("PassManager::add: null pass");
  passes_.push_back(Entry{std::move(pass), to_fixed_point});
  return *this;
}

PassManager& PassManager::add(const PassRegistry& registry, std::string_view name,
                              bool to_fixed_point) {
  return add(registry.create(name), to_fixed_point);
}

PassManager& PassManager::add(const PassRegistry& registry, const std::vector<std::string>& names) {
  for (const auto& n : names)
    add(registry, n);
  return *this;
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& e : passes_)
    out.emplace_back(e.pass->name());
  return out;
}

void PassManager::after_stage(std::string_view stage, const ir::Graph& g) {
  if (opts_.observer)
    opts_.observer(stage, g);
  if (opts_.dump_dir.empty())
    return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(opts_.dump_dir, ec);
  char num[16];
  std::snprintf(num, sizeof num, "%02d", stage_counter_);
  fs::path file =
      fs::path(opts_.dump_dir) / (file_stem(g.name()) + "." + num + "." + file_stem(stage) + ".ir");
  std::ofstream os(file);
  if (!os)
    throw Error("RLX_IR_DUMP: cannot write " + file.string());
  os << ir::print(g);
  if (!os)
    throw Error("RLX_IR_DUMP: failed writing " + file.string());
}

bool PassManager::run(ir::Graph& g, PassContext& ctx) {
  using clock = std::chrono::steady_clock;
  if (opts_.verify) {
    try {
      ir::verify(g);
    } catch (const ir::VerifyError& e) {
      throw ir::VerifyError(std::string("input graph fails verification: ") + e.what());
    }
  }
  after_stage("input", g);
  ++stage_counter_;
  bool any = false;
  for (auto& e : passes_) {
    const std::string name(e.pass->name());
    PassStats st{name, 0, false, g.size(), 0};
    auto t0 = clock::now();
    try {
      const int max_rounds = e.to_fixed_point ? 16 : 1;
      for (int round = 0; round < max_rounds; ++round) {
        if (!e.pass->run(g, ctx))
          break;
        st.changed = true;
      }
    } catch (const Error&) {
      rethrow_with_prefix("pass '" + name + "': ");
    }
    st.ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    st.nodes_after = g.size();
    stats_.push_back(st);
    any = any || st.changed;
    if (opts_.print_passes)
      std::fprintf(stderr, "rlx pass %-20s %9.3f ms  %-9s %6zu -> %zu nodes  (graph '%s')\n",
                   name.c_str(), st.ms, st.changed ? "changed" : "unchanged", st.nodes_before,
                   st.nodes_after, g.name().c_str());
    if (opts_.verify) {
      try {
        ir::verify(g);
      } catch (const ir::VerifyError& err) {
        throw ir::VerifyError("pass '" + name + "' broke the graph: " + err.what());
      }
    }
    after_stage(name, g);
    ++stage_counter_;
  }
  return any;
}

} // namespace rlx::fusion
