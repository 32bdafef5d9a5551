// memarena run -- CMD: runs a program under the drop-in allocator (LD_PRELOAD of
// libmemarena_malloc.so) with stats at exit, an optional ceiling and an optional trace.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "memarena/observability.h"
#include "memarena/stats.h"
#include "memarena/tracing.h"
#include "replay.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--ceiling", "SIZE", "limit on the bytes the program's heap may hold (e.g. 2GiB)"},
    OptionSpec{"--trace", "FILE", "record every allocation to FILE (RMM replay-log CSV; %p = pid)"},
    OptionSpec{"--preload", "PATH", "the drop-in library to use (default: found as below)"},
    OptionSpec{"--watermarks", "P/P/...",
               "print a line when held crosses these percentages of the ceiling (e.g. 75/88/95)"},
};

const CommandSpec kSpec{
    "run", "[options] -- CMD [ARGS...]",
    "run a command under the drop-in allocator and print its stats when it exits", kOptions, 0, 0,
    true,
    "The drop-in library is --preload PATH, else $MEMARENA_PRELOAD, else libmemarena_malloc.so\n"
    "in the install's lib directory next to this program's bin directory, else the one in the\n"
    "build tree this program was built in. Settings already in MEMARENA_CONF are kept.\n"
    "Exit status: the command's own (128 + N when signal N kills it, 127 when it cannot be\n"
    "started); 2 for a usage error of memarena run itself."};

namespace fs = std::filesystem;

std::string FindPreload(const ParsedArgs& args) {
  if (const auto p = args.Value("--preload")) return *p;
  if (const char* env = std::getenv("MEMARENA_PRELOAD"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path().parent_path() / MEMARENA_INSTALL_LIBDIR / "libmemarena_malloc.so");
  }
#ifdef MEMARENA_BUILD_PRELOAD
  candidates.emplace_back(MEMARENA_BUILD_PRELOAD);
#endif
  for (const auto& c : candidates) {
    if (fs::exists(c, ec)) return c.string();
  }
  std::string tried;
  for (const auto& c : candidates) tried += fmt::format("\n  {}", c.string());
  throw std::runtime_error(fmt::format(
      "cannot find libmemarena_malloc.so; pass --preload PATH or set MEMARENA_PRELOAD (tried:{})",
      tried));
}

std::string Conf(const ParsedArgs& args) {
  std::string conf;
  if (const char* env = std::getenv("MEMARENA_CONF"); env != nullptr && *env != '\0') conf = env;
  auto add = [&conf](const std::string& kv) { conf += (conf.empty() ? "" : ",") + kv; };
  add("stats_at_exit:1");
  if (const auto c = args.Value("--ceiling")) {
    ParseSizeOption("--ceiling", *c);  // a bad size is a usage error here, not in the child
    add("ceiling:" + *c);
  }
  if (const auto t = args.Value("--trace")) add("trace_file:" + *t);
  if (const auto w = args.Value("--watermarks")) {
    try {
      ParseWatermarkLevels("--watermarks", *w);  // a usage error here, not in the child
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (!args.Value("--ceiling") && conf.find("ceiling:") == std::string::npos) {
      throw UsageError("--watermarks needs --ceiling SIZE (levels are percentages of it)");
    }
    add("watermarks:" + *w);
  }
  return conf;
}

int Run(const ParsedArgs& args) {
  const std::string preload = FindPreload(args);
  if (!fs::exists(preload)) throw std::runtime_error(fmt::format("{}: no such file", preload));
  const std::string conf = Conf(args);
  std::string ld_preload = preload;
  if (const char* env = std::getenv("LD_PRELOAD"); env != nullptr && *env != '\0') {
    ld_preload += fmt::format(":{}", env);
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    setenv("LD_PRELOAD", ld_preload.c_str(), 1);
    setenv("MEMARENA_CONF", conf.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fmt::print(stderr, "memarena run: cannot run '{}': {}\n", args.command[0], std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("waitpid failed: {}", std::strerror(errno)));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (WIFSIGNALED(status)) {
    fmt::print(stderr, "memarena run: '{}' was killed by signal {}\n", args.command[0], WTERMSIG(status));
  }
  if (const auto t = args.Value("--trace"); t && t->find("%p") == std::string::npos) {
    const auto trace = ReadTrace(*t);
    // With watermarks, the replay report draws them across the timeline.
    const auto w = args.Value("--watermarks");
    const auto c = args.Value("--ceiling");
    const std::string report =
        w && c ? fmt::format(" --config ceiling:{} --report {}.html --watermarks {}", *c, *t, *w) : "";
    fmt::print(stderr, "memarena run: trace {}: {} events, peak requested {}; replay it with "
                       "`memarena replay {}{}`\n",
               *t, trace.size(), FormatBytes(TracePeakRequested(trace)), *t, report);
  }
  return code;
}

}  // namespace

const Command kRunCommand{&kSpec, &Run};

}  // namespace memarena::tools
