// attr_visit.hpp (private): generic helpers over the fields of attribute structs.
#pragma once

#include "rlx/ir/attrs.hpp"

#include <string_view>
#include <type_traits>

namespace rlx::ir::detail {

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};

/// True for the enums declared with printable names in attrs.hpp.
template <class T>
concept NamedEnum = std::is_enum_v<T> && requires(T t) {
  enum_names(t);
};

/// The printed name of enum value \p v.
template <NamedEnum E> std::string_view enum_name(E v) {
  auto names = enum_names(E{});
  auto i = static_cast<std::size_t>(v);
  return i < names.size() ? names[i] : std::string_view("?");
}

/// Parses an enum name; \returns false when unknown.
template <NamedEnum E> bool parse_enum(std::string_view s, E& out) {
  auto names = enum_names(E{});
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == s) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

/// Calls fn(name, field) for every field of the attribute struct held by \p attrs.
template <class Fn> void visit_attr_fields(const Attrs& attrs, Fn&& fn) {
  std::visit([&](const auto& a) { std::decay_t<decltype(a)>::visit_fields(a, fn); }, attrs);
}
template <class Fn> void visit_attr_fields(Attrs& attrs, Fn&& fn) {
  std::visit([&](auto& a) { std::decay_t<decltype(a)>::visit_fields(a, fn); }, attrs);
}

} // namespace rlx::ir::detail
