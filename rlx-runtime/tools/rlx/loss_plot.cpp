// loss_plot.cpp: the SVG loss plot of `rlx train --plot`.
#include "loss_plot.hpp"

#include "rlx/runtime/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace rlx::cli {

namespace {

constexpr double kW = 720, kH = 420, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
    case '&':
      r += "&amp;";
      break;
    case '<':
      r += "&lt;";
      break;
    case '>':
      r += "&gt;";
      break;
    case '"':
      r += "&quot;";
      break;
    default:
      r += c;
    }
  }
  return r;
}

LossCurve finite(const LossCurve& c) {
  LossCurve r;
  for (const auto& p : c)
    if (std::isfinite(p.second))
      r.push_back(p);
  return r;
}

/// At most \p n points: consecutive points averaged (step and loss).
LossCurve thin(const LossCurve& c, std::size_t n) {
  if (c.size() <= n)
    return c;
  LossCurve r;
  const std::size_t per = (c.size() + n - 1) / n;
  for (std::size_t i = 0; i < c.size(); i += per) {
    const std::size_t end = std::min(c.size(), i + per);
    double s = 0, l = 0;
    for (std::size_t k = i; k < end; ++k) {
      s += static_cast<double>(c[k].first);
      l += c[k].second;
    }
    const double m = static_cast<double>(end - i);
    r.emplace_back(static_cast<std::int64_t>(std::llround(s / m)), l / m);
  }
  return r;
}

/// About five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double span = hi - lo > 0 ? hi - lo : 1;
  const double raw = span / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step)
    t.push_back(std::abs(v) < 1e-12 * step ? 0 : v);
  return t;
}

} // namespace

std::string loss_svg(const LossCurve& train_in, const LossCurve& eval_in,
                     const std::string& title) {
  const LossCurve train = thin(finite(train_in), 400), eval = finite(eval_in);
  double x0 = 0, x1 = 1, y0 = INFINITY, y1 = -INFINITY;
  for (const LossCurve* c : {&train, &eval})
    for (const auto& [s, l] : *c) {
      x1 = std::max(x1, static_cast<double>(s));
      y0 = std::min(y0, l);
      y1 = std::max(y1, l);
    }
  if (!(y0 <= y1)) {
    y0 = 0;
    y1 = 1;
  }
  if (y1 - y0 < 1e-12) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  const double pad = 0.05 * (y1 - y0);
  y0 = y0 >= 0 ? std::max(0.0, y0 - pad) : y0 - pad; // a non-negative loss keeps a 0 floor
  y1 += pad;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double s) { return kLeft + (s - x0) / (x1 - x0) * pw; };
  auto py = [&](double l) { return kTop + (1 - (l - y0) / (y1 - y0)) * ph; };

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" viewBox=\"0 0 " << kW << " " << kH << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << escape(title) << "</text>\n";
  // Grid, ticks and labels.
  o << "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double t : ticks(x0, x1))
    o << "<line x1=\"" << num(px(t)) << "\" y1=\"" << kTop << "\" x2=\"" << num(px(t)) << "\" y2=\""
      << kTop + ph << "\"/>\n";
  for (double t : ticks(y0, y1))
    o << "<line x1=\"" << kLeft << "\" y1=\"" << num(py(t)) << "\" x2=\"" << kLeft + pw
      << "\" y2=\"" << num(py(t)) << "\"/>\n";
  o << "</g>\n<g fill=\"#333\">\n";
  for (double t : ticks(x0, x1))
    o << "<text x=\"" << num(px(t)) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
      << num(t) << "</text>\n";
  for (double t : ticks(y0, y1))
    o << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(py(t) + 4) << "\" text-anchor=\"end\">"
      << num(t) << "</text>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 10
    << "\" text-anchor=\"middle\">step</text>\n"
    << "<text transform=\"translate(16 " << kTop + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">loss</text>\n</g>\n";
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  auto polyline = [&](const LossCurve& c, const char* cls, const char* color) {
    o << "<polyline class=\"" << cls << "\" fill=\"none\" stroke=\"" << color
      << "\" stroke-width=\"1.8\" points=\"";
    for (std::size_t i = 0; i < c.size(); ++i)
      o << (i ? " " : "") << num(px(static_cast<double>(c[i].first))) << ","
        << num(py(c[i].second));
    o << "\"/>\n";
  };
  polyline(train, "train", "#1f77b4");
  polyline(eval, "eval", "#d62728");
  for (const auto& [s, l] : eval)
    o << "<circle cx=\"" << num(px(static_cast<double>(s))) << "\" cy=\"" << num(py(l))
      << "\" r=\"3\" fill=\"#d62728\"/>\n";
  // Legend.
  const double lx = kLeft + pw - 150, ly = kTop + 12;
  o << "<g>\n<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 24 << "\" y2=\"" << ly
    << "\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n<text x=\"" << lx + 30 << "\" y=\"" << ly + 4
    << "\">training loss</text>\n<line x1=\"" << lx << "\" y1=\"" << ly + 18 << "\" x2=\""
    << lx + 24 << "\" y2=\"" << ly + 18 << "\" stroke=\"#d62728\" stroke-width=\"2\"/>\n<text x=\""
    << lx + 30 << "\" y=\"" << ly + 22 << "\">evaluation loss</text>\n</g>\n</svg>\n";
  return o.str();
}

void write_loss_svg(const std::string& path, const LossCurve& train, const LossCurve& eval,
                    const std::string& title) {
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw runtime::IoError("--plot: cannot write '" + path + "'");
  f << loss_svg(train, eval, title);
  if (!f)
    throw runtime::IoError("--plot: cannot write '" + path + "'");
}

} // namespace rlx::cli
