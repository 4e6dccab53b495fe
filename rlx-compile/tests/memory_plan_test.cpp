// memory_plan_test.cpp: the memory planner: liveness, best-fit placement, views, scratch,
// alignment, the checker, and arena size against the lower bound on BERT-base, LLaMA and an MLP.
#include "rlx/compile/memory_plan.hpp"

#include "../src/heap.hpp"
#include "../src/liveness.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "testing/compile_testing.hpp"
#include "testing/workloads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace rlx::compile {
namespace {

using ir::NodeId;
using ir::Shape;
using ir::Storage;
using testing::expect_error;

std::int64_t align_up(std::int64_t v, std::int64_t a) {
  return (v + a - 1) / a * a;
}

bool pinned(Storage s) {
  return s == Storage::input || s == Storage::param || s == Storage::constant ||
         s == Storage::output;
}

// ---- independent checks (they share no code with the planner) ----------------------------------

/// The node owning the bytes \p id's slot refers to, following view storage to its end.
NodeId owner_of(const ir::Graph& g, const ir::MemoryPlan& p, NodeId id) {
  while (p.slot(id).storage == Storage::view)
    id = g.node(id).inputs.at(0);
  return id;
}

/// True when the plan makes \p id run a kernel.
bool runs(const ir::Graph& g, const ir::MemoryPlan& p, NodeId id) {
  Storage s = p.slot(id).storage;
  return !ir::is_leaf(g.node(id).op) && s != Storage::none && s != Storage::view;
}

/// Executes the plan on a shadow arena of owner tags, one tag per \p grain bytes: leaves are
/// stamped up front, every kernel stamps its scratch and result, and every read checks that its
/// operand's bytes still carry the stamp of the node that wrote them. \returns "" when every value
/// is intact whenever it is read (and every output and leaf at the end), else the first clobber.
std::string simulate(const ir::Graph& g, const ir::MemoryPlan& p, std::int64_t grain = 1) {
  const std::int64_t kScratchTag = -1000000;
  std::vector<std::int64_t> tag(static_cast<std::size_t>(p.arena_size / grain + 1), -1);
  auto chunks = [&](std::int64_t off, std::int64_t bytes) {
    return std::pair{off / grain, bytes == 0 ? off / grain : (off + bytes - 1) / grain + 1};
  };
  auto stamp = [&](std::int64_t off, std::int64_t bytes, std::int64_t t) {
    auto [b, e] = chunks(off, bytes);
    for (std::int64_t c = b; c < e; ++c)
      tag[static_cast<std::size_t>(c)] = t;
  };
  auto holds = [&](std::int64_t off, std::int64_t bytes, std::int64_t t) {
    auto [b, e] = chunks(off, bytes);
    for (std::int64_t c = b; c < e; ++c)
      if (tag[static_cast<std::size_t>(c)] != t)
        return false;
    return true;
  };
  auto intact = [&](NodeId v) {
    const ir::BufferSlot& s = p.slot(v);
    return holds(s.offset, s.bytes, owner_of(g, p, v).v);
  };
  std::multimap<std::uint32_t, const ir::ScratchSlot*> scratch;
  for (const auto& sc : p.scratch)
    scratch.emplace(sc.node.v, &sc);

  for (NodeId id : p.schedule) {
    const ir::BufferSlot& s = p.slot(id);
    if (s.storage != Storage::none && s.bytes != g.shape(id).bytes())
      return ir::describe(g, id) + " has a slot of the wrong size";
    if (s.offset < 0 || s.offset + s.bytes > p.arena_size)
      return ir::describe(g, id) + " lies outside the arena";
    if (ir::is_leaf(g.node(id).op))
      stamp(s.offset, s.bytes, id.v);
  }
  for (NodeId id : p.schedule) {
    if (!runs(g, p, id))
      continue;
    const ir::Node& n = g.node(id);
    const ir::BufferSlot& s = p.slot(id);
    for (NodeId in : n.inputs) {
      if (p.slot(owner_of(g, p, in)).storage == Storage::none && g.shape(in).bytes() > 0)
        return ir::describe(g, id) + " reads " + ir::describe(g, in) + ", which has no storage";
      if (!intact(in))
        return "before " + ir::describe(g, id) + " runs, its operand " + ir::describe(g, in) +
               " was overwritten";
    }
    auto [sb, se] = scratch.equal_range(id.v);
    for (auto it = sb; it != se; ++it)
      stamp(it->second->offset, it->second->bytes, kScratchTag - id.v);
    stamp(s.offset, s.bytes, id.v);
    for (NodeId in : n.inputs)
      if (!intact(in))
        return ir::describe(g, id) + " writes over its operand " + ir::describe(g, in);
    for (auto it = sb; it != se; ++it)
      if (!holds(it->second->offset, it->second->bytes, kScratchTag - id.v))
        return ir::describe(g, id) + " writes its result over its own scratch";
  }
  for (NodeId o : g.outputs())
    if (!intact(o))
      return "graph output " + ir::describe(g, o) + " was overwritten";
  for (NodeId id : p.schedule)
    if (ir::is_leaf(g.node(id).op) && !intact(id))
      return "leaf " + ir::describe(g, id) + " was overwritten";
  return "";
}

/// A buffer as the test sees it: bytes and the closed step range they must stay intact.
struct OwnBuffer {
  std::int64_t begin = 0, end = 0, reserved = 0;
  std::int32_t first = 0, last = 0;
  std::string who;
  bool is_pinned = false;
};

/// Lists the buffers of a plan with live ranges computed here from scratch: pinned regions live
/// for the whole run, a temporary from its node to the last kernel reading it through any view.
std::vector<OwnBuffer> own_buffers(const ir::Graph& g, const ir::MemoryPlan& p) {
  std::map<std::uint32_t, std::int32_t> pos;
  for (std::size_t i = 0; i < p.schedule.size(); ++i)
    pos[p.schedule[i].v] = static_cast<std::int32_t>(i);
  const auto last_step = static_cast<std::int32_t>(p.schedule.size()) - 1;
  std::vector<OwnBuffer> out;
  for (NodeId id : p.schedule) {
    const ir::BufferSlot& s = p.slot(id);
    if (s.storage == Storage::none || s.storage == Storage::view)
      continue;
    OwnBuffer b{s.offset,         s.offset + s.bytes, align_up(s.bytes, p.alignment),
                pos[id.v],        pos[id.v],          ir::describe(g, id),
                pinned(s.storage)};
    if (b.is_pinned) {
      b.first = 0;
      b.last = last_step;
    }
    for (NodeId u : p.schedule)
      if (runs(g, p, u))
        for (NodeId in : g.node(u).inputs)
          if (owner_of(g, p, in) == id)
            b.last = std::max(b.last, pos[u.v]);
    out.push_back(b);
  }
  for (const auto& sc : p.scratch)
    out.push_back({sc.offset, sc.offset + sc.bytes, align_up(sc.bytes, p.alignment), pos[sc.node.v],
                   pos[sc.node.v], "scratch of " + ir::describe(g, sc.node), false});
  return out;
}

/// \returns "" when no two buffers live at a common step share a byte, else the first pair.
std::string pairwise_overlaps(const ir::Graph& g, const ir::MemoryPlan& p) {
  std::vector<OwnBuffer> bufs = own_buffers(g, p);
  for (std::size_t i = 0; i < bufs.size(); ++i)
    for (std::size_t j = i + 1; j < bufs.size(); ++j) {
      const OwnBuffer& a = bufs[i];
      const OwnBuffer& b = bufs[j];
      bool time = a.first <= b.last && b.first <= a.last;
      bool bytes = a.begin < b.end && b.begin < a.end;
      if (time && bytes)
        return a.who + " and " + b.who + " overlap";
    }
  return "";
}

/// The lower bound recomputed here: pinned bytes plus the peak of temporaries live at one step.
std::int64_t own_lower_bound(const ir::Graph& g, const ir::MemoryPlan& p) {
  std::vector<OwnBuffer> bufs = own_buffers(g, p);
  std::int64_t pinned_total = 0, peak = 0;
  for (const auto& b : bufs)
    if (b.is_pinned)
      pinned_total += b.reserved;
  for (std::int32_t t = 0; t < static_cast<std::int32_t>(p.schedule.size()); ++t) {
    std::int64_t live = 0;
    for (const auto& b : bufs)
      if (!b.is_pinned && b.first <= t && t <= b.last)
        live += b.reserved;
    peak = std::max(peak, live);
  }
  return pinned_total + peak;
}

/// Every check on one plan; \p grain is the tag granularity of the shadow simulation.
void expect_sound(const ir::Graph& g, const ir::MemoryPlan& p, std::int64_t grain = 1) {
  SCOPED_TRACE("graph " + g.name());
  EXPECT_NO_THROW(check_memory_plan(g, p));
  EXPECT_EQ(simulate(g, p, grain), "");
  EXPECT_EQ(pairwise_overlaps(g, p), "");
  ASSERT_EQ(p.assignments.size(), g.size());
  for (NodeId id : g.ids()) {
    const ir::BufferSlot& s = p.slot(id);
    if (s.storage == Storage::none || s.storage == Storage::view)
      continue;
    EXPECT_EQ(s.offset % p.alignment, 0) << ir::describe(g, id);
    // Pinned regions sit below pinned_bytes, temporaries above: they can never meet.
    if (pinned(s.storage))
      EXPECT_LE(s.offset + s.bytes, p.pinned_bytes) << ir::describe(g, id);
    else
      EXPECT_GE(s.offset, p.pinned_bytes) << ir::describe(g, id);
  }
  for (const auto& sc : p.scratch) {
    EXPECT_EQ(sc.offset % p.alignment, 0);
    EXPECT_GE(sc.offset, p.pinned_bytes);
  }
  for (NodeId o : g.outputs()) {
    Storage s = p.slot(owner_of(g, p, o)).storage;
    EXPECT_TRUE(pinned(s)) << "output " << ir::describe(g, o) << " is not pinned";
  }
  EXPECT_EQ(p.lower_bound, own_lower_bound(g, p));
  EXPECT_LE(p.lower_bound, p.arena_size);
}

// ---- random graphs
// -------------------------------------------------------------------------------

const PlanOptions::Strategy kStrategies[] = {PlanOptions::Strategy::best_fit,
                                             PlanOptions::Strategy::first_fit};

TEST(MemoryPlanRandom, NoTwoLiveBuffersOverlapOnRandomDags) {
  int views = 0, shared = 0, scratch = 0;
  for (std::uint32_t seed = 0; seed < 400; ++seed) {
    ir::Graph g = testing::random_graph(seed);
    for (auto strategy : kStrategies) {
      PlanOptions opts;
      opts.strategy = strategy;
      const std::int64_t aligns[] = {1, 8, 64, 256};
      opts.alignment = aligns[seed % 4];
      std::set<std::uint32_t> asked;
      // About a quarter of the kernels ask for 1-200 bytes of scratch, deterministically.
      opts.scratch_bytes = [&](const ir::Graph&, NodeId id) -> std::int64_t {
        asked.insert(id.v);
        std::uint32_t h = (id.v + 1) * 2654435761u ^ seed;
        return h % 4 == 0 ? static_cast<std::int64_t>(h % 200 + 1) : 0;
      };
      ir::MemoryPlan p = plan_memory(g, opts);
      SCOPED_TRACE("seed " + std::to_string(seed));
      expect_sound(g, p);
      for (std::uint32_t v : asked) {
        EXPECT_FALSE(ir::is_leaf(g.node(NodeId(v)).op));
        EXPECT_FALSE(is_pure_view(g, NodeId(v)));
      }
      std::int64_t temp_sum = 0;
      for (const auto& bf : own_buffers(g, p))
        if (!bf.is_pinned)
          temp_sum += bf.reserved;
      shared += temp_sum > p.arena_size - p.pinned_bytes;
      scratch += static_cast<int>(p.scratch.size());
      for (const auto& s : p.assignments)
        views += s.storage == Storage::view;
    }
  }
  // The generator must exercise what it claims to: views, sharing and scratch.
  EXPECT_GT(views, 200);
  EXPECT_GT(shared, 200);
  EXPECT_GT(scratch, 200);
}

// ---- the checkers can fail
// -----------------------------------------------------------------------

/// x -> a = exp(x) -> b = log(a) -> c = a + b (output): a and b are live together at c.
struct Diamond {
  ir::Graph g{"diamond"};
  NodeId x, a, b, c;
  Diamond() {
    ir::Builder bld(g);
    x = bld.input("x", Shape::of({4, 8}));
    a = bld.exp(x);
    b = bld.log(a);
    c = bld.output(bld.add(a, b));
  }
};

TEST(MemoryPlanCheck, OverlappingLiveTemporariesAreReportedWithBothNodes) {
  Diamond d;
  ir::MemoryPlan p = plan_memory(d.g);
  expect_sound(d.g, p);
  p.assignments[d.b.v].offset = p.assignments[d.a.v].offset;
  expect_error("overlap not detected", [&] { check_memory_plan(d.g, p); },
               {"exp %1", "log %2", "overlap"});
  EXPECT_NE(simulate(d.g, p), "");
  EXPECT_NE(pairwise_overlaps(d.g, p), "");
}

TEST(MemoryPlanCheck, RejectsMisalignedOutOfArenaUnpinnedOutputAndBadViews) {
  Diamond d;
  const ir::MemoryPlan good = plan_memory(d.g);
  auto expect_rejected = [&](const ir::MemoryPlan& p, std::string_view needle) {
    expect_error("no error for " + std::string(needle), [&] { check_memory_plan(d.g, p); },
                 {needle});
  };
  ir::MemoryPlan p = good;
  p.assignments[d.a.v].offset += 4;
  expect_rejected(p, "not aligned");
  p = good;
  p.assignments[d.b.v].offset = p.arena_size;
  expect_rejected(p, "outside the arena");
  p = good;
  p.assignments[d.c.v].storage = Storage::temp;
  expect_rejected(p, "graph output");
  p = good;
  p.assignments[d.b.v].storage = Storage::none;
  expect_rejected(p, "no storage");
  p = good;
  p.assignments[d.a.v].storage = Storage::view;
  p.assignments[d.a.v].view_of = d.x;
  expect_rejected(p, "not a pure view");
  p = good;
  p.assignments[d.x.v].storage = Storage::temp;
  expect_rejected(p, "expected 'input'");
  p = good;
  p.scratch.push_back({d.x, p.pinned_bytes, 64});
  expect_rejected(p, "runs no kernel");
  p = good;
  std::swap(p.schedule[1], p.schedule[2]);
  expect_rejected(p, "later");
}

// ---- views
// ---------------------------------------------------------------------------------------

TEST(MemoryPlanViews, ReshapeChainsAliasTheirRoot) {
  ir::Graph g("reshapes");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 6}));
  NodeId a = b.exp(x);
  NodeId r1 = b.reshape(a, {24});
  NodeId r2 = b.reshape(r1, {2, 12});
  NodeId r3 = b.reshape(r2, {6, 4});
  b.output(b.neg(r3));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  for (NodeId r : {r1, r2, r3}) {
    EXPECT_TRUE(is_pure_view(g, r));
    EXPECT_EQ(view_byte_offset(g, r), 0);
    EXPECT_EQ(p.slot(r).storage, Storage::view);
    EXPECT_EQ(p.slot(r).view_of, a);
    EXPECT_EQ(p.slot(r).offset, p.slot(a).offset);
    EXPECT_EQ(p.slot(r).bytes, 96);
  }
}

TEST(MemoryPlanViews, ContiguousNarrowsAliasAtTheirByteOffset) {
  ir::Graph g("narrows");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 6}));
  NodeId a = b.exp(x);
  NodeId n1 = b.narrow(a, 0, 1, 2);      // rows 1..2: offset 1 * 6 * 4 = 24, 48 bytes
  NodeId n2 = b.narrow(n1, 0, 1, 1);     // row 2 of a: offset 48, 24 bytes
  NodeId full = b.narrow(a, 1, 0, 6);    // the whole axis: a view at offset 0
  NodeId strided = b.narrow(a, 1, 2, 3); // columns 2..4 of every row: not contiguous
  NodeId y = b.input("y", Shape::of({1, 4, 6}, ir::DType::f64));
  NodeId e = b.exp(y);
  NodeId lead1 = b.narrow(e, 1, 2, 2);     // leading dim 1: offset 2 * 6 * 8 = 96
  NodeId neg_axis = b.narrow(e, -1, 1, 2); // inner axis of [1, 4, 6]: not contiguous
  for (NodeId v : {n2, full, strided, lead1, neg_axis})
    b.output(b.neg(v));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);

  EXPECT_EQ(view_byte_offset(g, n1), 24);
  EXPECT_EQ(view_byte_offset(g, n2), 24);
  EXPECT_EQ(p.slot(n1).offset, p.slot(a).offset + 24);
  EXPECT_EQ(p.slot(n2).offset, p.slot(a).offset + 48);
  EXPECT_EQ(p.slot(n2).view_of, a);
  EXPECT_EQ(p.slot(n2).bytes, 24);
  EXPECT_EQ(p.slot(full).storage, Storage::view);
  EXPECT_EQ(p.slot(full).offset, p.slot(a).offset);
  EXPECT_EQ(view_byte_offset(g, lead1), 96);
  EXPECT_EQ(p.slot(lead1).offset, p.slot(e).offset + 96);
  EXPECT_EQ(p.slot(lead1).view_of, e);

  for (NodeId v : {strided, neg_axis}) {
    EXPECT_FALSE(is_pure_view(g, v));
    EXPECT_EQ(p.slot(v).storage, Storage::temp);
    EXPECT_THROW(view_byte_offset(g, v), Error);
  }
}

TEST(MemoryPlanViews, OnlySameDtypeCastIsAView) {
  ir::Graph g("casts");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 5}));
  NodeId a = b.exp(x);
  NodeId same = b.cast(a, ir::DType::f32);
  NodeId wide = b.cast(a, ir::DType::f64);
  b.output(b.neg(same));
  b.output(b.neg(wide));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  EXPECT_TRUE(is_pure_view(g, same));
  EXPECT_EQ(p.slot(same).storage, Storage::view);
  EXPECT_EQ(p.slot(same).offset, p.slot(a).offset);
  EXPECT_FALSE(is_pure_view(g, wide));
  EXPECT_EQ(p.slot(wide).storage, Storage::temp);
  EXPECT_EQ(p.slot(wide).bytes, 3 * 5 * 8);
}

TEST(MemoryPlanViews, OutputViewsPinTheirRootAndLeafViewsStayInTheLeafRegion) {
  ir::Graph g("output_views");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 8}));
  NodeId a = b.exp(x);
  NodeId r = b.output(b.reshape(a, {16}));    // an output that is a view of a temporary
  NodeId later = b.output(b.neg(b.tanh(a)));  // more work after a: a must stay intact
  NodeId rx = b.output(b.narrow(x, 0, 1, 1)); // an output that is a view of an input
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  EXPECT_EQ(p.slot(r).storage, Storage::view);
  EXPECT_EQ(p.slot(a).storage, Storage::output);
  EXPECT_LE(p.slot(a).offset + p.slot(a).bytes, p.pinned_bytes);
  EXPECT_EQ(p.slot(later).storage, Storage::output);
  EXPECT_EQ(p.slot(rx).storage, Storage::view);
  EXPECT_EQ(p.slot(rx).view_of, x);
  EXPECT_EQ(p.slot(rx).offset, p.slot(x).offset + 32);
}

TEST(MemoryPlan, DeadNodesGetNoStorageButLeavesAlwaysDo) {
  ir::Graph g("dead");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({4}));
  NodeId unused = b.input("unused", Shape::of({4}));
  NodeId w = b.param("w", Shape::of({4}));
  NodeId dead = b.exp(x);
  NodeId dead_view = b.reshape(dead, {2, 2});
  b.output(b.mul(x, w));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  EXPECT_EQ(p.slot(dead).storage, Storage::none);
  EXPECT_EQ(p.slot(dead_view).storage, Storage::none);
  EXPECT_EQ(p.slot(unused).storage, Storage::input);
  EXPECT_EQ(p.slot(w).storage, Storage::param);
}

// ---- sizes, scratch, alignment
// -------------------------------------------------------------------

/// x [10] f32 -> a = exp -> b = exp -> c = exp (output): a chain, where only neighbours meet.
struct Chain {
  ir::Graph g{"chain"};
  NodeId x, a, b, c;
  Chain() {
    ir::Builder bld(g);
    x = bld.input("x", Shape::of({10}));
    a = bld.exp(x);
    b = bld.exp(a);
    c = bld.output(bld.exp(b));
  }
};

TEST(MemoryPlan, ChainReusesMemoryAndHandComputedFiguresHold) {
  Chain ch;
  ir::MemoryPlan p = plan_memory(ch.g);
  expect_sound(ch.g, p);
  // Pinned: x (40 B) and c (40 B), 64 B each after alignment; temporaries a and b live together
  // at b's step, so two 64-byte slots.
  EXPECT_EQ(p.pinned_bytes, 128);
  EXPECT_EQ(p.lower_bound, 128 + 128);
  EXPECT_EQ(p.arena_size, 128 + 128);
  EXPECT_EQ(p.slot(ch.a).storage, Storage::temp);
  EXPECT_NE(p.slot(ch.a).offset, p.slot(ch.b).offset);
  // Four temporaries in a chain need only two slots: t1 and t3 share, t2 and t4 share.
  ir::Graph g("chain4");
  ir::Builder bld(g);
  NodeId x = bld.input("x", Shape::of({16}));
  NodeId t1 = bld.exp(x), t2 = bld.exp(t1), t3 = bld.exp(t2), t4 = bld.exp(t3);
  bld.output(bld.exp(t4));
  ir::MemoryPlan q = plan_memory(g);
  expect_sound(g, q);
  EXPECT_EQ(q.arena_size - q.pinned_bytes, 128);
  EXPECT_EQ(q.slot(t1).offset, q.slot(t3).offset);
  EXPECT_EQ(q.slot(t2).offset, q.slot(t4).offset);
}

TEST(MemoryPlan, ScratchIsPlannedOnlyDuringItsNode) {
  Chain ch;
  PlanOptions opts;
  opts.scratch_bytes = [&](const ir::Graph&, NodeId id) -> std::int64_t {
    return id == ch.b ? 1000 : 0;
  };
  ir::MemoryPlan p = plan_memory(ch.g, opts);
  expect_sound(ch.g, p);
  ASSERT_EQ(p.scratch.size(), 1u);
  EXPECT_EQ(p.scratch[0].node, ch.b);
  EXPECT_EQ(p.scratch[0].bytes, 1000);
  // At b's step a (64), b (64) and the scratch (1024 after alignment) are live.
  EXPECT_EQ(p.lower_bound, 128 + 64 + 64 + 1024);
  EXPECT_EQ(p.arena_size, p.lower_bound);

  opts.scratch_bytes = [](const ir::Graph&, NodeId) -> std::int64_t { return -1; };
  EXPECT_THROW(plan_memory(ch.g, opts), Error);
}

TEST(MemoryPlan, AlignmentIsConfigurableAndValidated) {
  ir::Graph g = testing::random_graph(7);
  for (std::int64_t a : {1, 2, 16, 128, 4096}) {
    PlanOptions opts;
    opts.alignment = a;
    ir::MemoryPlan p = plan_memory(g, opts);
    EXPECT_EQ(p.alignment, a);
    expect_sound(g, p);
  }
  for (std::int64_t bad : {0, -64, 48, 100}) {
    PlanOptions opts;
    opts.alignment = bad;
    EXPECT_THROW(plan_memory(g, opts), Error) << bad;
  }
}

// ---- bad input
// -----------------------------------------------------------------------------------

TEST(MemoryPlan, SymbolicGraphIsAClearError) {
  ir::Graph g("symbolic");
  ir::Builder b(g);
  b.output(b.exp(b.input("x", Shape({ir::Dim::sym("batch"), 4}))));
  expect_error("no error", [&] { plan_memory(g); }, {"batch"});
  ir::Graph bound = g.bind({{"batch", 3}});
  expect_sound(bound, plan_memory(bound));
}

TEST(MemoryPlan, CycleIsAClearError) {
  Diamond d;
  d.g.set_input(d.a, 0, d.b); // a now reads b, which reads a
  expect_error("no error", [&] { plan_memory(d.g); }, {"cycle"});
}

// ---- placement
// -----------------------------------------------------------------------------------

TEST(HeapPlacement, BestFitTakesTheSmallestGapFirstFitTheLowest) {
  // Decreasing size (ties: earlier start, then longer life): P [0, 128), Q [128, 192),
  // S [192, 256), R [256, 320). At steps 4-5 only Q and S are live, so T sees two gaps: 128 bytes
  // at 0 and 64 bytes at 256. Best fit takes the 64-byte gap, first fit the lowest offset.
  using detail::HeapBuffer;
  const std::vector<HeapBuffer> bufs = {
      {128, 0, 3, 0}, // P
      {64, 0, 9, 0},  // Q
      {64, 0, 3, 0},  // R
      {64, 0, 9, 0},  // S
      {64, 4, 5, 0},  // T
  };
  std::vector<HeapBuffer> best = bufs, first = bufs;
  EXPECT_EQ(detail::place_buffers(best, PlanOptions::Strategy::best_fit), 320);
  EXPECT_EQ(detail::place_buffers(first, PlanOptions::Strategy::first_fit), 320);
  const std::int64_t expected[] = {0, 128, 256, 192};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(best[i].offset, expected[i]) << i;
    EXPECT_EQ(first[i].offset, expected[i]) << i;
  }
  EXPECT_EQ(best[4].offset, 256);
  EXPECT_EQ(first[4].offset, 0);
  EXPECT_EQ(detail::peak_live_bytes(bufs, 10), 320);
}

// ---- the acceptance workloads
// --------------------------------------------------------------------

TEST(MemoryPlanWorkloads, ArenaWithinTenPercentOfTheLowerBound) {
  for (const auto& w : testing::acceptance_workloads()) {
    SCOPED_TRACE(w.name);
    ir::MemoryPlan p = plan_memory(w.mir);
    expect_sound(w.mir, p, p.alignment);
    const double temp_arena = static_cast<double>(p.arena_size - p.pinned_bytes);
    const double temp_lower = static_cast<double>(p.lower_bound - p.pinned_bytes);
    EXPECT_GT(temp_lower, 0);
    EXPECT_LE(static_cast<double>(p.arena_size), 1.10 * static_cast<double>(p.lower_bound));
    // The stricter figure: temporaries alone (pinned regions would hide waste).
    EXPECT_LE(temp_arena, 1.10 * temp_lower);
  }
}

// ---- tuple-typed nodes (ops with several results) ----------------------------------------------

TEST(MemoryPlanTuples, GetsAliasTheirPartsInOneTupleBuffer) {
  ir::Graph g("tuples");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({64, 32}));
  NodeId t = b.split(b.exp(x), 1, {8, 16, 8});
  auto parts = b.parts(t);
  NodeId a = b.neg(parts[0]);
  b.output(b.mul(a, a));
  b.output(b.neg(parts[2]));
  b.output(b.exp(parts[1]));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  EXPECT_EQ(p.slot(t).storage, Storage::temp);
  EXPECT_EQ(p.slot(t).bytes, g.shape(t).bytes());
  EXPECT_EQ(p.slot(t).bytes, 64 * 8 * 4 + 64 * 16 * 4 + 64 * 8 * 4);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_TRUE(is_pure_view(g, parts[i]));
    EXPECT_EQ(view_byte_offset(g, parts[i]), g.shape(t).part_offset(static_cast<std::int64_t>(i)));
    EXPECT_EQ(p.slot(parts[i]).storage, Storage::view);
    EXPECT_EQ(p.slot(parts[i]).view_of, t);
    EXPECT_EQ(p.slot(parts[i]).offset,
              p.slot(t).offset + g.shape(t).part_offset(static_cast<std::int64_t>(i)));
    EXPECT_EQ(p.slot(parts[i]).bytes, g.shape(parts[i]).bytes());
  }
}

TEST(MemoryPlanTuples, TheTupleLivesUntilTheLastReaderOfAnyPart) {
  ir::Graph g("tuples");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({256}));
  NodeId t = b.split(b.neg(x), 0, {128, 128});
  NodeId a = b.exp(b.get(t, 0));
  NodeId c = b.exp(a);
  NodeId last_reader = b.add(c, b.get(t, 1)); // part 1 is read late
  NodeId d = b.exp(b.exp(last_reader));
  b.output(d);
  detail::Liveness lv = detail::analyze_liveness(g, g.ids());
  EXPECT_EQ(lv.last[t.v], lv.pos[last_reader.v]);
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  // After its last reader the tuple's bytes are free: the planner may (and here does) reuse them.
  std::int64_t temps = 0;
  for (NodeId id : g.ids())
    if (p.slot(id).storage == Storage::temp)
      temps += align_up(p.slot(id).bytes, p.alignment);
  EXPECT_LT(p.arena_size - p.pinned_bytes, temps);
}

TEST(MemoryPlanTuples, AnOutputPartPinsItsTupleAndUnreadTuplesGetNoStorage) {
  ir::Graph g("tuples");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({6, 4}));
  NodeId t = b.split(b.exp(x), 0, {2, 4});
  NodeId dead = b.split(x, 1, {1, 3});
  b.get(dead, 1); // read by nobody
  b.output(b.get(t, 1));
  ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  EXPECT_EQ(p.slot(t).storage, Storage::output);
  EXPECT_EQ(p.slot(dead).storage, Storage::none);
}

} // namespace
} // namespace rlx::compile

namespace rlx::compile {
namespace {

// A gradient graph's shape, hand-written: a forward chain saving its activations, the loss, then
// the backward reading them in reverse order (tanh' = 1 - y^2 and sigmoid' = s (1 - s) from the
// saved outputs). Each saved activation must stay live until its last backward reader and no
// longer: its bytes are free for the backward's temporaries after that.
TEST(MemoryPlanLiveness, SavedActivationsLiveUntilTheirLastBackwardUse) {
  ir::Graph g("grad_shape");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({64, 64}));
  NodeId h1 = b.tanh(x);     // saved: read by the last backward step
  NodeId h2 = b.sigmoid(h1); // saved: read by the first backward step
  NodeId h3 = b.exp(h2);     // saved: read by the first backward step
  NodeId loss = b.sum(h3, {});
  NodeId one = b.scalar(1.0, ir::DType::f32);
  NodeId d_h2 = h3; // d loss / d h2 = exp(h2) = h3
  NodeId d_h1 = b.mul(d_h2, b.mul(h2, b.sub(one, h2)));
  NodeId t1 = b.exp(d_h1); // backward temporaries after h2 / h3 died
  NodeId t2 = b.log(t1);
  NodeId d_x = b.mul(t2, b.sub(one, b.mul(h1, h1)));
  b.output(loss);
  b.output(d_x);
  const detail::Liveness lv = detail::analyze_liveness(g, g.ids());
  auto last_reader = [&](NodeId v) {
    std::int32_t last = -1;
    for (NodeId u : g.users(v))
      last = std::max(last, lv.pos[u.v]);
    return last;
  };
  for (NodeId saved : {h1, h2, h3}) {
    SCOPED_TRACE(ir::describe(g, saved));
    EXPECT_EQ(lv.first[saved.v], lv.pos[saved.v]);
    EXPECT_EQ(lv.last[saved.v], last_reader(saved)); // exactly the last backward use
  }
  EXPECT_LT(lv.last[h3.v], lv.pos[t1.v]); // h2 / h3 are dead before the late backward
  EXPECT_GT(lv.last[h1.v], lv.pos[t2.v]); // h1 is live across it
  const ir::MemoryPlan p = plan_memory(g);
  expect_sound(g, p);
  // The late backward temporaries reuse the bytes of the dead activations: the arena's shared
  // part is smaller than all temporaries side by side.
  std::int64_t temps = 0;
  for (NodeId id : g.ids())
    if (p.slot(id).storage == Storage::temp)
      temps += align_up(p.slot(id).bytes, p.alignment);
  EXPECT_LT(p.arena_size - p.pinned_bytes, temps);
  EXPECT_EQ(p.slot(h1).storage, Storage::temp);
}

} // namespace
} // namespace rlx::compile
