// svg_test.cpp: DOT and SVG pictures of graphs and their memory plans.
#include "rlx/compile/svg.hpp"

#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <vector>

namespace rlx::compile {
namespace {

using ir::NodeId;
using ir::Shape;

bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

/// Checks that \p doc is one well-formed XML document whose root element is <svg>: tags balance,
/// attribute values are quoted, entities are known. \returns "" or the first problem.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  int roots = 0;
  std::string root;
  std::size_t i = 0;
  while (i < doc.size()) {
    char c = doc[i];
    if (c == '&') {
      std::size_t semi = doc.find(';', i);
      if (semi == std::string::npos)
        return "unterminated entity";
      std::string ent = doc.substr(i, semi - i + 1);
      static const std::regex known("&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
      if (!std::regex_match(ent, known))
        return "unknown entity " + ent;
      i = semi + 1;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    auto skip_to = [&](const char* end) {
      std::size_t e = doc.find(end, i);
      if (e == std::string::npos)
        return false;
      i = e + std::string(end).size();
      return true;
    };
    if (doc.compare(i, 2, "<?") == 0) {
      if (!skip_to("?>"))
        return "unterminated <?";
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      if (!skip_to("-->"))
        return "unterminated comment";
      continue;
    }
    if (doc.compare(i, 2, "<!") == 0) {
      if (!skip_to(">"))
        return "unterminated <!";
      continue;
    }
    // A tag: scan to its '>' outside quoted attribute values.
    std::size_t j = i + 1;
    char quote = 0;
    for (; j < doc.size(); ++j) {
      if (quote) {
        if (doc[j] == quote)
          quote = 0;
        else if (doc[j] == '<')
          return "'<' inside an attribute value";
      } else if (doc[j] == '"' || doc[j] == '\'') {
        quote = doc[j];
      } else if (doc[j] == '>') {
        break;
      }
    }
    if (j >= doc.size())
      return "unterminated tag";
    std::string tag = doc.substr(i + 1, j - i - 1);
    i = j + 1;
    if (!tag.empty() && tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> does not close <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
      continue;
    }
    bool self_closing = !tag.empty() && tag.back() == '/';
    std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (name.empty())
      return "a tag without a name";
    if (open.empty()) {
      ++roots;
      root = name;
    }
    if (!self_closing)
      open.push_back(name);
  }
  if (!open.empty())
    return "<" + open.back() + "> is never closed";
  if (roots != 1 || root != "svg")
    return "the document must have exactly one root element, <svg>";
  return "";
}

/// x -> a = exp(x) -> reshapes -> matmul with a param -> a chain of temporaries -> output.
struct Sample {
  ir::Graph g{"sample"};
  NodeId x, w, a, r1, r2, n, mm, t1, t2, t3, t4, out;
  Sample() {
    ir::Builder b(g);
    x = b.input("x", Shape::of({4, 8}));
    w = b.param("w", Shape::of({8, 8}));
    a = b.exp(x);
    r1 = b.reshape(a, {32});
    r2 = b.reshape(r1, {4, 8});
    n = b.narrow(r2, 0, 1, 2);
    mm = b.matmul(r2, w);
    t1 = b.exp(mm);
    t2 = b.exp(t1);
    t3 = b.exp(t2);
    t4 = b.exp(t3);
    out = b.output(b.add(t4, b.sum(n, {0}, true)));
  }
};

TEST(Dot, ListsEveryNodeWithOpShapeAndLabelAndEveryEdge) {
  Sample s;
  std::string dot = to_dot(s.g);
  EXPECT_EQ(dot.rfind("digraph \"sample\" {", 0), 0u) << dot;
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  for (NodeId id : s.g.ids()) {
    const ir::Node& node = s.g.node(id);
    std::string head = "n" + std::to_string(id.v) + " [label=\"%" + std::to_string(id.v) + " " +
                       std::string(ir::op_name(node.op));
    EXPECT_TRUE(contains(dot, head)) << head;
    EXPECT_TRUE(contains(dot, node.shape.str())) << node.shape.str();
    for (NodeId in : node.inputs)
      EXPECT_TRUE(contains(dot, "n" + std::to_string(in.v) + " -> n" + std::to_string(id.v)));
  }
  EXPECT_TRUE(contains(dot, "%0 input 'x'"));
  // Leaves are ellipses; matmul, a compound kernel, gets a double border; exp does not.
  EXPECT_TRUE(contains(dot, "n0 [label=\"%0 input 'x'\\n[4, 8] f32\", shape=ellipse"));
  std::regex mm("n" + std::to_string(s.mm.v) + " \\[[^\\n]*peripheries=2");
  EXPECT_TRUE(std::regex_search(dot, mm));
  std::regex exp_plain("n" + std::to_string(s.a.v) + " \\[[^\\n]*peripheries=2");
  EXPECT_FALSE(std::regex_search(dot, exp_plain));
}

TEST(Dot, ShowsBufferSharingAndViews) {
  Sample s;
  ir::MemoryPlan plan = plan_memory(s.g);
  std::string dot = to_dot(s.g, &plan);
  auto fill_of = [&](NodeId id) {
    std::smatch m;
    std::regex re("\\bn" + std::to_string(id.v) + " \\[[^\\n]*fillcolor=\"(#[0-9a-f]{6})\"");
    EXPECT_TRUE(std::regex_search(dot, m, re)) << id.v;
    return m.size() > 1 ? m[1].str() : std::string();
  };
  // The chain t1..t4 alternates between two buffers: nodes sharing one share a colour, and a
  // dotted "reuses" edge links each to the previous holder of its bytes.
  ASSERT_EQ(plan.slot(s.t1).offset, plan.slot(s.t3).offset);
  ASSERT_NE(plan.slot(s.t1).offset, plan.slot(s.t2).offset);
  EXPECT_EQ(fill_of(s.t1), fill_of(s.t3));
  EXPECT_NE(fill_of(s.t1), fill_of(s.t2));
  std::string reuse =
      "n" + std::to_string(s.t1.v) + " -> n" + std::to_string(s.t3.v) + " [style=dotted";
  EXPECT_TRUE(contains(dot, reuse)) << dot;
  EXPECT_TRUE(contains(dot, "reuses"));
  // Storage and offsets are in the labels.
  EXPECT_TRUE(contains(dot, "temp @" + std::to_string(plan.slot(s.t1).offset)));
  EXPECT_TRUE(contains(dot, "param @0"));
  // Views: dashed edges, the chain's root linked with the byte offset, the root's colour.
  EXPECT_TRUE(contains(dot, "n" + std::to_string(s.a.v) + " -> n" + std::to_string(s.r1.v) +
                                " [style=dashed, label=\"view +0\"]"));
  EXPECT_TRUE(contains(dot, "n" + std::to_string(s.a.v) + " -> n" + std::to_string(s.n.v) +
                                " [style=dashed, label=\"root +32\"]"));
  EXPECT_EQ(fill_of(s.r2), fill_of(s.a));
  EXPECT_TRUE(contains(dot, "arena " + std::to_string(plan.arena_size) + " B"));
}

TEST(Dot, EscapesNamesAndRejectsAForeignPlan) {
  ir::Graph g("we\"ird\\name");
  ir::Builder b(g);
  b.output(b.exp(b.input("a\"b<c>&d", Shape::of({2}))));
  std::string dot = to_dot(g);
  EXPECT_TRUE(contains(dot, "digraph \"we\\\"ird\\\\name\""));
  EXPECT_TRUE(contains(dot, "'a\\\"b<c>&d'"));
  Sample s;
  ir::MemoryPlan other = plan_memory(s.g);
  EXPECT_THROW(to_dot(g, &other), Error);
  EXPECT_THROW(to_svg(g, &other, SvgEngine::builtin), Error);

  std::string svg = to_svg(g, nullptr, SvgEngine::builtin);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_TRUE(contains(svg, "a&quot;b&lt;c&gt;&amp;d"));
}

TEST(Svg, BuiltinLayoutIsWellFormedAndDrawsEveryNode) {
  Sample s;
  const ir::MemoryPlan plan = plan_memory(s.g);
  for (const ir::MemoryPlan* p : {static_cast<const ir::MemoryPlan*>(nullptr), &plan}) {
    std::string svg = to_svg(s.g, p, SvgEngine::builtin);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    EXPECT_EQ(xml_problem(svg), "");
    for (NodeId id : s.g.ids())
      EXPECT_TRUE(contains(svg, "id=\"n" + std::to_string(id.v) + "\""));
    EXPECT_TRUE(contains(svg, "stroke-dasharray")); // the view edges (and, with a plan, reuse)
  }
}

TEST(Svg, GraphvizRendersWhenInstalledAndIsAClearErrorWhenNot) {
  Sample s;
  ir::MemoryPlan plan = plan_memory(s.g);
  if (graphviz_available()) {
    std::string svg = to_svg(s.g, &plan, SvgEngine::graphviz);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_TRUE(contains(svg, "<svg"));
    EXPECT_TRUE(contains(svg, "%" + std::to_string(s.mm.v) + " matmul"));
    EXPECT_EQ(xml_problem(to_svg(s.g, &plan)), "");
  }
  // Without `dot` on PATH: graphviz is an error naming the program, automatic falls back.
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent-rlx-path", 1);
  EXPECT_FALSE(graphviz_available());
  try {
    to_svg(s.g, &plan, SvgEngine::graphviz);
    ADD_FAILURE() << "no error without dot";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "dot")) << e.what();
  }
  std::string fallback = to_svg(s.g, &plan);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(xml_problem(fallback), "");
  EXPECT_TRUE(contains(fallback, "id=\"n0\""));
}

TEST(Svg, WellFormednessCheckerRejectsBrokenDocuments) {
  EXPECT_EQ(xml_problem("<svg><g></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<html></html>"), "");
}

} // namespace
} // namespace rlx::compile
