// weight_concat.cpp: Concats of weights as derived copies in the weight region.
#include "weight_concat.hpp"

#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace rlx::cpu {

namespace {

/// The shared buffer of one concatenation.
struct ConcatBuffer {
  compile::HostPages pages;
};

/// The kind of operand \p i's derived copy: names the whole concatenation, so a copy is reused
/// only for the same one.
std::string kind_of(const std::vector<std::string>& names, std::size_t i) {
  std::string k = "rlx-cpu-concat " + std::to_string(i) + " of ";
  for (std::size_t j = 0; j < names.size(); ++j)
    k += (j ? "," : "") + names[j];
  return k;
}

} // namespace

bool is_weight_concat(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op != ir::OpKind::Concat || n.inputs.empty())
    return false;
  const auto axis = n.attr<ir::AxisAttrs>().axis;
  if (axis != 0 && axis != -static_cast<std::int64_t>(n.shape.rank()))
    return false;
  for (ir::NodeId i : n.inputs)
    if (g.node(i).op != ir::OpKind::Param)
      return false;
  return true;
}

std::byte* weight_concat(compile::WeightRegion& region, const ir::Graph& g, ir::NodeId id,
                         const void* reader, std::int64_t& new_bytes) {
  const ir::Node& n = g.node(id);
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets, sizes;
  std::int64_t total = 0;
  for (ir::NodeId i : n.inputs) {
    names.push_back(g.node(i).attr<ir::LeafAttrs>().name);
    offsets.push_back(total);
    sizes.push_back(g.shape(i).bytes());
    total += sizes.back();
    region.storage(names.back(), g.shape(i)); // creates the weight (checks its type)
  }
  if (total != n.shape.bytes())
    throw Error("rlx-cpu: " + ir::describe(g, id) + ": operand bytes do not sum to the result's");
  // An executable compiled before may have built this concatenation already.
  for (const auto& d : region.derived(names[0]))
    if (d->kind == kind_of(names, 0)) {
      auto buf = std::static_pointer_cast<ConcatBuffer>(d->state);
      for (std::size_t i = 0; i < names.size(); ++i)
        for (const auto& e : region.derived(names[i]))
          if (e->kind == kind_of(names, i))
            region.use_derived(names[i], e, reader);
      new_bytes += buf->pages.size();
      return buf->pages.data();
    }
  auto buf = std::make_shared<ConcatBuffer>();
  buf->pages = compile::HostPages(std::max<std::int64_t>(total, 1));
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto d = std::make_shared<compile::WeightRegion::Derived>();
    d->kind = kind_of(names, i);
    d->bytes = sizes[i];
    std::byte* at = buf->pages.data() + offsets[i];
    const auto bytes = static_cast<std::size_t>(sizes[i]);
    d->refresh = [at, bytes](const std::byte* plain) { std::memcpy(at, plain, bytes); };
    d->restore = [at, bytes](std::byte* plain) { std::memcpy(plain, at, bytes); };
    d->state = buf;
    region.add_derived(names[i], d, reader);
  }
  new_bytes += buf->pages.size();
  return buf->pages.data();
}

} // namespace rlx::cpu
