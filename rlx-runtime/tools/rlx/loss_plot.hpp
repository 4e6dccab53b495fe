// loss_plot.hpp: `rlx train --plot`: the training and evaluation loss curves as a standalone SVG
// (hand-written, no dependencies).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rlx::cli {

/// (step, loss) points of one curve.
using LossCurve = std::vector<std::pair<std::int64_t, double>>;

/// The SVG document: axes with ticks (step, loss), the training curve (per-step losses, averaged
/// into at most 400 points) as a polyline with class "train", the evaluation curve as a polyline
/// with class "eval" plus markers, a legend and \p title. Non-finite losses are skipped.
std::string loss_svg(const LossCurve& train, const LossCurve& eval, const std::string& title);

/// Writes loss_svg(...) to \p path; throws IoError when it cannot.
void write_loss_svg(const std::string& path, const LossCurve& train, const LossCurve& eval,
                    const std::string& title);

} // namespace rlx::cli
