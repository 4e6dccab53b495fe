// session_state.hpp: the shared state behind Session and Executable handles.
#pragma once

#include "rlx/runtime/session.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rlx::runtime::detail {

/// What a Session owns; Executables hold it alive.
struct SessionState {
  Device device;
  BackendRegistry registry;
  std::unique_ptr<compile::Backend> backend;
  std::shared_ptr<CompileCache> cache;
  std::string device_key; ///< device, backend name and backend config, for cache keys
};

/// One compiled variant: how it was made and its backend executables, one per run in flight
/// (each with its own activation arena; all read the Executable's weight region).
struct Variant {
  VariantInfo info;
  std::vector<std::unique_ptr<compile::Executable>> instances; ///< every one made so far
  std::vector<compile::Executable*> idle;                      ///< those not running now
  std::vector<std::string> lir_inputs; ///< graph input names the compiled graph still reads
  std::vector<std::string> lir_params; ///< param names the compiled graph still reads
};

/// What an Executable owns.
struct ExecutableState {
  std::shared_ptr<const SessionState> session;
  ir::Graph graph;
  CompileOptions options;
  std::string options_key;
  std::uint64_t graph_hash = 0;
  std::vector<std::string> symbols;
  std::vector<std::string> output_names;
  std::vector<std::pair<std::string, ir::Shape>> input_types;
  std::vector<std::pair<std::string, ir::Shape>> param_types;
  std::shared_ptr<compile::WeightRegion> weights; ///< the weights, bound by name
  mutable std::mutex mutex;                       ///< guards variants and their instance lists
  std::map<ir::Bindings, std::unique_ptr<Variant>> variants;
};

} // namespace rlx::runtime::detail
