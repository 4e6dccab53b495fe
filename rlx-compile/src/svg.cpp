// svg.cpp: to_dot, and to_svg through Graphviz `dot` or a built-in layered layout.
#include "rlx/compile/svg.hpp"

#include "graph_picture.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <unistd.h>

namespace rlx::compile {
namespace {

namespace fs = std::filesystem;
using detail::Picture;
using detail::PictureEdge;
using detail::PictureNode;

/// Escapes \p s for a double-quoted DOT string.
std::string dot_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

/// Escapes \p s for XML text and attribute values.
std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      // Control characters are not allowed in XML 1.0 text.
      out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
    }
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += (s.empty() ? "" : "\n") + l;
  return s;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Finds an executable called \p name on PATH.
fs::path find_program(const char* name) {
  const char* path = std::getenv("PATH");
  if (!path)
    return {};
  std::string_view rest(path);
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty())
      continue;
    fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p))
      return p;
  }
  return {};
}

/// A scratch directory removed when the object goes away.
class TempDir {
public:
  TempDir() {
    static std::atomic<unsigned> counter{0};
    path_ = fs::temp_directory_path() /
            ("rlx-svg-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

std::string render_graphviz(const std::string& dot) {
  fs::path prog = find_program("dot");
  if (prog.empty())
    throw Error("to_svg: the Graphviz 'dot' program is not on PATH (install graphviz, or use "
                "SvgEngine::builtin)");
  TempDir dir;
  fs::path in = dir.path() / "graph.dot", out = dir.path() / "graph.svg",
           err = dir.path() / "stderr.txt";
  {
    std::ofstream f(in, std::ios::binary);
    f << dot;
    if (!f)
      throw Error("to_svg: cannot write " + in.string());
  }
  std::string cmd = "'" + prog.string() + "' -Tsvg '" + in.string() + "' -o '" + out.string() +
                    "' 2> '" + err.string() + "'";
  int status = std::system(cmd.c_str());
  std::string svg = fs::exists(out) ? read_file(out) : std::string();
  if (status != 0 || svg.find("</svg>") == std::string::npos) {
    std::string why = read_file(err);
    if (auto nl = why.find('\n'); nl != std::string::npos)
      why.resize(nl);
    throw Error("to_svg: Graphviz 'dot' failed (status " + std::to_string(status) + ")" +
                (why.empty() ? std::string() : ": " + why));
  }
  return svg;
}

// ---- built-in layered layout --------------------------------------------------------------------

constexpr double kCharWidth = 6.6;  ///< average glyph width of the 11 px font
constexpr double kLineHeight = 14;  ///< text line pitch
constexpr double kPadding = 8;      ///< inside a node box
constexpr double kGapX = 24;        ///< between nodes of a row
constexpr double kGapY = 48;        ///< between rows
constexpr double kMargin = 20;      ///< around the drawing
constexpr double kTitleHeight = 28; ///< the title line above the drawing

struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};

std::string num(double v) {
  std::ostringstream ss;
  ss.precision(1);
  ss << std::fixed << v;
  return ss.str();
}

std::string render_builtin(const ir::Graph& g, const Picture& pic) {
  // Rows by depth: leaves at depth 0, every node one below its deepest operand.
  std::vector<int> depth(pic.nodes.size(), 0);
  int rows = 1;
  for (const PictureNode& pn : pic.nodes) {
    for (ir::NodeId in : g.node(ir::NodeId(pn.id)).inputs)
      if (in.v < pn.id)
        depth[pn.id] = std::max(depth[pn.id], depth[in.v] + 1);
    rows = std::max(rows, depth[pn.id] + 1);
  }
  std::vector<Box> box(pic.nodes.size());
  std::vector<double> row_height(static_cast<std::size_t>(rows), 0), row_width(box.size(), 0);
  std::vector<double> row_x(static_cast<std::size_t>(rows), kMargin);
  for (const PictureNode& pn : pic.nodes) {
    std::size_t longest = 0;
    for (const auto& l : pn.lines)
      longest = std::max(longest, l.size());
    Box& b = box[pn.id];
    b.w = static_cast<double>(longest) * kCharWidth + 2 * kPadding;
    b.h = static_cast<double>(pn.lines.size()) * kLineHeight + 2 * kPadding;
    auto r = static_cast<std::size_t>(depth[pn.id]);
    b.x = row_x[r];
    row_x[r] += b.w + kGapX;
    row_height[r] = std::max(row_height[r], b.h);
  }
  std::vector<double> row_y(static_cast<std::size_t>(rows), 0);
  double y = kMargin + kTitleHeight;
  for (std::size_t r = 0; r < row_y.size(); ++r) {
    row_y[r] = y;
    y += row_height[r] + kGapY;
  }
  double width = 0;
  for (double x : row_x)
    width = std::max(width, x);
  width = std::max(width, static_cast<double>(pic.title.size()) * kCharWidth + 2 * kMargin);
  double height = y - kGapY + kMargin;
  for (const PictureNode& pn : pic.nodes)
    box[pn.id].y = row_y[static_cast<std::size_t>(depth[pn.id])];

  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\""
    << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height)
    << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
    << "<title>" << xml_escape(pic.title) << "</title>\n"
    << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
       "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/>"
       "</marker></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
    << "<text x=\"" << num(kMargin) << "\" y=\"" << num(kMargin + 12) << "\" font-size=\"13\">"
    << xml_escape(pic.title) << "</text>\n";
  for (const PictureEdge& e : pic.edges) {
    const Box& a = box[e.from];
    const Box& b = box[e.to];
    double x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
    const char* dash = e.style == PictureEdge::Style::view    ? " stroke-dasharray=\"6,4\""
                       : e.style == PictureEdge::Style::reuse ? " stroke-dasharray=\"2,3\""
                                                              : "";
    const char* colour = e.style == PictureEdge::Style::reuse ? "#999999" : "#444444";
    s << "<line class=\"edge\" x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2)
      << "\" y2=\"" << num(y2) << "\" stroke=\"" << colour << "\"" << dash
      << " marker-end=\"url(#arrow)\"/>\n";
    if (!e.label.empty())
      s << "<text x=\"" << num((x1 + x2) / 2 + 4) << "\" y=\"" << num((y1 + y2) / 2)
        << "\" font-size=\"9\" fill=\"" << colour << "\">" << xml_escape(e.label) << "</text>\n";
  }
  for (const PictureNode& pn : pic.nodes) {
    const Box& b = box[pn.id];
    s << "<g class=\"node\" id=\"n" << pn.id << "\">";
    double rx = pn.shape == PictureNode::Shape::ellipse ? b.h / 2 : 4;
    s << "<rect x=\"" << num(b.x) << "\" y=\"" << num(b.y) << "\" width=\"" << num(b.w)
      << "\" height=\"" << num(b.h) << "\" rx=\"" << num(rx) << "\" fill=\"" << pn.fill
      << "\" stroke=\"#333333\" stroke-width=\"" << (pn.compound ? "2.5" : "1") << "\""
      << (pn.view ? " stroke-dasharray=\"5,3\"" : "") << "/>";
    double ty = b.y + kPadding + 11;
    for (const auto& line : pn.lines) {
      s << "<text x=\"" << num(b.x + kPadding) << "\" y=\"" << num(ty) << "\">" << xml_escape(line)
        << "</text>";
      ty += kLineHeight;
    }
    s << "</g>\n";
  }
  s << "</svg>\n";
  return s.str();
}

} // namespace

std::string to_dot(const ir::Graph& g, const ir::MemoryPlan* plan) {
  const Picture pic = detail::build_picture(g, plan);
  std::ostringstream s;
  s << "digraph " << dot_quote(g.name()) << " {\n"
    << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, label="
    << dot_quote(pic.title) << "];\n"
    << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
    << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#444444\"];\n";
  for (const PictureNode& pn : pic.nodes) {
    std::string style = "filled";
    if (pn.shape != PictureNode::Shape::ellipse)
      style += ",rounded";
    if (pn.compound)
      style += ",bold";
    if (pn.view)
      style += ",dashed";
    s << "  n" << pn.id << " [label=" << dot_quote(join_lines(pn.lines));
    if (pn.shape == PictureNode::Shape::ellipse)
      s << ", shape=ellipse";
    else if (pn.shape == PictureNode::Shape::box3d)
      s << ", shape=box3d";
    if (pn.compound)
      s << ", peripheries=2";
    s << ", style=" << dot_quote(style) << ", fillcolor=" << dot_quote(pn.fill) << "];\n";
  }
  for (const PictureEdge& e : pic.edges) {
    s << "  n" << e.from << " -> n" << e.to;
    switch (e.style) {
    case PictureEdge::Style::data:
      break;
    case PictureEdge::Style::view:
      s << " [style=dashed, label=" << dot_quote(e.label) << "]";
      break;
    case PictureEdge::Style::reuse:
      s << " [style=dotted, color=\"#999999\", fontcolor=\"#999999\", constraint=false, label="
        << dot_quote(e.label) << "]";
      break;
    }
    s << ";\n";
  }
  s << "}\n";
  return s.str();
}

std::string to_svg(const ir::Graph& g, const ir::MemoryPlan* plan, SvgEngine engine) {
  if (engine == SvgEngine::graphviz || (engine == SvgEngine::automatic && graphviz_available()))
    return render_graphviz(to_dot(g, plan));
  return render_builtin(g, detail::build_picture(g, plan));
}

bool graphviz_available() {
  return !find_program("dot").empty();
}

} // namespace rlx::compile
