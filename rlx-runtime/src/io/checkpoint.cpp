// checkpoint.cpp: single-file and sharded (HF index.json) safetensors checkpoints.
#include "rlx/runtime/checkpoint.hpp"

#include "param_match.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace rlx::runtime {

namespace fs = std::filesystem;

namespace {

std::string read_index(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw IoError("cannot open checkpoint index '" + p.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof())
    throw IoError("cannot read checkpoint index '" + p.string() + "'");
  return ss.str();
}

} // namespace

std::string checkpoint_key(const std::string& name, const std::string& prefix,
                           const std::function<bool(const std::string&)>& has) {
  std::vector<std::string> names{name};
  for (auto [modern, legacy] : {std::pair{".LayerNorm.weight", ".LayerNorm.gamma"},
                                std::pair{".LayerNorm.bias", ".LayerNorm.beta"}})
    if (name.ends_with(modern))
      names.push_back(name.substr(0, name.size() - std::strlen(modern)) + legacy);
  for (const auto& n : names) {
    if (has(prefix + n))
      return prefix + n;
    if (!prefix.empty() && has(n))
      return n;
  }
  return prefix + name;
}

struct Checkpoint::Impl {
  std::string path;
  std::vector<fs::path> files;
  std::vector<SafetensorsEntry> entries; ///< over all files, by name
  std::map<std::string, std::size_t> file_of;
};

Checkpoint::Checkpoint(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.path = path.string();
  fs::path p = path;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "model.safetensors", ec))
      p /= "model.safetensors";
    else if (fs::exists(p / "model.safetensors.index.json", ec))
      p /= "model.safetensors.index.json";
    else
      throw IoError("'" + im.path +
                    "' holds neither model.safetensors nor model.safetensors.index.json");
  }
  if (p.string().ends_with(".index.json")) {
    const std::string what = "checkpoint index '" + p.string() + "'";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_index(p));
    } catch (const nlohmann::json::exception& e) {
      throw IoError(what + ": not valid JSON (" + std::string(e.what()) + ")");
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object() ||
        j["weight_map"].empty())
      throw IoError(what + ": needs a non-empty \"weight_map\" object");
    std::map<std::string, std::vector<std::string>> by_file;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw IoError(what + ": weight_map[\"" + name + "\"] is not a file name");
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos ||
          f == "." || f == "..")
        throw IoError(what + ": shard '" + f + "' must be a plain file name beside the index");
      by_file[f].push_back(name);
    }
    for (auto& [f, names] : by_file) {
      const fs::path shard = p.parent_path() / f;
      SafetensorsReader r(shard);
      std::set<std::string> want(names.begin(), names.end());
      std::vector<std::string> absent, unlisted;
      for (const auto& n : names)
        if (!r.find(n))
          absent.push_back(n);
      for (const auto& e : r.entries())
        if (!want.count(e.name))
          unlisted.push_back(e.name);
      if (!absent.empty())
        throw IoError(what + ": " + detail::name_list(absent) + " not found in its shard '" + f +
                      "'");
      if (!unlisted.empty())
        throw IoError(what + ": shard '" + f + "' holds " + detail::name_list(unlisted) +
                      ", which the weight_map does not list");
      const std::size_t index = im.files.size();
      im.files.push_back(shard);
      for (const auto& e : r.entries()) {
        im.entries.push_back(e);
        im.file_of[e.name] = index;
      }
    }
  } else {
    SafetensorsReader r(p);
    im.files.push_back(p);
    for (const auto& e : r.entries()) {
      im.entries.push_back(e);
      im.file_of[e.name] = 0;
    }
  }
  std::sort(im.entries.begin(), im.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
}

Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

const std::vector<SafetensorsEntry>& Checkpoint::entries() const {
  return impl_->entries;
}

const SafetensorsEntry* Checkpoint::find(const std::string& name) const {
  const auto& es = impl_->entries;
  auto it =
      std::lower_bound(es.begin(), es.end(), name,
                       [](const SafetensorsEntry& e, const std::string& n) { return e.name < n; });
  return it != es.end() && it->name == name ? &*it : nullptr;
}

std::vector<fs::path> Checkpoint::files() const {
  return impl_->files;
}

const std::string& Checkpoint::path() const {
  return impl_->path;
}

void Checkpoint::load_into(Executable& exe, const LoadOptions& opts) const {
  if (impl_->files.size() == 1) {
    exe.load_params(impl_->files.front(), opts);
    return;
  }
  detail::match_params(
      exe.params(), entries(), [&](const std::string& n) { return find(n); }, opts, path());
  // Each shard through load_params: it reads only the Params it holds.
  LoadOptions per_shard = opts;
  per_shard.allow_extra = per_shard.allow_missing = true;
  for (const auto& f : impl_->files)
    exe.load_params(f, per_shard);
}

} // namespace rlx::runtime
