// The allocator the binaries are linked with, and that its settings took effect.
#include "core/common/malloc_tuning.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace powerctl {
namespace {

// Anonymous resident memory of this process, KiB (/proc/self/status RssAnon).
long RssAnonKiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = -1;
  while (status >> key) {
    if (key == "RssAnon:") {
      status >> value;
      return value;
    }
    status.ignore(4096, '\n');
  }
  return value;
}

#if defined(POWERCTL_JEMALLOC)
TEST(MallocTuningTest, TheBinariesRunJemallocWithPowerctlsSettings) {
  if (std::getenv("MALLOC_CONF") != nullptr) GTEST_SKIP() << "MALLOC_CONF overrides the settings";
  const AllocatorInfo info = DescribeAllocator();
  EXPECT_EQ(info.name.rfind("jemalloc ", 0), 0u) << info.name;
  EXPECT_TRUE(info.background_purge);
  EXPECT_EQ(info.dirty_decay_ms, 1000);
  EXPECT_EQ(info.muzzy_decay_ms, 0);
  EXPECT_EQ(info.arenas, 1u);
  EXPECT_TRUE(info.thread_caches);
}
#else
TEST(MallocTuningTest, WithoutJemallocGlibcMallocIsReported) {
  EXPECT_EQ(DescribeAllocator().name.rfind("glibc malloc ", 0), 0u) << DescribeAllocator().name;
}
#endif

// 64 MiB in blocks below both allocators' direct-mmap sizes (so freeing them leaves the pages
// to the allocator rather than unmapping them), written, then freed from the last to the
// first (so glibc's heap top is not simply trimmed on free). Returns RssAnon while allocated.
long AllocateTouchAndFree() {
  constexpr std::size_t kBlock = 16 * 1024;
  constexpr std::size_t kBlocks = 4096;
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.emplace_back(new char[kBlock]);
    std::memset(blocks.back().get(), static_cast<int>(i), kBlock);
  }
  const long allocated = RssAnonKiB();
  for (std::size_t i = kBlocks; i-- > 0;) blocks[i].reset();
  return allocated;
}

// RssAnon once it is at most `limit` KiB, polled for up to five seconds; the last reading
// otherwise.
long RssAnonOnceAtMost(long limit) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  long rss = RssAnonKiB();
  while (rss > limit && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rss = RssAnonKiB();
  }
  return rss;
}

TEST(MallocTuningTest, ReleaseFreeMemoryReturnsFreedPages) {
  const long before = RssAnonKiB();
  ASSERT_GT(before, 0);
  const long allocated = AllocateTouchAndFree();
  ASSERT_GE(allocated - before, 60 * 1024) << "the blocks were not resident";
  ReleaseFreeMemory();
  // glibc's trim is done when the call returns; jemalloc's purge leaves to its background
  // thread whatever that thread is purging at the moment, which it finishes in milliseconds.
  const long released = RssAnonOnceAtMost(before + 16 * 1024);
  EXPECT_LE(released - before, 16 * 1024)
      << "before " << before << " KiB, allocated " << allocated << " KiB, released " << released;
}

TEST(MallocTuningTest, HeapStatsCountWhatIsHeld) {
  const HeapStats before = ReadHeapStats();
  constexpr std::size_t kBlock = 1 << 20;
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 32; ++i) {
    blocks.emplace_back(new char[kBlock]);
    std::memset(blocks.back().get(), 1, kBlock);
  }
  const HeapStats held = ReadHeapStats();
  EXPECT_GE(held.allocated, before.allocated + 30 * kBlock);
  EXPECT_GE(held.mapped, held.allocated - held.allocated / 10);  // roughly all of it is mapped
#if defined(POWERCTL_JEMALLOC)
  EXPECT_GE(held.active, held.allocated);
  EXPECT_GE(held.resident, held.active);
#endif
  blocks.clear();
  EXPECT_LE(ReadHeapStats().allocated, held.allocated - 30 * kBlock);
}

#if defined(POWERCTL_JEMALLOC)
TEST(MallocTuningTest, FreedPagesGoBackWithinSecondsWithoutBeingAsked) {
  if (std::getenv("MALLOC_CONF") != nullptr) GTEST_SKIP() << "MALLOC_CONF overrides the settings";
  const long before = RssAnonKiB();
  const long allocated = AllocateTouchAndFree();
  ASSERT_GE(allocated - before, 60 * 1024) << "the blocks were not resident";
  const long released = RssAnonOnceAtMost(before + 16 * 1024);
  EXPECT_LE(released - before, 16 * 1024) << "before " << before << " KiB, allocated " << allocated
                                          << " KiB, five seconds later " << released;
}
#endif

}  // namespace
}  // namespace powerctl
