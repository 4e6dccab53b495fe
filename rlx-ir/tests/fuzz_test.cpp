// fuzz_test.cpp: random mutations, truncations and insertions of the printed text and JSON of every
// sample graph. The parsers must either return a graph that verifies (and prints and parses back
// to itself) or throw rlx::Error; any other exception, or a crash, fails.
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <random>

namespace rlx::ir {
namespace {

using nlohmann::json;

constexpr std::uint64_t kSeed = 20240601;
/// Mutated documents per sample graph and form.
constexpr int kCasesPerGraph = 80;

/// \p name from the environment as a number, else \p fallback (RLX_FUZZ_SEED and RLX_FUZZ_CASES
/// let a developer run a longer campaign; ctest runs the fixed seed).
std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

/// Tokens worth splicing in: structure, keywords, boundary numbers and odd bytes.
const std::vector<std::string> kTokens = {
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    ",",
    "=",
    ":",
    "%",
    "%0",
    "%99",
    "@",
    "#",
    "\"",
    "\\",
    "\n",
    "graph @g {",
    "return",
    "none",
    "-1",
    "0",
    "1",
    "-0",
    "nan",
    "inf",
    "1e999",
    "99999999999999999999",
    "-9223372036854775808",
    "0x",
    "f32",
    "i64",
    "bool",
    "batch",
    "true",
    "null",
    "[]",
    "{}",
    "\"\"",
    "\xff",
    std::string(1, '\0'),
    "input",
    "relu",
    "custom_fn",
    "\"op\": \"relu\"",
    "\"inputs\": [0]",
    "\"version\": 1",
    "[2, 3] f32 {1, 2}",
};

std::string mutate(const std::string& src, std::mt19937_64& rng) {
  std::string s = src;
  auto pick = [&](std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  int edits = 1 + static_cast<int>(pick(3));
  for (int e = 0; e < edits; ++e) {
    std::size_t at = pick(s.size() + 1);
    switch (pick(7)) {
    case 0: // truncate
      s.resize(at);
      break;
    case 1: // flip one byte
      if (at < s.size())
        s[at] = static_cast<char>(pick(256));
      break;
    case 2: // delete a short range
      if (at < s.size())
        s.erase(at, 1 + pick(12));
      break;
    case 3: // insert a token
      s.insert(at, kTokens[pick(kTokens.size())]);
      break;
    case 4: { // duplicate a range elsewhere
      std::size_t from = pick(s.size() + 1);
      std::string piece = s.substr(from, 1 + pick(40));
      s.insert(at, piece);
      break;
    }
    case 5: // replace a digit with another digit (keeps most documents well formed)
      for (std::size_t k = 0; k < s.size(); ++k) {
        std::size_t i = (at + k) % s.size();
        if (s[i] >= '0' && s[i] <= '9') {
          s[i] = static_cast<char>('0' + pick(10));
          break;
        }
      }
      break;
    default: // insert random bytes
      for (std::size_t n = 1 + pick(4); n > 0; --n)
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(std::min(at, s.size())),
                 static_cast<char>(pick(256)));
      break;
    }
  }
  return s;
}

/// Replaces one random value anywhere in \p j with a value of another kind.
void mutate_json_value(json& j, std::mt19937_64& rng) {
  std::vector<json*> all;
  std::vector<json*> stack{&j};
  while (!stack.empty()) {
    json* v = stack.back();
    stack.pop_back();
    all.push_back(v);
    if (v->is_structured())
      for (auto& child : *v)
        stack.push_back(&child);
  }
  const json replacements[] = {nullptr,
                               -1,
                               0,
                               1,
                               3.5,
                               18446744073709551615ull,
                               "",
                               "x",
                               "nan",
                               true,
                               json::array(),
                               json::object(),
                               json::array({0, 0}),
                               json{{"dims", json::array({2})}, {"dtype", "f32"}}};
  std::uniform_int_distribution<std::size_t> which(0, all.size() - 1);
  std::uniform_int_distribution<std::size_t> repl(0, std::size(replacements) - 1);
  *all[which(rng)] = replacements[repl(rng)];
}

/// The parse must end in a verified graph or rlx::Error; \returns a description of a failure and
/// counts accepted documents in \p accepted.
template <class Parse> std::string check(const std::string& doc, Parse&& parse_fn, int& accepted) {
  Graph g;
  try {
    g = parse_fn(doc);
  } catch (const Error&) {
    return {};
  } catch (const std::exception& e) {
    return std::string("non-rlx exception: ") + e.what();
  } catch (...) {
    return "unknown exception";
  }
  try {
    verify(g);
    Graph again = parse(print(g));
    if (!(again == g))
      return "an accepted graph does not print and parse back to itself";
    ++accepted;
  } catch (const std::exception& e) {
    return std::string("an accepted graph fails: ") + e.what();
  }
  return {};
}

TEST(Fuzz, TextAndJsonParsersNeverCrash) {
  std::mt19937_64 rng(env_or("RLX_FUZZ_SEED", kSeed));
  const auto cases_per_graph = static_cast<int>(env_or("RLX_FUZZ_CASES", kCasesPerGraph));
  int cases = 0, accepted = 0;
  for (OpKind op : testing::all_ops()) {
    Graph g = testing::sample_graph(op);
    const std::string text = print(g);
    const std::string doc = save_json(g);
    const json tree = to_json(g);
    for (int k = 0; k < cases_per_graph; ++k) {
      std::string t = mutate(text, rng);
      std::string failure = check(
          t, [](const std::string& s) { return parse(s); }, accepted);
      ASSERT_EQ(failure, "") << "text of " << op_name(op) << " mutated to:\n" << t;

      std::string j = mutate(doc, rng);
      failure = check(
          j, [](const std::string& s) { return load_json(s); }, accepted);
      ASSERT_EQ(failure, "") << "JSON of " << op_name(op) << " mutated to:\n" << j;

      json m = tree;
      mutate_json_value(m, rng);
      failure = check(
          m.dump(), [&](const std::string&) { return graph_from_json(m); }, accepted);
      ASSERT_EQ(failure, "") << "JSON tree of " << op_name(op) << " mutated to:\n" << m.dump();
      cases += 3;
    }
    // Every prefix of a short document is a truncation the parsers must refuse cleanly.
    if (text.size() < 400)
      for (std::size_t cut = 0; cut < text.size(); cut += 7) {
        ASSERT_EQ(check(
                      text.substr(0, cut), [](const std::string& s) { return parse(s); }, accepted),
                  "");
        ++cases;
      }
  }
  EXPECT_GT(cases, 2000);
  // Some mutations (a changed digit in a constant, a label) still give valid graphs: the parsers
  // were exercised past the first error too.
  EXPECT_GT(accepted, 0);
  RecordProperty("cases", cases);
  RecordProperty("accepted", accepted);
}

} // namespace
} // namespace rlx::ir
