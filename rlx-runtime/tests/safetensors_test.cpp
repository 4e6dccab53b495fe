// safetensors_test.cpp: safetensors round trips, header validation and a mutation fuzz.
#include "rlx/runtime/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace rlx::runtime {
namespace {

using ir::DType;
using ir::Tensor;

/// One tensor of every dtype rlx reads, with distinct, non-trivial contents.
TensorMap every_dtype() {
  TensorMap m;
  m["f32"] = Tensor::from<float>({2, 3}, {1.5f, -2.f, 3.25f, 0.f, -0.f, 1e-30f});
  m["f64"] = Tensor::from<double>({3}, {1e300, -2.5, 0.125});
  m["f16"] = Tensor::from<ir::f16_t>({2}, {ir::float_to_f16(1.5f), ir::float_to_f16(-65504.f)});
  m["bf16"] = Tensor::from<ir::bf16_t>({1, 2}, {ir::float_to_bf16(3.f), ir::float_to_bf16(-1e30f)});
  m["i8"] = Tensor::from<std::int8_t>({4}, {-128, -1, 0, 127});
  m["i32"] = Tensor::from<std::int32_t>({2}, {-2147483647 - 1, 7});
  m["i64"] = Tensor::from<std::int64_t>({2, 1}, {-(std::int64_t{1} << 62), 42});
  m["u8"] = Tensor::from<std::uint8_t>({3}, {0, 200, 255});
  m["bool"] = Tensor::from<bool>({2, 2}, {true, false, false, true});
  m["scalar"] = Tensor::scalar<float>(7.f);
  m["empty"] = Tensor(ir::Shape::of({0, 5}));
  return m;
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("rlx_st_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
          name);
}

/// A file image with the given header text and \p data_bytes zero bytes of data.
std::vector<std::byte> image(const std::string& header, std::size_t data_bytes) {
  std::vector<std::byte> out(8 + header.size() + data_bytes);
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

/// The message of the IoError that parsing \p bytes throws ("" when it does not throw).
std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse_safetensors(bytes, "buf");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripInMemoryEveryDType) {
  TensorMap m = every_dtype();
  SafetensorsFile back = parse_safetensors(encode_safetensors(m, {{"format", "pt"}}));
  ASSERT_EQ(back.tensors.size(), m.size());
  for (const auto& [name, t] : m) {
    ASSERT_TRUE(back.tensors.count(name)) << name;
    EXPECT_TRUE(back.tensors.at(name).identical(t)) << name;
  }
  EXPECT_EQ(back.metadata.at("format"), "pt");
}

TEST(Safetensors, RoundTripThroughAFile) {
  TensorMap m = every_dtype();
  auto path = temp_path("roundtrip.safetensors");
  write_safetensors(path, m);
  SafetensorsFile back = read_safetensors(path);
  for (const auto& [name, t] : m)
    EXPECT_TRUE(back.tensors.at(name).identical(t)) << name;
  SafetensorsReader reader(path);
  const auto& listing = reader.entries();
  ASSERT_EQ(listing.size(), m.size());
  EXPECT_EQ(listing[0].name, "bf16"); // name order
  EXPECT_EQ(listing[0].shape, ir::Shape::of({1, 2}, DType::bf16));
  ASSERT_NE(reader.find("i64"), nullptr);
  EXPECT_EQ(reader.find("nope"), nullptr);
  EXPECT_TRUE(reader.read("i64").identical(m.at("i64")));
  EXPECT_THROW(reader.read("nope"), IoError);
  std::filesystem::remove(path);
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  auto bytes = encode_safetensors({{"a", Tensor::scalar<float>(1.f)}});
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 4);
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Bytes as the reference implementation writes them: F32 [2] = {1, 2} and I64 [1] = {-3}.
  std::string h = R"({"b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
                  R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  auto bytes = image(h, 16);
  float a[2] = {1.f, 2.f};
  std::int64_t b = -3;
  std::memcpy(bytes.data() + 8 + h.size(), a, 8);
  std::memcpy(bytes.data() + 8 + h.size() + 8, &b, 8);
  auto f = parse_safetensors(bytes);
  EXPECT_EQ(f.tensors.at("a").data<float>()[1], 2.f);
  EXPECT_EQ(f.tensors.at("b").data<std::int64_t>()[0], -3);
}

TEST(Safetensors, RejectsEachBrokenRule) {
  struct Case {
    std::string header;
    std::size_t data;
    std::string expect;
  };
  const Case cases[] = {
      {"not json", 0, "not valid JSON"},
      {"[1, 2]", 0, "not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "outside the data section"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "needs 12 bytes"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "end before they begin"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
       8, "overlap"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "belong to no tensor"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8, "belong to no tensor"},
      {R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype"},
      {R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", 4, "not supported"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-negative"},
      {R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "non-negative"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "[begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[1]}})", 4, "[begin, end]"},
      {R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, "dtype"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4, "unexpected key"},
      {R"({"a":[1]})", 0, "not an object"},
      {R"({"__metadata__":{"k":1}})", 0, "not a string"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4,
       "needs more bytes"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       4, "appears twice"},
  };
  for (const auto& c : cases) {
    std::string msg = error_of(image(c.header, c.data));
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << "header " << c.header << " gave: '" << msg << "'";
  }
}

TEST(Safetensors, RejectsBadBoolBytes) {
  std::string h = R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})";
  auto bytes = image(h, 2);
  bytes.back() = std::byte{2};
  EXPECT_NE(error_of(bytes).find("expected 0 or 1"), std::string::npos);
}

TEST(Safetensors, TruncatedFilesAreClearErrors) {
  auto full = encode_safetensors(every_dtype());
  EXPECT_NE(error_of({}).find("truncated"), std::string::npos);
  for (std::size_t n : {std::size_t{3}, std::size_t{8}, std::size_t{20}, full.size() - 1}) {
    std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(error_of(cut), "") << "cut at " << n;
  }
  // A huge header length is rejected before anything is allocated.
  auto huge = full;
  std::uint64_t n = std::uint64_t{1} << 60;
  std::memcpy(huge.data(), &n, 8);
  EXPECT_NE(error_of(huge).find("implausible"), std::string::npos);
}

TEST(Safetensors, TruncatedFileOnDisk) {
  auto full = encode_safetensors(every_dtype());
  auto path = temp_path("cut.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(full.data()),
              static_cast<std::streamsize>(full.size() - 3));
  }
  try {
    read_safetensors(path);
    FAIL() << "a truncated file was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Safetensors, MissingFileNamesThePath) {
  try {
    read_safetensors("/nonexistent/dir/w.safetensors");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/w.safetensors"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos);
  }
}

TEST(Safetensors, WriterRejectsWhatItCannotEncode) {
  EXPECT_THROW(encode_safetensors({{"__metadata__", Tensor::scalar<float>(1.f)}}), IoError);
}

// Random byte flips, truncations and header edits: every outcome is a parse or a clean IoError,
// and whatever parses re-encodes and parses back to the same tensors.
TEST(Safetensors, MapSeesAlignedTensorsInPlaceAndLeavesMisalignedOnesToRead) {
  // "a" (3 bytes) comes first, so "b" (f32) starts at an odd offset; "c" (u8) is always aligned.
  TensorMap m;
  m["a"] = Tensor::from<std::uint8_t>({3}, {1, 2, 3});
  m["b"] = Tensor::from<float>({2}, {1.5f, -2.f});
  m["c"] = Tensor::from<std::uint8_t>({2}, {9, 8});
  m["d"] = Tensor::from<bool>({3}, {true, false, true});
  m["e"] = Tensor(ir::Shape::of({0, 4}));
  const auto path = temp_path("mapped.safetensors");
  write_safetensors(path, m);
  SafetensorsReader r(path);
  EXPECT_FALSE(r.map("b").has_value());
  EXPECT_TRUE(r.read("b").identical(m["b"]));
  for (const char* name : {"a", "c", "d", "e"}) {
    auto v = r.map(name);
    ASSERT_TRUE(v.has_value()) << name;
    EXPECT_EQ(v->shape, m[name].shape());
    if (m[name].nbytes()) {
      EXPECT_EQ(std::memcmp(v->data, m[name].raw(), m[name].nbytes()), 0) << name;
    }
    EXPECT_TRUE(v->mapping) << name;
  }
  EXPECT_THROW((void)r.map("nope"), IoError);
  std::filesystem::remove(path);
}

TEST(Safetensors, MapRejectsBadBoolBytes) {
  auto bytes = image(R"({"flags":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 2);
  bytes.back() = std::byte{2};
  const auto path = temp_path("badbool.safetensors");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  SafetensorsReader r(path);
  try {
    (void)r.map("flags");
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("holds byte 2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Safetensors, MutationFuzz) {
  const auto seed = ::testing::UnitTest::GetInstance()->random_seed();
  std::mt19937 rng(static_cast<unsigned>(seed));
  const auto base = encode_safetensors(every_dtype(), {{"k", "v"}});
  std::uint64_t hlen = 0;
  std::memcpy(&hlen, base.data(), 8);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
      case 0: // flip a byte in the header (where the structure lives)
        bytes[8 + rng() % hlen] = std::byte{static_cast<unsigned char>(rng())};
        break;
      case 1: // flip any byte
        bytes[rng() % bytes.size()] = std::byte{static_cast<unsigned char>(rng())};
        break;
      case 2: // truncate
        bytes.resize(rng() % bytes.size());
        break;
      default: // replace a header digit by another digit
        for (int tries = 0; tries < 50 && bytes.size() > 8 + hlen; ++tries) {
          auto& c = bytes[8 + rng() % hlen];
          if (std::isdigit(static_cast<int>(c))) {
            c = std::byte{static_cast<unsigned char>('0' + rng() % 10)};
            break;
          }
        }
      }
      if (bytes.empty())
        break;
    }
    try {
      auto f = parse_safetensors(bytes, "fuzz");
      auto again = parse_safetensors(encode_safetensors(f.tensors, f.metadata));
      ASSERT_EQ(again.tensors.size(), f.tensors.size());
      for (const auto& [name, t] : f.tensors)
        ASSERT_TRUE(again.tensors.at(name).identical(t));
      ++parsed;
    } catch (const IoError& e) {
      ASSERT_NE(std::string(e.what()), "");
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(parsed, 0); // flips inside tensor data keep the file valid
}

} // namespace
} // namespace rlx::runtime
