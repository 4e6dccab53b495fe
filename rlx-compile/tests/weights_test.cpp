// weights_test.cpp: WeightRegion: weights written once and read in place, storage that never
// moves, derived copies refreshed on write, plain bytes dropped and restored, mapped views.
#include "rlx/compile/weights.hpp"

#include "rlx/ir/error.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rlx;
using compile::WeightRegion;
using ir::Shape;
using ir::Tensor;

Tensor ramp(std::int64_t n, float scale) {
  Tensor t(Shape::of({n}));
  for (std::int64_t i = 0; i < n; ++i)
    t.data<float>()[static_cast<std::size_t>(i)] = scale * static_cast<float>(i + 1);
  return t;
}

/// A derived copy that stores the weight negated (a stand-in for a packed layout).
struct Negated {
  std::vector<float> values;
  int refreshes = 0;
};

std::shared_ptr<WeightRegion::Derived> negated_copy(std::int64_t n, bool restorable = true) {
  auto state = std::make_shared<Negated>();
  state->values.resize(static_cast<std::size_t>(n));
  auto d = std::make_shared<WeightRegion::Derived>();
  Negated* s = state.get();
  d->kind = "negated";
  d->bytes = n * 4;
  d->refresh = [s](const std::byte* plain) {
    const auto* f = reinterpret_cast<const float*>(plain);
    for (std::size_t i = 0; i < s->values.size(); ++i)
      s->values[i] = -f[i];
    ++s->refreshes;
  };
  if (restorable)
    d->restore = [s](std::byte* plain) {
      auto* f = reinterpret_cast<float*>(plain);
      for (std::size_t i = 0; i < s->values.size(); ++i)
        f[i] = -s->values[i];
    };
  d->state = state;
  return d;
}

Negated& state_of(const std::shared_ptr<WeightRegion::Derived>& d) {
  return *static_cast<Negated*>(d->state.get());
}

TEST(WeightRegion, StorageIsStableAndWritesLandInPlace) {
  WeightRegion r;
  std::byte* at = r.storage("w", Shape::of({1000}));
  EXPECT_FALSE(r.is_set("w"));
  r.write("w", ramp(1000, 0.5f));
  r.write("w", ramp(1000, 2.0f)); // a second write lands at the same address
  EXPECT_EQ(r.storage("w", Shape::of({1000})), at);
  EXPECT_TRUE(r.is_set("w"));
  EXPECT_EQ(reinterpret_cast<const float*>(at)[9], 20.0f);
  EXPECT_TRUE(r.read("w").identical(ramp(1000, 2.0f)));
  EXPECT_EQ(r.plain_bytes(), 4000);
}

TEST(WeightRegion, TypesAreChecked) {
  WeightRegion r;
  r.write("w", ramp(4, 1));
  auto message = [&](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([&] { r.write("w", ramp(5, 1)); }).find("weight 'w' is [4] f32, given [5] f32"),
            std::string::npos);
  EXPECT_NE(message([&] { r.storage("w", Shape::of({4}, ir::DType::f64)); }).find("given [4] f64"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)r.read("nope"); }).find("no weight named 'nope'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              r.storage("s", Shape({ir::Dim::sym("n")}, ir::DType::f32));
            }).find("static type"),
            std::string::npos);
}

TEST(WeightRegion, DerivedCopiesReplaceUnreadPlainBytes) {
  WeightRegion r;
  const int reader = 0;
  r.write("w", ramp(5000, 1));
  auto copy = negated_copy(5000);
  r.add_derived("w", copy, &reader);
  EXPECT_EQ(state_of(copy).values[2], -3.0f);
  r.drop_unread(); // only the copy is read: the plain bytes go
  EXPECT_FALSE(r.plain_held("w"));
  EXPECT_EQ(r.plain_bytes(), 0);
  EXPECT_EQ(r.derived_bytes(), 20000);
  // A write updates the copy alone; read() and a new plain reader restore the value from it.
  r.write("w", ramp(5000, 3));
  EXPECT_FALSE(r.plain_held("w"));
  EXPECT_EQ(state_of(copy).values[2], -9.0f);
  EXPECT_TRUE(r.read("w").identical(ramp(5000, 3)));
  const int plain_reader = 0;
  r.add_plain_reader("w", &plain_reader);
  EXPECT_TRUE(r.plain_held("w"));
  EXPECT_EQ(reinterpret_cast<const float*>(r.storage("w", Shape::of({5000})))[2], 9.0f);
  r.drop_unread(); // a plain reader keeps them
  EXPECT_TRUE(r.plain_held("w"));
  // With a plain reader, writes go to both.
  r.write("w", ramp(5000, 4));
  EXPECT_EQ(reinterpret_cast<const float*>(r.storage("w", Shape::of({5000})))[2], 12.0f);
  EXPECT_EQ(state_of(copy).values[2], -12.0f);
}

TEST(WeightRegion, CopiesOfAWeightNotYetSetAreFilledOnceWhenItIsWritten) {
  // A model compiled before its weights are loaded: the copy is not filled from the zero plain
  // bytes at add_derived, only by the write (one fill per copy, not two).
  WeightRegion r;
  const int reader = 0;
  r.storage("w", Shape::of({5000}));
  auto copy = negated_copy(5000);
  r.add_derived("w", copy, &reader);
  EXPECT_EQ(state_of(copy).refreshes, 0);
  EXPECT_FALSE(r.plain_held("w")); // given back all the same
  // A plain reader of the unset weight gets zeros (not bytes restored from the unfilled copy).
  const int plain_reader = 0;
  state_of(copy).values.assign(5000, 7.0f); // what an unfilled copy may hold
  r.add_plain_reader("w", &plain_reader);
  EXPECT_EQ(reinterpret_cast<const float*>(r.storage("w", Shape::of({5000})))[2], 0.0f);
  r.release(&plain_reader);
  r.drop_unread();
  r.write("w", ramp(5000, 2));
  EXPECT_EQ(state_of(copy).refreshes, 1);
  EXPECT_EQ(state_of(copy).values[2], -6.0f);
  EXPECT_TRUE(r.read("w").identical(ramp(5000, 2)));
  // Once set, a new copy is filled at once.
  auto second = negated_copy(5000);
  second->kind = "negated-2";
  r.add_derived("w", second, &reader);
  EXPECT_EQ(state_of(second).refreshes, 1);
  EXPECT_EQ(state_of(second).values[4], -10.0f);
}

TEST(WeightRegion, CopiesThatCannotRestoreKeepThePlainBytes) {
  WeightRegion r;
  const int reader = 0;
  r.write("w", ramp(100, 1));
  r.add_derived("w", negated_copy(100, /*restorable=*/false), &reader);
  r.drop_unread();
  EXPECT_TRUE(r.plain_held("w"));
}

TEST(WeightRegion, ReleasedReadersFreeTheirCopies) {
  WeightRegion r;
  const int a = 0, b = 0;
  r.write("w", ramp(100, 1));
  auto copy = negated_copy(100);
  r.add_derived("w", copy, &a);
  r.use_derived("w", copy, &b);
  r.add_plain_reader("w", &b);
  r.release(&a);
  EXPECT_EQ(r.derived("w").size(), 1u); // b still reads it
  r.release(&b);
  EXPECT_TRUE(r.derived("w").empty());
  // When the copy is the only current value, it stays.
  auto only = negated_copy(100);
  r.add_derived("w", only, &a);
  r.drop_unread();
  r.write("w", ramp(100, 7));
  r.release(&a);
  EXPECT_EQ(r.derived("w").size(), 1u);
  EXPECT_TRUE(r.read("w").identical(ramp(100, 7)));
}

TEST(WeightRegion, AdoptedBytesAreReadInPlaceUntilStorageExists) {
  WeightRegion r;
  auto bytes = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  const auto* data = reinterpret_cast<const std::byte*>(bytes->data());
  EXPECT_TRUE(r.adopt("w", Shape::of({4}), data, bytes));
  EXPECT_EQ(r.storage("w", Shape::of({4})), data);
  EXPECT_TRUE(r.read("w").identical(Tensor::from<float>({4}, {1, 2, 3, 4})));
  // Bound already: a second adopt changes nothing (the caller writes instead).
  std::vector<float> other{5, 6, 7, 8};
  EXPECT_FALSE(r.adopt("w", Shape::of({4}), reinterpret_cast<const std::byte*>(other.data()), {}));
  r.storage("v", Shape::of({4}));
  EXPECT_FALSE(r.adopt("v", Shape::of({4}), reinterpret_cast<const std::byte*>(other.data()), {}));
}

TEST(HostPages, AreZeroAndDiscardable) {
  compile::HostPages p(10000);
  ASSERT_NE(p.data(), nullptr);
  EXPECT_GE(p.size(), 10000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.data()) % 4096, 0u);
  EXPECT_EQ(p.data()[9999], std::byte{0});
  p.data()[5] = std::byte{7};
  p.discard();
  EXPECT_EQ(p.data()[5], std::byte{0});
}

} // namespace
