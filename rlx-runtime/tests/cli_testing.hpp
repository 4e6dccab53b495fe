// cli_testing.hpp: a gtest fixture that runs the built `rlx` command in a scratch folder and
// captures its exit status, stdout and stderr, and reads the JSON lines of a --json run (shared by
// the cli*_test binaries).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#ifndef RLX_CLI_PATH
#error "RLX_CLI_PATH must name the built rlx executable"
#endif

namespace rlx::runtime::testing {

/// What one run of the command did.
struct Result {
  int status = -1; ///< exit status; -1 when killed by a signal
  std::string out, err;
  /// The number of lines on stderr.
  std::size_t err_lines() const {
    return static_cast<std::size_t>(std::count(err.begin(), err.end(), '\n'));
  }
};

/// The JSON lines (those starting with '{') of a --json run's output \p out, in order.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> r;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] == '{')
      r.push_back(nlohmann::json::parse(l));
  return r;
}

/// Runs rlx in a fresh scratch folder per test.
class Cli : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("rlx_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// \p name inside the scratch folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// The contents of the file at \p p ("" when unreadable).
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  /// Runs `rlx <args>` (a shell command line) with stdout and stderr captured.
  Result rlx(const std::string& args) const {
    const std::string cmd =
        std::string(RLX_CLI_PATH) + " " + args + " >" + path("stdout") + " 2>" + path("stderr");
    const int raw = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

  /// Expects a failure with \p status and one stderr line holding \p text.
  void expect_error(const std::string& args, int status, const std::string& text) const {
    Result r = rlx(args);
    EXPECT_EQ(r.status, status) << args << "\n" << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("rlx: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << args << "\n" << r.err;
  }

  std::filesystem::path dir_;
};

} // namespace rlx::runtime::testing
