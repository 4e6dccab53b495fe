// compile_cache.cpp: the LRU compile cache.
#include "rlx/runtime/compile_cache.hpp"

#include <list>
#include <map>

namespace rlx::runtime {

std::string CacheKey::str() const {
  std::string b;
  for (const auto& [s, v] : bindings)
    b += (b.empty() ? "" : ",") + s + "=" + std::to_string(v);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(graph_hash));
  return std::string("graph ") + hash + " {" + b + "} on " + device + " (" + options + ")";
}

struct CompileCache::Impl {
  struct Entry {
    CacheKey key;
    ir::Graph graph;
    std::shared_ptr<const CompiledGraph> value;
  };
  std::size_t capacity;
  mutable std::mutex mu;
  std::list<Entry> lru; // most recently used first
  std::map<CacheKey, std::list<Entry>::iterator> index;
  CacheStats stats;
};

CompileCache::CompileCache(std::size_t capacity) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = capacity == 0 ? 1 : capacity;
}

CompileCache::~CompileCache() = default;

std::shared_ptr<const CompiledGraph>
CompileCache::get_or_compile(const CacheKey& key, const ir::Graph& g,
                             const std::function<CompiledGraph()>& compile) {
  Impl& m = *impl_;
  bool collision = false;
  {
    std::lock_guard lock(m.mu);
    auto it = m.index.find(key);
    if (it != m.index.end()) {
      if (it->second->graph == g) {
        m.lru.splice(m.lru.begin(), m.lru, it->second);
        ++m.stats.hits;
        return it->second->value;
      }
      collision = true; // same hash, another graph: compile it, leave the entry alone
    }
    ++m.stats.misses;
  }
  auto value = std::make_shared<const CompiledGraph>(compile());
  if (collision)
    return value;
  std::lock_guard lock(m.mu);
  auto it = m.index.find(key);
  if (it != m.index.end()) // another thread stored it meanwhile: share theirs
    return it->second->value;
  m.lru.push_front(Impl::Entry{key, g, value});
  m.index.emplace(key, m.lru.begin());
  while (m.lru.size() > m.capacity) {
    m.index.erase(m.lru.back().key);
    m.lru.pop_back();
    ++m.stats.evictions;
  }
  m.stats.entries = static_cast<std::int64_t>(m.lru.size());
  return value;
}

CacheStats CompileCache::stats() const {
  std::lock_guard lock(impl_->mu);
  CacheStats s = impl_->stats;
  s.entries = static_cast<std::int64_t>(impl_->lru.size());
  return s;
}

void CompileCache::clear() {
  std::lock_guard lock(impl_->mu);
  impl_->lru.clear();
  impl_->index.clear();
}

} // namespace rlx::runtime
