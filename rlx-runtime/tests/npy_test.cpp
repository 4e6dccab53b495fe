// npy_test.cpp: .npy round trips, hand-written files, rejected variants and a mutation fuzz.
#include "rlx/runtime/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

namespace rlx::runtime {
namespace {

using ir::DType;
using ir::Tensor;

/// An npy image with the given header dict text and data.
std::vector<std::byte> image(const std::string& dict, const std::vector<unsigned char>& data,
                             int version = 1) {
  std::string h = dict;
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  std::vector<std::byte> out(prefix + h.size() + data.size());
  std::memcpy(out.data(), "\x93NUMPY", 6);
  out[6] = std::byte{static_cast<unsigned char>(version)};
  const auto n = static_cast<std::uint32_t>(h.size());
  std::memcpy(out.data() + 8, &n, version == 1 ? 2 : 4);
  std::memcpy(out.data() + prefix, h.data(), h.size());
  if (!data.empty())
    std::memcpy(out.data() + prefix + h.size(), data.data(), data.size());
  return out;
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse_npy(bytes, "buf");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTripEveryDType) {
  const Tensor cases[] = {
      Tensor::from<float>({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, -6.5f}),
      Tensor::from<double>({1}, {1e-300}),
      Tensor::from<ir::f16_t>({2}, {ir::float_to_f16(0.5f), ir::float_to_f16(-2.f)}),
      Tensor::from<std::int8_t>({3}, {-128, 0, 127}),
      Tensor::from<std::int32_t>({1, 1, 2}, {-5, 5}),
      Tensor::from<std::int64_t>({2}, {std::int64_t{1} << 40, -1}),
      Tensor::from<std::uint8_t>({2}, {0, 255}),
      Tensor::from<bool>({3}, {true, false, true}),
      Tensor::scalar<float>(3.f),
      Tensor(ir::Shape::of({0, 4})),
  };
  for (const auto& t : cases) {
    Tensor back = parse_npy(encode_npy(t));
    EXPECT_TRUE(back.identical(t)) << t.str();
  }
}

TEST(Npy, HeaderMatchesNumPyConventions) {
  auto bytes = encode_npy(Tensor::from<float>({3}, {1.f, 2.f, 3.f}));
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_NE(text.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  EXPECT_EQ((bytes.size() - 12) % 64, 0u); // data starts at a multiple of 64
  auto scalar = encode_npy(Tensor::scalar<std::int64_t>(1));
  std::string st(reinterpret_cast<const char*>(scalar.data()), scalar.size());
  EXPECT_NE(st.find("'shape': ()"), std::string::npos);
}

TEST(Npy, ReadsHandWrittenVariants) {
  // Double quotes, other key order, version 2, the byte-order-free '|' prefix on i1.
  auto a = parse_npy(image(R"({"shape": (2, 1), "fortran_order": False, "descr": "<i4"})",
                           {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 2));
  EXPECT_EQ(a.shape(), ir::Shape::of({2, 1}, DType::i32));
  EXPECT_EQ(a.data<std::int32_t>()[1], -1);
  auto b = parse_npy(image("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", {3, 0xfe}));
  EXPECT_EQ(b.data<std::int8_t>()[1], -2);
}

TEST(Npy, FileRoundTripAndMissingFile) {
  auto path = std::filesystem::temp_directory_path() / "rlx_npy_roundtrip.npy";
  Tensor t = Tensor::from<float>({2, 2}, {1.f, 2.f, 3.f, 4.f});
  write_npy(path, t);
  EXPECT_TRUE(read_npy(path).identical(t));
  std::filesystem::remove(path);
  try {
    read_npy(path);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
  }
}

TEST(Npy, RejectsUnsupportedArrays) {
  const std::vector<unsigned char> four(4, 0);
  EXPECT_NE(error_of(image("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", four))
                .find("Fortran-order"),
            std::string::npos);
  EXPECT_NE(error_of(image("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four))
                .find("big-endian"),
            std::string::npos);
  EXPECT_NE(error_of(image("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", four))
                .find("unsupported npy dtype"),
            std::string::npos);
  EXPECT_NE(error_of(image("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", four))
                .find("unsupported npy dtype"),
            std::string::npos);
  EXPECT_THROW(encode_npy(Tensor::from<ir::bf16_t>({1}, {ir::bf16_t{}})), IoError);
}

TEST(Npy, RejectsMalformedHeadersAndSizes) {
  const std::vector<unsigned char> four(4, 0);
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<f4', 'shape': (1,), }", "lacks"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unexpected key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,) ", "expected ','"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", "malformed"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "(truncated)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
       "needs more"},
  };
  for (const auto& [dict, expect] : cases) {
    std::string msg = error_of(image(dict, four));
    EXPECT_NE(msg.find(expect), std::string::npos) << dict << " gave: '" << msg << "'";
  }
  EXPECT_NE(error_of({}).find("truncated"), std::string::npos);
  auto bad_magic = image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four);
  bad_magic[1] = std::byte{'X'};
  EXPECT_NE(error_of(bad_magic).find("bad magic"), std::string::npos);
}

TEST(Npy, MutationFuzz) {
  std::mt19937 rng(static_cast<unsigned>(::testing::UnitTest::GetInstance()->random_seed()));
  const auto base = encode_npy(Tensor::from<float>({2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}));
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = base;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 3) && !bytes.empty(); ++e) {
      if (rng() % 4 == 0)
        bytes.resize(rng() % bytes.size());
      else
        bytes[rng() % std::min<std::size_t>(bytes.size(), 80)] =
            std::byte{static_cast<unsigned char>(rng())};
    }
    try {
      Tensor t = parse_npy(bytes, "fuzz");
      ASSERT_TRUE(parse_npy(encode_npy(t)).identical(t));
    } catch (const IoError& e) {
      ASSERT_NE(std::string(e.what()), "");
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

} // namespace
} // namespace rlx::runtime
