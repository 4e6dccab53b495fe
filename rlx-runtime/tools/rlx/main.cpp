// main.cpp: the `rlx` command: subcommand dispatch and the one-line error convention.
//
// Every failure ends the process with a non-zero status and exactly one line on stderr,
// "rlx: error: <what went wrong>": 2 for a command line that does not parse, 1 for everything
// else (a missing file, a missing weight, a shape mismatch, a failed check).
#include "commands.hpp"
#include "rlx/cpu/threading.hpp"
#include "rlx/ir/error.hpp"

#include <cstdio>
#include <exception>
#include <string>

namespace {

/// The first line of \p what (messages are one line by convention; this enforces it).
std::string one_line(const char* what) {
  std::string s(what);
  if (auto nl = s.find('\n'); nl != std::string::npos)
    s.erase(nl);
  return s;
}

int fail(const char* what, int status) {
  std::fprintf(stderr, "rlx: error: %s\n", one_line(what).c_str());
  return status;
}

} // namespace

int main(int argc, char** argv) {
  // Passive OpenMP waiting before libgomp loads its policy (rlx-cpu/DESIGN.md, "Threading").
  rlx::cpu::reexec_with_threading_environment(argv);
  CLI::App app{"rlx: an ML compiler and runtime. Compile, run, inspect and benchmark models."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rlx 0.1.0");
  std::vector<rlx::cli::Command> commands{rlx::cli::add_demo(app),    rlx::cli::add_run(app),
                                          rlx::cli::add_inspect(app), rlx::cli::add_bench(app),
                                          rlx::cli::add_export(app),  rlx::cli::add_devices(app),
                                          rlx::cli::add_grad(app),    rlx::cli::add_train(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0)
      return app.exit(e); // --help, --version
    std::string msg = one_line(e.what());
    if (msg.empty())
      msg = e.get_name();
    return fail((msg + " (see rlx --help)").c_str(), 2);
  }
  try {
    for (const auto& c : commands)
      if (c.app->parsed())
        return c.run();
    return fail("no subcommand given (see rlx --help)", 2);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
}
