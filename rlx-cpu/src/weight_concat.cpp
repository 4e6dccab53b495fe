// weight_concat.cpp: Concats of weights as derived copies in the weight region.
#include "weight_concat.hpp"

#include "compile_clock.hpp"

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
  if (n.shape.is_tuple() || !n.shape.is_static())
    return false;
  for (ir::NodeId i : n.inputs)
    if (g.node(i).op != ir::OpKind::Param)
      return false;
  return true;
}

std::byte* weight_concat(compile::WeightRegion& region, const ir::Graph& g, ir::NodeId id,
                         const void* reader, std::int64_t& new_bytes) {
  const ir::Node& n = g.node(id);
  // The result is `outer` rows (the dims before the axis); each row holds one chunk per operand.
  const auto rank = static_cast<std::int64_t>(n.shape.rank());
  std::int64_t axis = n.attr<ir::AxisAttrs>().axis;
  axis = axis < 0 ? axis + rank : axis;
  std::int64_t outer = 1;
  for (std::int64_t d = 0; d < axis; ++d)
    outer *= n.shape.dims[static_cast<std::size_t>(d)].size();
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets, sizes; // within one row: a chunk's offset and its bytes
  std::int64_t total = 0;
  for (ir::NodeId i : n.inputs) {
    names.push_back(g.node(i).attr<ir::LeafAttrs>().name);
    offsets.push_back(total);
    sizes.push_back(outer == 0 ? 0 : g.shape(i).bytes() / outer);
    total += sizes.back();
    region.storage(names.back(), g.shape(i)); // creates the weight (checks its type)
  }
  if (total * outer != n.shape.bytes())
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
  buf->pages = compile::HostPages(std::max<std::int64_t>(total * outer, 1));
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto d = std::make_shared<compile::WeightRegion::Derived>();
    d->kind = kind_of(names, i);
    d->bytes = sizes[i] * outer;
    std::byte* at = buf->pages.data() + offsets[i];
    const auto chunk = static_cast<std::size_t>(sizes[i]);
    const auto row = static_cast<std::size_t>(total);
    const auto rows = static_cast<std::size_t>(outer);
    d->refresh = [at, chunk, row, rows](const std::byte* plain) {
      PreparationTimer timer(static_cast<std::int64_t>(chunk * rows));
      for (std::size_t r = 0; r < rows; ++r)
        std::memcpy(at + r * row, plain + r * chunk, chunk);
    };
    d->restore = [at, chunk, row, rows](std::byte* plain) {
      for (std::size_t r = 0; r < rows; ++r)
        std::memcpy(plain + r * chunk, at + r * row, chunk);
    };
    d->state = buf;
    region.add_derived(names[i], d, reader);
  }
  new_bytes += buf->pages.size();
  return buf->pages.data();
}

} // namespace rlx::cpu
