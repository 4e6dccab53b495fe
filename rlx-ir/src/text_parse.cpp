// text_parse.cpp: the parser of the rlx text form (grammar in rlx/ir/text.hpp).
#include "attr_visit.hpp"
#include "literals.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "text_syntax.hpp"

#include <map>
#include <set>

namespace rlx::ir {

namespace {

/// Deepest nesting of sub-graph attributes the parser accepts (a guard against stack exhaustion).
constexpr int kMaxDepth = 32;

class Parser {
public:
  explicit Parser(std::string_view src) : src_(src) {}

  Graph document() {
    skip_ws();
    Graph g = graph(0);
    skip_ws();
    if (pos_ < src_.size())
      fail(pos_, "expected the end of the input after the graph, got " + here());
    return g;
  }

private:
  std::string_view src_;
  std::size_t pos_ = 0;

  // ---- errors --------------------------------------------------------------------------------

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw ParseError("line " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }

  /// Describes the text at the cursor for messages.
  std::string here() const {
    if (pos_ >= src_.size())
      return "the end of the input";
    std::size_t n = 0;
    while (pos_ + n < src_.size() && n < 12 && src_[pos_ + n] != '\n')
      ++n;
    return detail::quote(src_.substr(pos_, n == 0 ? 1 : n));
  }

  // ---- lexing --------------------------------------------------------------------------------

  bool at_end() const { return pos_ >= src_.size(); }
  char peek() const { return at_end() ? '\0' : src_[pos_]; }

  /// Skips blanks, newlines and `#` comments.
  void skip_ws() {
    while (!at_end()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && src_[pos_] != '\n')
          ++pos_;
      } else {
        break;
      }
    }
  }

  /// Skips blanks on the current line only.
  void skip_blanks() {
    while (!at_end() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\r'))
      ++pos_;
  }

  /// Consumes \p c after blanks and comments; leaves the cursor alone when it is not there.
  bool accept(char c) {
    std::size_t save = pos_;
    skip_ws();
    if (peek() != c) {
      pos_ = save;
      return false;
    }
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& context) {
    skip_ws();
    if (peek() != c)
      fail(pos_, "expected '" + std::string(1, c) + "' " + context + ", got " + here());
    ++pos_;
  }

  /// A bare identifier; empty when the cursor is not on one.
  std::string_view ident() {
    skip_ws();
    std::size_t start = pos_;
    if (at_end() || !detail::is_ident_start(src_[pos_]))
      return {};
    while (!at_end() && detail::is_ident_char(src_[pos_]))
      ++pos_;
    return src_.substr(start, pos_ - start);
  }

  std::string_view expect_ident(const std::string& what) {
    std::string_view s = ident();
    if (s.empty())
      fail(pos_, "expected " + what + ", got " + here());
    return s;
  }

  /// A number-like word: letters, digits, '_', '.', '+', '-'.
  std::string_view word(const std::string& what) {
    skip_ws();
    std::size_t start = pos_;
    while (!at_end() && detail::is_word_char(src_[pos_]))
      ++pos_;
    if (pos_ == start)
      fail(pos_, "expected " + what + ", got " + here());
    return src_.substr(start, pos_ - start);
  }

  /// True (and consumed) when the next word is \p kw.
  bool accept_keyword(std::string_view kw) {
    std::size_t save = pos_;
    skip_ws();
    std::size_t end = pos_ + kw.size();
    if (src_.substr(pos_, kw.size()) != kw ||
        (end < src_.size() && detail::is_word_char(src_[end]))) {
      pos_ = save;
      return false;
    }
    pos_ = end;
    return true;
  }

  std::string string_lit() {
    skip_ws();
    std::size_t start = pos_;
    if (peek() != '"')
      fail(pos_, "expected a string in double quotes, got " + here());
    ++pos_;
    std::string out;
    while (true) {
      if (at_end() || src_[pos_] == '\n')
        fail(start, "unterminated string");
      char c = src_[pos_++];
      if (c == '"')
        return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end())
        fail(start, "unterminated string");
      char e = src_[pos_++];
      switch (e) {
      case '"':
      case '\\':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'x': {
        auto hex = [](char h) {
          if (h >= '0' && h <= '9')
            return h - '0';
          if (h >= 'a' && h <= 'f')
            return h - 'a' + 10;
          if (h >= 'A' && h <= 'F')
            return h - 'A' + 10;
          return -1;
        };
        int hi = pos_ < src_.size() ? hex(src_[pos_]) : -1;
        int lo = pos_ + 1 < src_.size() ? hex(src_[pos_ + 1]) : -1;
        if (hi < 0 || lo < 0)
          fail(pos_, "expected two hex digits after \\x");
        out += static_cast<char>(hi * 16 + lo);
        pos_ += 2;
        break;
      }
      default:
        fail(pos_ - 1, "unknown escape \\" + std::string(1, e) + " in a string");
      }
    }
  }

  /// An identifier or a quoted string (graph names, symbols).
  std::string name_or_string(const std::string& what) {
    skip_ws();
    if (peek() == '"')
      return string_lit();
    return std::string(expect_ident(what));
  }

  // ---- values ----------------------------------------------------------------------------------

  std::int64_t integer(const std::string& what) {
    std::size_t at = (skip_ws(), pos_);
    std::string_view w = word(what);
    auto v = detail::parse_int(w);
    if (!v)
      fail(at, "expected " + what + ", got " + detail::quote(w));
    return *v;
  }

  double number(const std::string& what) {
    std::size_t at = (skip_ws(), pos_);
    std::string_view w = word(what);
    auto v = detail::parse_double(w);
    if (!v)
      fail(at, "expected " + what + ", got " + detail::quote(w));
    return *v;
  }

  DType dtype() {
    std::size_t at = (skip_ws(), pos_);
    std::string_view w = expect_ident("a dtype (f32, i64, bool, ...)");
    auto t = parse_dtype(w);
    if (!t)
      fail(at, "unknown dtype " + detail::quote(w));
    return *t;
  }

  Dim dim() {
    skip_ws();
    char c = peek();
    if (c == '"' || detail::is_ident_start(c)) {
      std::size_t at = pos_;
      std::string sym = name_or_string("a dim");
      if (sym.empty())
        fail(at, "a symbolic dim needs a non-empty name");
      return Dim::sym(std::move(sym));
    }
    return Dim(integer("a dim (an integer or a symbol)"));
  }

  template <class T, class Elem> std::vector<T> list(const std::string& what, Elem&& elem) {
    expect('[', "to open " + what);
    std::vector<T> out;
    if (accept(']'))
      return out;
    do
      out.push_back(elem());
    while (accept(','));
    expect(']', "to close " + what);
    return out;
  }

  /// A tensor type `[dims] dtype`, or a tuple type `(type, ...)` of tensor types.
  Shape shape() {
    std::size_t at = (skip_ws(), pos_);
    if (!accept('('))
      return tensor_type();
    std::vector<Shape> parts;
    do
      parts.push_back(tensor_type());
    while (accept(','));
    expect(')', "to close a tuple type");
    try {
      return Shape::tuple(std::move(parts));
    } catch (const ShapeError& e) {
      fail(at, e.what());
    }
  }

  Shape tensor_type() {
    auto dims = list<Dim>("a shape's dims", [&] { return dim(); });
    return Shape(std::move(dims), dtype());
  }

  Tensor tensor() {
    if (accept_keyword("none"))
      return Tensor();
    std::size_t at = (skip_ws(), pos_);
    Shape s = tensor_type();
    std::vector<std::int64_t> sizes;
    for (const Dim& d : s.dims) {
      if (d.is_symbolic())
        fail(at, "a constant's shape must be static, got " + s.str());
      sizes.push_back(d.size());
    }
    // Every element takes at least one byte of input, so the input length bounds the count.
    auto numel = detail::checked_numel(sizes, static_cast<std::int64_t>(src_.size()) + 1);
    skip_ws();
    if (peek() == '{') {
      ++pos_;
      std::vector<std::pair<std::size_t, std::string_view>> tokens;
      if (!accept('}')) {
        do {
          std::size_t token_at = (skip_ws(), pos_);
          std::string_view token = word("a tensor element");
          tokens.emplace_back(token_at, token);
        } while (accept(','));
        expect('}', "to close the tensor's elements");
      }
      if (!numel || *numel != static_cast<std::int64_t>(tokens.size()))
        fail(at, "tensor " + s.str() + " needs " + (numel ? std::to_string(*numel) : "too many") +
                     " elements, got " + std::to_string(tokens.size()));
      Tensor t(s);
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        std::string why =
            detail::set_element_text(t, static_cast<std::int64_t>(i), tokens[i].second);
        if (!why.empty())
          fail(tokens[i].first, "tensor element " + std::to_string(i) + ": " + why);
      }
      return t;
    }
    std::size_t hex_at = pos_;
    std::string_view w = word("'{' or 0x<hex bytes> after a constant's shape");
    if (w.substr(0, 2) != "0x")
      fail(hex_at,
           "expected '{' or 0x<hex bytes> after a constant's shape, got " + detail::quote(w));
    w.remove_prefix(2);
    std::int64_t size = static_cast<std::int64_t>(dtype_size(s.dtype));
    if (!numel || *numel > static_cast<std::int64_t>(w.size()) / (2 * size) ||
        *numel * size * 2 != static_cast<std::int64_t>(w.size()))
      fail(hex_at, "tensor " + s.str() + " needs " +
                       (numel ? std::to_string(*numel * size * 2) : "more") + " hex digits, got " +
                       std::to_string(w.size()));
    Tensor t(s);
    if (!detail::from_hex(w, t))
      fail(hex_at, "bad hex digit in a constant");
    return t;
  }

  template <class F> void value(F& f, int depth) {
    std::size_t at = (skip_ws(), pos_);
    if constexpr (std::is_same_v<F, bool>) {
      std::string_view w = word("true or false");
      if (w != "true" && w != "false")
        fail(at, "expected true or false, got " + detail::quote(w));
      f = w == "true";
    } else if constexpr (std::is_same_v<F, std::int64_t>) {
      f = integer("an integer");
    } else if constexpr (std::is_same_v<F, double>) {
      f = number("a number");
    } else if constexpr (std::is_same_v<F, std::string>) {
      f = string_lit();
    } else if constexpr (std::is_same_v<F, DType>) {
      f = dtype();
    } else if constexpr (detail::NamedEnum<F>) {
      std::string_view w = expect_ident("a name");
      if (!detail::parse_enum(w, f)) {
        std::string names;
        for (auto n : enum_names(F{}))
          names += (names.empty() ? "" : ", ") + std::string(n);
        fail(at, "unknown value " + detail::quote(w) + " (expected one of " + names + ")");
      }
    } else if constexpr (std::is_same_v<F, Dim>) {
      f = dim();
    } else if constexpr (std::is_same_v<F, Shape>) {
      f = shape();
    } else if constexpr (detail::is_vector<F>::value) {
      using E = typename F::value_type;
      f = list<E>("a list", [&] {
        E e{};
        value(e, depth);
        return e;
      });
    } else if constexpr (detail::is_optional<F>::value) {
      if (accept_keyword("none")) {
        f.reset();
      } else {
        typename F::value_type v{};
        value(v, depth);
        f = std::move(v);
      }
    } else if constexpr (std::is_same_v<F, Tensor>) {
      f = tensor();
    } else if constexpr (std::is_same_v<F, SubGraph>) {
      if (accept_keyword("none")) {
        f = SubGraph{};
      } else {
        if (depth + 1 > kMaxDepth)
          fail(at, "sub-graphs nest deeper than " + std::to_string(kMaxDepth) + " levels");
        f = SubGraph{std::make_shared<const Graph>(graph(depth + 1))};
      }
    } else {
      static_assert(sizeof(F) == 0, "the text parser does not know this attribute field type");
    }
  }

  // ---- graphs --------------------------------------------------------------------------------

  /// `name=value, ...` up to the closing ']' into \p attrs.
  void fields(OpKind op, Attrs& attrs, int depth) {
    std::set<std::string, std::less<>> seen;
    do {
      std::size_t at = (skip_ws(), pos_);
      std::string_view name = expect_ident("an attribute name");
      if (!seen.insert(std::string(name)).second)
        fail(at, "attribute '" + std::string(name) + "' is given twice");
      expect('=', "after attribute '" + std::string(name) + "'");
      bool found = false;
      detail::visit_attr_fields(attrs, [&](std::string_view field, auto& f) {
        if (field == name && !found) {
          found = true;
          value(f, depth);
        }
      });
      if (!found) {
        std::string known;
        detail::visit_attr_fields(attrs, [&](std::string_view field, const auto&) {
          known += (known.empty() ? "" : ", ") + std::string(field);
        });
        fail(at, std::string(op_name(op)) + " has no attribute '" + std::string(name) + "'" +
                     (known.empty() ? " (it takes none)" : " (attributes: " + known + ")"));
      }
    } while (accept(','));
    expect(']', "to close the attribute list");
  }

  /// `%name`; \returns the name without '%'.
  std::string_view value_name() {
    skip_ws();
    std::size_t start = pos_;
    if (peek() != '%')
      fail(pos_, "expected a value name like %3, got " + here());
    ++pos_;
    while (!at_end() && detail::is_ident_char(src_[pos_]))
      ++pos_;
    if (pos_ == start + 1)
      fail(start, "expected a name after '%'");
    return src_.substr(start + 1, pos_ - start - 1);
  }

  NodeId use(const std::map<std::string, NodeId, std::less<>>& values) {
    std::size_t at = (skip_ws(), pos_);
    std::string_view n = value_name();
    auto it = values.find(n);
    if (it == values.end())
      fail(at, "%" + std::string(n) + " is not defined before this use");
    return it->second;
  }

  /// The label comment after a node, if any: `# text` or `# "quoted"`, on the node's line.
  std::string label() {
    skip_blanks();
    if (peek() != '#')
      return {};
    ++pos_;
    if (peek() == ' ')
      ++pos_;
    if (peek() == '"') {
      std::string s = string_lit();
      skip_blanks();
      if (!at_end() && peek() != '\n')
        fail(pos_, "expected the end of the line after a quoted label, got " + here());
      return s;
    }
    std::size_t start = pos_;
    while (!at_end() && src_[pos_] != '\n')
      ++pos_;
    std::string_view s = src_.substr(start, pos_ - start);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
      s.remove_suffix(1);
    return std::string(s);
  }

  void node(Graph& g, std::map<std::string, NodeId, std::less<>>& values, int depth) {
    std::size_t def_at = pos_;
    std::string name(value_name());
    if (values.count(name))
      fail(def_at, "%" + name + " is defined twice");
    expect('=', "after %" + name);
    std::size_t op_at = (skip_ws(), pos_);
    std::string_view mnemonic = expect_ident("an op name");
    auto op = parse_op_name(mnemonic);
    if (!op)
      fail(op_at, "unknown op " + detail::quote(mnemonic));
    Attrs attrs = default_attrs(*op);
    if (accept('['))
      fields(*op, attrs, depth);
    std::vector<NodeId> inputs;
    if (accept('(')) {
      if (!accept(')')) {
        do
          inputs.push_back(use(values));
        while (accept(','));
        expect(')', "to close the operand list");
      }
    }
    std::optional<Shape> declared;
    std::size_t type_at = 0;
    if (accept(':')) {
      type_at = (skip_ws(), pos_);
      declared = shape();
    }
    std::string lbl = label();
    const bool is_param = *op == OpKind::Param;
    if (*op == OpKind::Input || is_param)
      if (const auto* leaf = std::get_if<LeafAttrs>(&attrs);
          leaf && g.find_leaf(leaf->name, is_param).valid())
        fail(op_at, std::string(op_name(*op)) + " name '" + leaf->name + "' is already defined");
    NodeId id;
    try {
      id = g.add(*op, std::move(inputs), std::move(attrs), std::move(lbl));
    } catch (const ShapeError& e) {
      fail(op_at, e.what());
    }
    if (declared && !(*declared == g.shape(id)))
      fail(type_at, "declared type " + declared->str() + " but " + describe(g, id) + " derives " +
                        g.shape(id).str());
    values.emplace(std::move(name), id);
  }

  Graph graph(int depth) {
    std::size_t at = (skip_ws(), pos_);
    if (!accept_keyword("graph"))
      fail(pos_, "expected 'graph', got " + here());
    expect('@', "before the graph name");
    if (at_end() || (peek() != '"' && !detail::is_ident_start(peek())))
      fail(pos_, "expected a graph name right after '@', got " + here());
    Graph g(name_or_string("a graph name"));
    expect('{', "to open the graph body");
    std::map<std::string, NodeId, std::less<>> values;
    while (true) {
      skip_ws();
      if (accept_keyword("return"))
        break;
      if (peek() != '%')
        fail(pos_, "expected a node (%name = op ...) or 'return', got " + here());
      node(g, values, depth);
    }
    std::vector<NodeId> outs;
    skip_ws();
    if (peek() == '%') {
      do
        outs.push_back(use(values));
      while (accept(','));
    }
    g.set_outputs(std::move(outs));
    if (accept_keyword("aliasing")) {
      do {
        std::int64_t o = integer("an output index");
        if (o < 0)
          fail(pos_, "an output index must not be negative");
        expect('=', "between an output index and the param it updates");
        g.add_alias(static_cast<std::size_t>(o), name_or_string("a param name"));
      } while (accept(','));
    }
    expect('}', "to close the graph body");
    try {
      verify(g);
    } catch (const VerifyError& e) {
      fail(at, e.what());
    }
    return g;
  }
};

} // namespace

Graph parse(std::string_view text) {
  return Parser(text).document();
}

} // namespace rlx::ir
