// heap.cpp: best-fit (and, for comparison, first-fit) placement of buffers with live ranges.
//
// The problem is dynamic storage allocation: intervals in time, each needing a block of bytes,
// to be packed into the shortest offset space with no two time-overlapping blocks sharing bytes.
// The peak sum of live sizes is a lower bound; the heuristic below is the one XLA's heap simulator
// uses (GlobalDecreasingSizeBestFitHeap) and lands within a few percent of that bound on
// transformer graphs:
//   1. Sort buffers by decreasing size (ties: earlier start first, then longer life).
//   2. For each buffer, list the byte ranges taken by already-placed buffers whose live range
//      overlaps its own; the complement within [0, extent) is a set of free gaps.
//   3. Take the smallest gap that holds the buffer (best fit keeps large gaps for later large
//      buffers); when none does, place it right after the highest conflicting buffer.
// Placing big buffers first means small ones fill the holes big ones leave. Because the outcome
// depends on the order, a second order (decreasing size x lifetime, which favours long-lived
// buffers) is tried too and the smaller extent wins.
#include "heap.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

namespace rlx::compile::detail {
namespace {

using Range = std::pair<std::int64_t, std::int64_t>; // [begin, end) in bytes

bool live_together(const HeapBuffer& a, const HeapBuffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

/// Places \p bufs in \p order; \returns the extent.
std::int64_t place_in_order(std::vector<HeapBuffer>& bufs, const std::vector<std::size_t>& order,
                            PlanOptions::Strategy strategy) {
  std::vector<std::size_t> placed;
  placed.reserve(bufs.size());
  std::vector<Range> busy;
  std::int64_t extent = 0;
  for (std::size_t i : order) {
    HeapBuffer& b = bufs[i];
    b.offset = 0;
    if (b.size == 0)
      continue;
    busy.clear();
    for (std::size_t p : placed)
      if (live_together(b, bufs[p]))
        busy.emplace_back(bufs[p].offset, bufs[p].offset + bufs[p].size);
    std::sort(busy.begin(), busy.end());

    std::int64_t best = -1;
    std::int64_t best_len = std::numeric_limits<std::int64_t>::max();
    auto consider = [&](std::int64_t begin, std::int64_t len) {
      if (len < b.size)
        return;
      bool take = strategy == PlanOptions::Strategy::first_fit ? best < 0 : len < best_len;
      if (take) {
        best = begin;
        best_len = len;
      }
    };
    std::int64_t cursor = 0; // end of the busy ranges seen so far
    for (const auto& [begin, end] : busy) {
      if (begin > cursor)
        consider(cursor, begin - cursor);
      cursor = std::max(cursor, end);
    }
    consider(cursor, extent - cursor); // the free top of the space, if any
    if (best < 0)
      best = cursor; // nothing holds it: grow the space
    b.offset = best;
    extent = std::max(extent, best + b.size);
    placed.push_back(i);
  }
  return extent;
}

} // namespace

std::int64_t place_buffers(std::vector<HeapBuffer>& bufs, PlanOptions::Strategy strategy) {
  std::vector<std::size_t> by_size(bufs.size());
  std::iota(by_size.begin(), by_size.end(), std::size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
    const HeapBuffer& x = bufs[a];
    const HeapBuffer& y = bufs[b];
    if (x.size != y.size)
      return x.size > y.size;
    if (x.first != y.first)
      return x.first < y.first;
    return x.last > y.last;
  });
  std::int64_t extent = place_in_order(bufs, by_size, strategy);
  if (strategy == PlanOptions::Strategy::first_fit)
    return extent;

  std::vector<std::size_t> by_area = by_size;
  auto area = [&](std::size_t i) {
    return static_cast<double>(bufs[i].size) * (bufs[i].last - bufs[i].first + 1);
  };
  std::stable_sort(by_area.begin(), by_area.end(),
                   [&](std::size_t a, std::size_t b) { return area(a) > area(b); });
  std::vector<HeapBuffer> alt = bufs;
  std::int64_t alt_extent = place_in_order(alt, by_area, strategy);
  if (alt_extent < extent) {
    bufs = std::move(alt);
    extent = alt_extent;
  }
  return extent;
}

std::int64_t peak_live_bytes(const std::vector<HeapBuffer>& bufs, std::int32_t steps) {
  std::vector<std::int64_t> delta(static_cast<std::size_t>(steps) + 1, 0);
  for (const HeapBuffer& b : bufs) {
    delta[static_cast<std::size_t>(b.first)] += b.size;
    delta[static_cast<std::size_t>(b.last) + 1] -= b.size;
  }
  std::int64_t live = 0, peak = 0;
  for (std::int64_t d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

} // namespace rlx::compile::detail
