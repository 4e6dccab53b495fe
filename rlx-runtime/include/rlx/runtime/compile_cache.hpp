// compile_cache.hpp: CompileCache, compiled pipelines by graph hash, bindings, device and options.
//
// A Session looks every compile up here first. The key is the structural hash of the graph (with
// its symbols as they stand), the symbol bindings of the variant, the device with its backend's
// config string, and the compile options; an entry also keeps the graph itself, so a hash
// collision is detected and compiled separately rather than returning another graph's code. An
// entry holds the compile pipeline's result (LIR, fusion and dispatch reports, pass timings), which
// is immutable and shared: each Executable compiles it into device memory of its own. Entries are
// evicted least-recently-used beyond the capacity; Executables keep what they use alive.
#pragma once

#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace rlx::runtime {

/// What identifies one compile.
struct CacheKey {
  std::uint64_t graph_hash = 0; ///< ir::Graph::hash() of the graph as given (symbols unbound)
  ir::Bindings bindings;        ///< the sizes of the graph's symbols for this variant
  std::string device;           ///< Device::str() plus the backend's config string
  std::string options;          ///< the compile options, printed

  friend auto operator<=>(const CacheKey&, const CacheKey&) = default;
  /// One line for messages and inspection.
  std::string str() const;
};

/// The compile pipeline's output for one key, shared by every Executable that uses it.
struct CompiledGraph {
  compile::CompileResult result; ///< LIR, reports and per-pass timings
  double pipeline_ms = 0;        ///< wall time of the compile pipeline
};

/// Counters of a CompileCache, for tests and inspection.
struct CacheStats {
  std::int64_t hits = 0;      ///< lookups answered from the cache
  std::int64_t misses = 0;    ///< lookups that ran the compile pipeline
  std::int64_t evictions = 0; ///< entries dropped beyond the capacity
  std::int64_t entries = 0;   ///< entries held now
};

/// A thread-safe LRU cache of compiled pipelines.
class CompileCache {
public:
  /// A cache holding at most \p capacity entries (at least 1).
  explicit CompileCache(std::size_t capacity = 64);
  ~CompileCache();

  /// The entry of \p key for graph \p g, running \p compile on a miss (outside the lock, so other
  /// lookups proceed; two threads missing the same key may both compile, and the first stored
  /// wins). Errors from \p compile propagate and nothing is stored.
  std::shared_ptr<const CompiledGraph>
  get_or_compile(const CacheKey& key, const ir::Graph& g,
                 const std::function<CompiledGraph()>& compile);
  /// The current counters.
  CacheStats stats() const;
  /// Drops every entry (counters are kept).
  void clear();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace rlx::runtime
