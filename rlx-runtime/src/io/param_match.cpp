// param_match.cpp: Param-to-tensor matching shared by load_params and Checkpoint::load_into.
#include "param_match.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/runtime/checkpoint.hpp"

#include <set>

namespace rlx::runtime::detail {

std::string name_list(const std::vector<std::string>& names, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i)
    s += (i ? ", " : "") + names[i];
  if (names.size() > max)
    s += " and " + std::to_string(names.size() - max) + " more";
  return s;
}

bool fits(const ir::Shape& want, const ir::Shape& value) {
  if (want.dtype != value.dtype || want.rank() != value.rank())
    return false;
  for (std::size_t i = 0; i < want.rank(); ++i)
    if (want[i].is_static() && want[i].size() != value[i].size())
      return false;
  return true;
}

std::vector<std::string>
match_params(const std::vector<std::pair<std::string, ir::Shape>>& params,
             const std::vector<SafetensorsEntry>& entries,
             const std::function<const SafetensorsEntry*(const std::string&)>& find,
             const LoadOptions& opts, const std::string& path) {
  auto has = [&](const std::string& n) { return find(n) != nullptr; };
  std::vector<std::string> keys, missing, extra, mistyped;
  std::set<std::string> wanted;
  for (const auto& [name, type] : params) {
    keys.push_back(checkpoint_key(name, opts.prefix, has));
    const std::string& key = keys.back();
    wanted.insert(key);
    const SafetensorsEntry* e = find(key);
    if (!e) {
      missing.push_back(key);
      continue;
    }
    const bool float_ok =
        opts.convert_floats && ir::is_float(type.dtype) && ir::is_float(e->shape.dtype);
    if (!fits(type.with_dtype(float_ok ? e->shape.dtype : type.dtype), e->shape))
      mistyped.push_back(key + " is " + e->shape.str() + ", expected " + type.str());
  }
  for (const auto& e : entries)
    if (!wanted.count(e.name))
      extra.push_back(e.name);

  std::string problems;
  auto add = [&](const std::string& part) { problems += (problems.empty() ? "" : "; ") + part; };
  if (!missing.empty() && !opts.allow_missing) {
    std::string hint;
    // A checkpoint whose names carry a prefix the graph lacks ("bert.", "model.").
    const std::string& first = missing.front();
    for (const auto& e : entries)
      if (e.name.size() > first.size() && e.name.ends_with("." + first)) {
        hint = " (the file names it '" + e.name + "': load with prefix '" +
               e.name.substr(0, e.name.size() - first.size()) + "')";
        break;
      }
    add(std::to_string(missing.size()) + " missing: " + name_list(missing) + hint);
  }
  if (!extra.empty() && !opts.allow_extra)
    add(std::to_string(extra.size()) + " unexpected: " + name_list(extra));
  if (!mistyped.empty())
    add(std::to_string(mistyped.size()) + " mistyped: " + name_list(mistyped, 3));
  if (!problems.empty())
    throw Error("load_params '" + path + "': " + problems);
  return keys;
}

} // namespace rlx::runtime::detail
