// The ipvsadm-backed IpvsAdmin, run against shell scripts standing in for ipvsadm (this
// machine's kernel has no IPVS): arguments, stdin, exit status, stderr, timeouts, output caps.
#include "core/lb/ipvs_admin.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace powerctl::lb {
namespace {

namespace fs = std::filesystem;

class IpvsadmAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "powerctl-ipvsadm-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A stand-in ipvsadm: records its arguments and stdin, then runs `body`.
  IpvsadmOptions Script(const std::string& body) {
    const fs::path path = dir_ / "ipvsadm";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "echo \"$@\" > '" << (dir_ / "args").string() << "'\n"
                        << "cat > '" << (dir_ / "stdin").string() << "'\n"
                        << body << "\n";
    fs::permissions(path, fs::perms::owner_all);
    IpvsadmOptions options;
    options.program = path.string();
    options.timeout = std::chrono::milliseconds(5000);
    return options;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path dir_;
};

TEST_F(IpvsadmAdminTest, ListRunsSaveNumericAndParses) {
  auto admin = MakeIpvsadmAdmin(Script(
      "printf -- '-A -t 10.96.0.10:80 -s wrr\\n-a -t 10.96.0.10:80 -r 10.0.1.2:8080 -m -w 1\\n'"));
  auto table = admin->List();
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(Read("args"), "-S -n\n");
  ASSERT_EQ(table->size(), 1u);
  EXPECT_EQ((*table)[0].real_servers[0].address, "10.0.1.2");
}

TEST_F(IpvsadmAdminTest, SetWeightsFeedsEditLinesToRestore) {
  auto admin = MakeIpvsadmAdmin(Script("exit 0"));
  IpvsWeightChange change;
  change.service.address = "10.96.0.10";
  change.service.port = 80;
  change.real_server = {"10.0.1.2", 8080, 'm', 60, {}};
  ASSERT_TRUE(admin->SetWeights({change}).ok());
  EXPECT_EQ(Read("args"), "-R\n");
  EXPECT_EQ(Read("stdin"), "-e -t 10.96.0.10:80 -r 10.0.1.2:8080 -m -w 60\n");
  // Nothing to change: ipvsadm is not run.
  fs::remove(dir_ / "args");
  ASSERT_TRUE(admin->SetWeights({}).ok());
  EXPECT_FALSE(fs::exists(dir_ / "args"));
}

TEST_F(IpvsadmAdminTest, FailuresQuoteStderr) {
  auto admin = MakeIpvsadmAdmin(
      Script("echo \"Can't initialize ipvs: Protocol not available\" >&2\n"
             "echo 'Are you sure that IP Virtual Server is built in the kernel or as module?' >&2\n"
             "exit 1"));
  auto table = admin->List();
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().code, ErrorCode::kApi);
  EXPECT_NE(table.error().message.find("-S -n exited with status 1: Can't initialize ipvs: "
                                       "Protocol not available Are you sure"),
            std::string::npos)
      << table.error().message;
}

TEST_F(IpvsadmAdminTest, StderrWithExitZeroIsAFailure) {
  // ipvsadm -R reports a failed line and carries on; the status is the last line's.
  auto admin = MakeIpvsadmAdmin(Script("echo 'No such destination' >&2\nexit 0"));
  auto s = admin->SetWeights({IpvsWeightChange{}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("-R reported an error: No such destination"), std::string::npos)
      << s.error().message;
}

TEST_F(IpvsadmAdminTest, PermissionDeniedIsForbidden) {
  auto admin = MakeIpvsadmAdmin(
      Script("echo \"Can't initialize ipvs: Permission denied (you must be root)\" >&2\nexit 1"));
  auto table = admin->List();
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().code, ErrorCode::kForbidden);
}

TEST_F(IpvsadmAdminTest, MissingProgramIsNotFound) {
  IpvsadmOptions options;
  options.program = (dir_ / "no-such-ipvsadm").string();
  auto table = MakeIpvsadmAdmin(options)->List();
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().code, ErrorCode::kNotFound);
  EXPECT_NE(table.error().message.find("cannot run"), std::string::npos);
}

TEST_F(IpvsadmAdminTest, HangingProgramIsKilledAtTheTimeout) {
  IpvsadmOptions options = Script("sleep 30");
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  auto table = MakeIpvsadmAdmin(options)->List();
  ASSERT_FALSE(table.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(table.error().message.find("did not finish within 300 ms (killed)"), std::string::npos)
      << table.error().message;
}

TEST_F(IpvsadmAdminTest, OutputBeyondTheCapIsRefused) {
  IpvsadmOptions options = Script("yes -- '-A -t 10.96.0.10:80 -s wrr'");
  options.max_output_bytes = 1 << 20;
  auto table = MakeIpvsadmAdmin(options)->List();
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.error().message.find("printed more than 1048576 bytes (killed)"),
            std::string::npos)
      << table.error().message;
}

TEST_F(IpvsadmAdminTest, UnparsableOutputNamesTheLine) {
  auto admin = MakeIpvsadmAdmin(Script("printf -- '-A -t 10.96.0.10:80 -s wrr\\ngarbage\\n'"));
  auto table = admin->List();
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.error().message.find("-S -n output: line 2: unknown command \"garbage\""),
            std::string::npos)
      << table.error().message;
}

TEST_F(IpvsadmAdminTest, KernelHasIpvsLooksForTheProcFile) {
  EXPECT_FALSE(KernelHasIpvs((dir_ / "ip_vs").string()));
  std::ofstream(dir_ / "ip_vs") << "IP Virtual Server version 1.2.1 (size=4096)\n";
  EXPECT_TRUE(KernelHasIpvs((dir_ / "ip_vs").string()));
}

}  // namespace
}  // namespace powerctl::lb
