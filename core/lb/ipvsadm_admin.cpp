// IpvsAdmin through Debian's ipvsadm: `-S -n` to list, `-R` with `-e` lines to edit weights.
// The program runs through RunSubprocess (no shell, its own process group, bounded in time and
// output), with the batch as its stdin.

#include "core/common/subprocess.h"
#include "core/lb/ipvs_admin.h"

#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/wait.h>

namespace powerctl::lb {
namespace {

constexpr std::size_t kStderrKeptBytes = 16 << 10;
constexpr std::size_t kStderrQuotedChars = 400;

Result<SubprocessOutcome> Run(const IpvsadmOptions& options, const std::vector<std::string>& args,
                              const std::string& input) {
  SubprocessRequest request;
  request.program = options.program;
  request.search_path = true;
  request.argv = {options.program};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.stdin_text = input;
  request.timeout = options.timeout;
  request.max_stdout_bytes = options.max_output_bytes;
  request.stderr_kept_bytes = kStderrKeptBytes;
  return RunSubprocess(request);
}

// The last ~400 characters of stderr on one line, printable ASCII only.
std::string StderrTail(const std::string& text) {
  std::string flat;
  for (char c : text) flat += (c >= 0x20 && c < 0x7f) ? c : ' ';
  const std::size_t first = flat.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  flat = flat.substr(first, flat.find_last_not_of(' ') - first + 1);
  if (flat.size() <= kStderrQuotedChars) return flat;
  return "..." + flat.substr(flat.size() - kStderrQuotedChars);
}

// Success needs exit status 0 and an empty stderr: `ipvsadm -R` reports a failed line on stderr
// and carries on, and its status is the last line's.
Status Check(const IpvsadmOptions& options, const std::string& what, const SubprocessOutcome& o) {
  std::string problem;
  if (o.timed_out) {
    problem = fmt::format("did not finish within {} ms (killed)", options.timeout.count());
  } else if (o.stdout_too_large) {
    problem = fmt::format("printed more than {} bytes (killed)", options.max_output_bytes);
  } else if (WIFSIGNALED(o.status)) {
    problem = fmt::format("was killed by signal {}", WTERMSIG(o.status));
  } else if (WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0) {
    problem = fmt::format("exited with status {}", WEXITSTATUS(o.status));
  }
  const std::string tail = StderrTail(o.err);
  if (problem.empty() && tail.empty()) return OkStatus();
  if (problem.empty()) problem = "reported an error";
  const bool forbidden = tail.find("Permission denied") != std::string::npos ||
                         tail.find("Operation not permitted") != std::string::npos;
  return MakeError(forbidden ? ErrorCode::kForbidden : ErrorCode::kApi,
                   fmt::format("{} {}{}{}", what, problem, tail.empty() ? "" : ": ", tail));
}

class IpvsadmAdmin final : public IpvsAdmin {
 public:
  explicit IpvsadmAdmin(IpvsadmOptions options) : options_(std::move(options)) {}

  Result<std::vector<IpvsVirtualServer>> List() override {
    const std::string what = options_.program + " -S -n";
    POWERCTL_TRY(outcome, Run(options_, {"-S", "-n"}, ""));
    POWERCTL_CHECK_OK(Check(options_, what, outcome));
    IpvsParseLimits limits;
    limits.max_bytes = options_.max_output_bytes;
    auto parsed = ParseIpvsSave(outcome.out, limits);
    if (!parsed.ok()) return WithContext(parsed.error(), "reading " + what + " output");
    return parsed;
  }

  Status SetWeights(const std::vector<IpvsWeightChange>& changes) override {
    if (changes.empty()) return OkStatus();
    POWERCTL_TRY(outcome, Run(options_, {"-R"}, RenderIpvsWeightEdits(changes)));
    return Check(options_, options_.program + " -R", outcome);
  }

 private:
  IpvsadmOptions options_;
};

}  // namespace

std::unique_ptr<IpvsAdmin> MakeIpvsadmAdmin(IpvsadmOptions options) {
  return std::make_unique<IpvsadmAdmin>(std::move(options));
}

bool KernelHasIpvs(const std::string& proc_file) {
  struct stat st {};
  return ::stat(proc_file.c_str(), &st) == 0;
}

}  // namespace powerctl::lb
