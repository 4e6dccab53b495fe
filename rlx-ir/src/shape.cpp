// shape.cpp: dims, shapes and broadcasting.
#include "rlx/ir/shape.hpp"

#include "rlx/ir/error.hpp"

#include "tuple_type.hpp"

#include <algorithm>

namespace rlx::ir {

Dim Dim::sym(std::string symbol) {
  if (symbol.empty())
    throw ShapeError("Dim::sym: empty symbol name");
  Dim d;
  d.size_ = -1;
  d.symbol_ = std::move(symbol);
  return d;
}

std::int64_t Dim::size() const {
  if (is_symbolic())
    throw ShapeError("dimension '" + symbol_ + "' is symbolic; bind it to a size first");
  return size_;
}

std::string Dim::str() const {
  return is_symbolic() ? symbol_ : std::to_string(size_);
}

Shape Shape::of(const std::vector<std::int64_t>& sizes, DType t) {
  std::vector<Dim> d;
  d.reserve(sizes.size());
  for (auto s : sizes)
    d.emplace_back(s);
  return Shape(std::move(d), t);
}

bool Shape::is_static() const {
  if (is_tuple())
    return std::all_of(parts.begin(), parts.end(), [](const Shape& p) { return p.is_static(); });
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.is_static(); });
}

std::vector<std::int64_t> Shape::sizes() const {
  if (is_tuple())
    throw ShapeError("the tuple type " + str() + " has no sizes; read a part with get");
  std::vector<std::int64_t> out;
  out.reserve(dims.size());
  for (const auto& d : dims) {
    if (d.is_symbolic())
      throw ShapeError("shape " + str() + " has symbolic dim '" + d.symbol() +
                       "'; bind it to a size first");
    out.push_back(d.size());
  }
  return out;
}

std::int64_t Shape::numel() const {
  const auto s = sizes();
  try {
    return checked_product(s, "element count");
  } catch (const ShapeError& e) { // the message is built only when it is needed
    throw ShapeError(str() + ": " + e.what());
  }
}

std::int64_t Shape::bytes() const {
  if (is_tuple())
    return tuple_bytes(*this);
  const std::int64_t n = numel();
  try {
    return checked_mul(n, static_cast<std::int64_t>(dtype_size(dtype)), "byte size");
  } catch (const ShapeError& e) {
    throw ShapeError(str() + ": " + e.what());
  }
}

Shape Shape::bind(const Bindings& b) const {
  Shape out = *this;
  for (auto& p : out.parts)
    p = p.bind(b);
  for (auto& d : out.dims)
    if (d.is_symbolic())
      if (auto it = b.find(d.symbol()); it != b.end())
        d = Dim(it->second);
  return out;
}

void Shape::collect_symbols(std::vector<std::string>& out) const {
  for (const auto& p : parts)
    p.collect_symbols(out);
  for (const auto& d : dims)
    if (d.is_symbolic() && std::find(out.begin(), out.end(), d.symbol()) == out.end())
      out.push_back(d.symbol());
}

std::string Shape::str() const {
  if (is_tuple())
    return tuple_str(*this);
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ", ";
    s += dims[i].str();
  }
  s += "] ";
  s += dtype_name(dtype);
  return s;
}

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const char* what) {
  auto r = static_cast<std::int64_t>(rank);
  std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw ShapeError(std::string(what) + ": axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  return a;
}

static std::string dims_str(const std::vector<Dim>& d) {
  return Shape(d, DType::f32).str();
}

std::vector<Dim> broadcast_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  std::size_t r = std::max(a.size(), b.size());
  std::vector<Dim> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const Dim* da = i < r - a.size() ? nullptr : &a[i - (r - a.size())];
    const Dim* db = i < r - b.size() ? nullptr : &b[i - (r - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (*da == *db) {
      out[i] = *da;
    } else if (da->is_static() && da->size() == 1) {
      out[i] = *db;
    } else if (db->is_static() && db->size() == 1) {
      out[i] = *da;
    } else {
      auto as = dims_str(a), bs = dims_str(b);
      throw ShapeError("cannot broadcast " + as.substr(0, as.rfind(' ')) + " with " +
                       bs.substr(0, bs.rfind(' ')) + ": dim " + da->str() + " vs " + db->str());
    }
  }
  return out;
}

bool broadcasts_to(const std::vector<Dim>& from, const std::vector<Dim>& to) {
  if (from.size() > to.size())
    return false;
  std::size_t off = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const Dim& f = from[i];
    if (f == to[i + off])
      continue;
    if (f.is_static() && f.size() == 1)
      continue;
    return false;
  }
  return true;
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> st(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    st[i - 1] = checked_mul(st[i], sizes[i], "strides");
  return st;
}

} // namespace rlx::ir
