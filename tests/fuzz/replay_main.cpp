// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without libFuzzer, as
// `<target> -runs=0 DIR` does in the clang build: every regular file under each argument
// (a file or a directory, walked recursively, in name order) is read into a buffer of exactly
// its size and passed to the target once.
//
// This lets the regular (gcc) build replay the committed corpora, so CI compiles the tree once;
// tests/fuzz/CMakeLists.txt runs it under valgrind's memcheck, which finds the invalid reads,
// writes and leaks ASan would, without a second, instrumented compile of core/.
//
//   <target>_replay [--timeout=S] [--rss-limit-mb=M] FILE_OR_DIR...
//
// An input that crashes, trips the target's own checks (__builtin_trap), throws, runs longer
// than S seconds (default 30) or takes the peak RSS past M MiB (default 2048) fails the run,
// naming the input. No input at all fails too: a replay of nothing tests nothing.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional in a target, as in libFuzzer: a weak reference is null when the target has none.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

// The input being run, for the timeout handler (which may only call async-signal-safe code).
const char* g_current_input = "";

void OnTimeout(int) {
  constexpr std::string_view kPrefix = "fuzz replay: timeout on ";
  [[maybe_unused]] auto a = write(STDERR_FILENO, kPrefix.data(), kPrefix.size());
  [[maybe_unused]] auto b = write(STDERR_FILENO, g_current_input, std::strlen(g_current_input));
  [[maybe_unused]] auto c = write(STDERR_FILENO, "\n", 1);
  _exit(70);
}

struct Options {
  unsigned timeout_seconds = 30;
  long rss_limit_mb = 2048;
  std::vector<std::string> paths;
};

bool ParseUnsigned(std::string_view text, long& out) {
  if (text.empty() || text.size() > 9) return false;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  out = value;
  return true;
}

bool ParseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    long value = 0;
    if (arg.starts_with("--timeout=")) {
      if (!ParseUnsigned(arg.substr(10), value) || value == 0) return false;
      options.timeout_seconds = static_cast<unsigned>(value);
    } else if (arg.starts_with("--rss-limit-mb=")) {
      if (!ParseUnsigned(arg.substr(15), value) || value == 0) return false;
      options.rss_limit_mb = value;
    } else if (arg.starts_with("-")) {
      return false;
    } else {
      options.paths.emplace_back(arg);
    }
  }
  return !options.paths.empty();
}

// Regular files under each path, each directory's files in name order, so runs are repeatable.
bool CollectInputs(const std::vector<std::string>& paths, std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      inputs.push_back(path);
      continue;
    }
    if (!fs::is_directory(path, ec)) {
      std::fprintf(stderr, "fuzz replay: %s: not a file or directory\n", path.c_str());
      return false;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
      if (entry.is_regular_file()) found.push_back(entry.path().string());
    }
    if (ec) {
      std::fprintf(stderr, "fuzz replay: %s: %s\n", path.c_str(), ec.message().c_str());
      return false;
    }
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  return true;
}

long PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KiB
}

bool RunOne(const std::string& input, const Options& options) {
  std::ifstream file(input, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "fuzz replay: %s: cannot open\n", input.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  // A heap copy of exactly the input's size, so a read past its end is a read past a block.
  auto* data = static_cast<std::uint8_t*>(std::malloc(bytes.empty() ? 1 : bytes.size()));
  if (data == nullptr) return false;
  std::copy(bytes.begin(), bytes.end(), data);
  g_current_input = input.c_str();
  alarm(options.timeout_seconds);
  LLVMFuzzerTestOneInput(data, bytes.size());
  alarm(0);
  std::free(data);
  if (PeakRssMb() > options.rss_limit_mb) {
    std::fprintf(stderr, "fuzz replay: %s: peak RSS %ld MiB is over the %ld MiB limit\n",
                 input.c_str(), PeakRssMb(), options.rss_limit_mb);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) {
    std::fprintf(stderr, "usage: %s [--timeout=S] [--rss-limit-mb=M] FILE_OR_DIR...\n",
                 argc > 0 ? argv[0] : "replay");
    return 2;
  }
  std::vector<std::string> inputs;
  if (!CollectInputs(options.paths, inputs)) return 2;
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no input files\n");
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::signal(SIGALRM, OnTimeout);
  for (const auto& input : inputs) {
    if (!RunOne(input, options)) return 1;
  }
  std::printf("fuzz replay: %zu inputs ran, peak RSS %ld MiB\n", inputs.size(), PeakRssMb());
  return 0;
}
