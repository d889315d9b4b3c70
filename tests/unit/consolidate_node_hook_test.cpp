// The --on-drained / --on-wake hook: run by /bin/sh with the node and its addresses as
// arguments and variables, bounded in time, its failure summarised for the report.
#include "core/consolidate/node_hook.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace powerctl::consolidate {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConsolidateNodeHook, GetsTheNodeAndItsAddressesAsArgumentsAndVariables) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("hook-" + std::to_string(::getpid()));
  NodeHook hook;
  hook.command =
      "echo \"$1|$2|$3|$POWERCTL_NODE|$POWERCTL_ADDRESSES|$POWERCTL_EVENT\" > " + out.string();
  auto run = RunNodeHook(hook, "wake", "node-7", {"10.0.0.7", "node-7.lan"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_TRUE(run->ok) << run->summary;
  EXPECT_EQ(ReadFile(out), "node-7|10.0.0.7|node-7.lan|node-7|10.0.0.7 node-7.lan|wake\n");
  std::filesystem::remove(out);
}

TEST(ConsolidateNodeHook, AFailureSaysItsStatusAndLastLineOfStderr) {
  NodeHook hook;
  hook.command = "echo starting >&2; echo 'BMC 10.0.0.7: connection refused' >&2; exit 3";
  auto run = RunNodeHook(hook, "drained", "n", {});
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->ok);
  EXPECT_EQ(run->summary, "exit status 3: BMC 10.0.0.7: connection refused");
}

TEST(ConsolidateNodeHook, AHookThatHangsIsStoppedAtItsTimeout) {
  NodeHook hook;
  hook.command = "sleep 30";
  hook.timeout = std::chrono::seconds(1);
  auto run = RunNodeHook(hook, "wake", "n", {});
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->ok);
  EXPECT_EQ(run->summary, "timed out after 1s");
}

TEST(ConsolidateNodeHook, CommandAndTimeoutAreBounded) {
  NodeHook hook;
  hook.command = "true";
  EXPECT_TRUE(ValidateHook(hook, "--on-wake").ok());
  hook.timeout = std::chrono::seconds(0);
  EXPECT_FALSE(ValidateHook(hook, "--on-wake").ok());
  hook.timeout = kMaxHookTimeout + std::chrono::seconds(1);
  EXPECT_FALSE(ValidateHook(hook, "--on-wake").ok());
  hook.timeout = std::chrono::seconds(10);
  hook.command.assign(kMaxHookCommandBytes + 1, 'x');
  auto status = ValidateHook(hook, "--on-wake");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("--on-wake"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::consolidate
