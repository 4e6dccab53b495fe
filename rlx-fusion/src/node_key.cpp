// node_key.cpp: structural node hash over the attribute field lists of attrs.hpp.
#include "rlx/fusion/node_key.hpp"

#include <bit>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

namespace rlx::fusion {

namespace {

template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

struct Hasher {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void mix(std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }
  void bytes(const std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      h ^= static_cast<std::uint64_t>(p[i]);
      h *= 0x100000001b3ull;
    }
  }
  void str(std::string_view s) {
    mix(s.size());
    bytes(reinterpret_cast<const std::byte*>(s.data()), s.size());
  }
  void dim(const ir::Dim& d) {
    if (d.is_symbolic())
      str(d.symbol());
    else
      mix(static_cast<std::uint64_t>(d.size()));
  }
  void shape(const ir::Shape& s) {
    mix(static_cast<std::uint64_t>(s.dtype));
    mix(s.dims.size());
    for (const auto& d : s.dims)
      dim(d);
  }
  template <class F> void field(const F& f) {
    if constexpr (std::is_same_v<F, bool> || std::is_integral_v<F> || std::is_enum_v<F>) {
      mix(static_cast<std::uint64_t>(f));
    } else if constexpr (std::is_same_v<F, double>) {
      mix(std::bit_cast<std::uint64_t>(f));
    } else if constexpr (std::is_same_v<F, std::string>) {
      str(f);
    } else if constexpr (std::is_same_v<F, ir::Shape>) {
      shape(f);
    } else if constexpr (std::is_same_v<F, ir::Dim>) {
      dim(f);
    } else if constexpr (std::is_same_v<F, ir::Tensor>) {
      shape(f.shape());
      bytes(f.raw(), f.nbytes());
    } else if constexpr (std::is_same_v<F, ir::SubGraph>) {
      mix(f ? f->hash() : 0);
    } else if constexpr (is_optional<F>::value) {
      mix(f.has_value());
      if (f)
        field(*f);
    } else if constexpr (is_vector<F>::value) {
      mix(f.size());
      for (const auto& e : f)
        field(e);
    } else {
      static_assert(sizeof(F) == 0, "node_hash: unhandled attribute field type");
    }
  }
};

} // namespace

std::uint64_t node_hash(const ir::Node& n) {
  Hasher hs;
  hs.mix(static_cast<std::uint64_t>(n.op));
  hs.mix(n.inputs.size());
  for (ir::NodeId in : n.inputs)
    hs.mix(in.v);
  hs.shape(n.shape);
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        A::visit_fields(a, [&](const char*, const auto& f) { hs.field(f); });
      },
      n.attrs);
  return hs.h;
}

bool node_equal(const ir::Node& a, const ir::Node& b) {
  return a.op == b.op && a.inputs == b.inputs && a.shape == b.shape && a.attrs == b.attrs;
}

} // namespace rlx::fusion
