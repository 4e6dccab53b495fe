// param_match.hpp (private): which tensor of a weights file each Param reads, and the one-line
// error naming every missing, unexpected or mistyped tensor. Executable::load_params (one file)
// and Checkpoint::load_into (a sharded folder) share it.
#pragma once

#include "rlx/ir/shape.hpp"
#include "rlx/runtime/executable.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rlx::runtime::detail {

/// "a, b, c and 4 more": at most \p max names, then how many were left out.
std::string name_list(const std::vector<std::string>& names, std::size_t max = 5);

/// Whether \p value fits declared type \p want: same dtype and rank, equal static dims (a symbolic
/// declared dim takes any size).
bool fits(const ir::Shape& want, const ir::Shape& value);

/// Matches \p params against the tensors \p entries of the weights at \p path (\p find looks one
/// up by name) under \p opts, and \returns each Param's key in the file (checkpoint_key), in
/// \p params' order. Throws Error("load_params '<path>': ...") listing every missing (with a hint
/// when the file names them under a prefix), unexpected and mistyped tensor that \p opts does
/// not allow, before any data is read.
std::vector<std::string>
match_params(const std::vector<std::pair<std::string, ir::Shape>>& params,
             const std::vector<SafetensorsEntry>& entries,
             const std::function<const SafetensorsEntry*(const std::string&)>& find,
             const LoadOptions& opts, const std::string& path);

} // namespace rlx::runtime::detail
