// text_print.cpp: the printer of the rlx text form (grammar in rlx/ir/text.hpp).
#include "attr_visit.hpp"
#include "literals.hpp"
#include "rlx/ir/text.hpp"
#include "text_syntax.hpp"

namespace rlx::ir {

namespace {

class Printer {
public:
  std::string out;

  void graph(const Graph& g, int indent) {
    out += "graph @" + detail::ident_or_quote(g.name()) + " {\n";
    const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
    for (NodeId id : g.ids()) {
      out += pad;
      node(g, id, indent + 2);
      out += '\n';
    }
    out += pad + "return";
    for (std::size_t i = 0; i < g.outputs().size(); ++i)
      out += (i ? ", %" : " %") + std::to_string(g.outputs()[i].v);
    for (std::size_t i = 0; i < g.aliases().size(); ++i) {
      const OutputAlias& a = g.aliases()[i];
      out += (i ? ", " : " aliasing ") + std::to_string(a.output) + " = " +
             detail::ident_or_quote(a.param);
    }
    out += '\n' + std::string(static_cast<std::size_t>(indent), ' ') + "}";
  }

private:
  void node(const Graph& g, NodeId id, int indent) {
    const Node& n = g.node(id);
    out += "%" + std::to_string(id.v) + " = ";
    if (static_cast<int>(n.op) < kNumOps)
      out += op_name(n.op);
    else
      out += "?op" + std::to_string(static_cast<int>(n.op));
    attrs(n.attrs, indent);
    if (!n.inputs.empty()) {
      out += '(';
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        out += (i ? ", %" : "%") + std::to_string(n.inputs[i].v);
      out += ')';
    }
    out += " : ";
    value(n.shape, indent);
    if (!n.name.empty())
      out += "  # " + (detail::is_plain_label(n.name) ? n.name : detail::quote(n.name));
  }

  /// Prints the fields that differ from the attribute struct's defaults as `[name=value, ...]`.
  void attrs(const Attrs& a, int indent) {
    std::visit(
        [&](const auto& held) {
          using A = std::decay_t<decltype(held)>;
          const A fallback{};
          std::vector<std::string> defaults;
          A::visit_fields(fallback, [&](std::string_view, const auto& f) {
            Printer p;
            p.value(f, indent);
            defaults.push_back(std::move(p.out));
          });
          std::size_t i = 0;
          bool first = true;
          A::visit_fields(held, [&](std::string_view name, const auto& f) {
            Printer p;
            p.value(f, indent);
            if (p.out != defaults[i++]) {
              out += first ? "[" : ", ";
              out += std::string(name) + "=" + p.out;
              first = false;
            }
          });
          if (!first)
            out += ']';
        },
        a);
  }

  template <class F> void value(const F& f, int indent) {
    if constexpr (std::is_same_v<F, bool>) {
      out += f ? "true" : "false";
    } else if constexpr (std::is_same_v<F, std::int64_t>) {
      out += std::to_string(f);
    } else if constexpr (std::is_same_v<F, double>) {
      out += detail::format_double(f);
    } else if constexpr (std::is_same_v<F, std::string>) {
      out += detail::quote(f);
    } else if constexpr (std::is_same_v<F, DType>) {
      out += dtype_name(f);
    } else if constexpr (detail::NamedEnum<F>) {
      out += detail::enum_name(f);
    } else if constexpr (std::is_same_v<F, Dim>) {
      out += f.is_symbolic() ? detail::ident_or_quote(f.symbol()) : std::to_string(f.size());
    } else if constexpr (std::is_same_v<F, Shape>) {
      if (f.is_tuple()) {
        out += '(';
        for (std::size_t i = 0; i < f.parts.size(); ++i) {
          if (i)
            out += ", ";
          value(f.parts[i], indent);
        }
        out += ')';
        return;
      }
      value(f.dims, indent);
      out += ' ';
      out += dtype_name(f.dtype);
    } else if constexpr (detail::is_vector<F>::value) {
      out += '[';
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (i)
          out += ", ";
        value(f[i], indent);
      }
      out += ']';
    } else if constexpr (detail::is_optional<F>::value) {
      if (f)
        value(*f, indent);
      else
        out += "none";
    } else if constexpr (std::is_same_v<F, Tensor>) {
      tensor(f, indent);
    } else if constexpr (std::is_same_v<F, SubGraph>) {
      if (f)
        graph(*f, indent + 2);
      else
        out += "none";
    } else {
      static_assert(sizeof(F) == 0, "the text printer does not know this attribute field type");
    }
  }

  void tensor(const Tensor& t, int indent) {
    if (t.empty()) {
      out += "none";
      return;
    }
    value(t.shape(), indent);
    if (!detail::decimal_is_exact(t)) {
      out += " 0x" + detail::to_hex(t);
      return;
    }
    out += " {";
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      if (i)
        out += ", ";
      out += detail::element_text(t, i);
    }
    out += '}';
  }
};

} // namespace

std::string print(const Graph& g) {
  Printer p;
  p.graph(g, 0);
  p.out += '\n';
  return p.out;
}

} // namespace rlx::ir
