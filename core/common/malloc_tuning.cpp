#include "core/common/malloc_tuning.h"

#include <fmt/format.h>

#include <sys/types.h>

#include <cstddef>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

extern "C" {
// jemalloc's settings, read once when it initialises; ignored when glibc malloc is in use.
// - background_thread: a jemalloc thread returns freed pages; no request pays for it.
// - dirty_decay_ms 1000: freed pages go back to the system over about a second. Under a
//   steady stream of requests they are reused before that (0 made a 5,000-node prioritize
//   1.7 times slower: every request faulted its pages in again); after a burst the resident
//   memory falls back within seconds instead of staying at its peak.
// - muzzy_decay_ms 0: pages are unmapped outright (MADV_DONTNEED), so resident memory, the
//   figure operators and kubelet eviction see, drops at once.
// - narenas 1: each arena keeps its own freed pages for a second, and what one thread freed
//   cannot serve another's allocation from another arena. With two arenas, the extender's
//   peak while kube-scheduler scheduled over 5,000 nodes was 73-77 MiB (jemalloc resident
//   minus active 17-20 MiB); with one, 65-67 MiB (9-10 MiB), at the same prioritize latency.
//   The price is paid by concurrent requests, which wait on the one arena's locks: 5,000-node
//   filters over four connections at once went from 1,400-1,500 to 580-720 a second.
//   kube-scheduler sends one request at a time; an extender that several schedulers call at
//   once can run with MALLOC_CONF=narenas:2 (about 8 MiB more at its peak).
// - tcache true (jemalloc's default): per-thread caches of freed blocks. Without them every
//   allocation and free takes the arena's lock: a fifth of a 500-node prioritize's
//   instructions were in the allocator, and a 500-node prioritize runs 21 % fewer with them
//   (callgrind). At 5,000 nodes they cost 1-3 MiB of resident memory at the peak and about
//   1 MiB at rest (docs/benchmarks.md, "Memory at 5,000 nodes").
__attribute__((used)) const char* malloc_conf =
    "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:1,tcache:true";

// Defined by jemalloc, absent with glibc: weak, so which allocator is linked is known at run
// time (a null address means glibc).
int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));
}

namespace powerctl {
namespace {

// The purge of every arena (jemalloc's MALLCTL_ARENAS_ALL is 4096).
constexpr const char* kPurgeAllArenas = "arena.4096.purge";

bool JemallocLinked() {
  return mallctl != nullptr;
}

template <typename T>
bool ReadJemalloc(const char* name, T& value) {
  std::size_t size = sizeof(T);
  return mallctl(name, &value, &size, nullptr, 0) == 0 && size == sizeof(T);
}

}  // namespace

void ReleaseFreeMemory() {
  if (JemallocLinked()) {
    mallctl(kPurgeAllArenas, nullptr, nullptr, nullptr, 0);
    return;
  }
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void LimitMallocArenas(int arenas) {
#if defined(__GLIBC__)
  if (!JemallocLinked()) mallopt(M_ARENA_MAX, arenas);
#else
  (void)arenas;
#endif
}

HeapStats ReadHeapStats() {
  HeapStats stats;
  if (JemallocLinked()) {
    // jemalloc's statistics are a snapshot taken when the epoch advances.
    std::uint64_t epoch = 1;
    std::size_t size = sizeof(epoch);
    mallctl("epoch", &epoch, &size, &epoch, size);
    std::size_t value = 0;
    if (ReadJemalloc("stats.allocated", value)) stats.allocated = value;
    if (ReadJemalloc("stats.active", value)) stats.active = value;
    if (ReadJemalloc("stats.resident", value)) stats.resident = value;
    if (ReadJemalloc("stats.mapped", value)) stats.mapped = value;
    return stats;
  }
#if defined(__GLIBC__)
  struct mallinfo2 info = mallinfo2();
  stats.allocated = info.uordblks + info.hblkhd;
  stats.mapped = info.arena + info.hblkhd;
#endif
  return stats;
}

AllocatorInfo DescribeAllocator() {
  AllocatorInfo info;
  if (JemallocLinked()) {
    const char* version = nullptr;
    info.name = ReadJemalloc("version", version) && version != nullptr
                    ? fmt::format("jemalloc {}", version)
                    : "jemalloc";
    bool background = false;
    if (ReadJemalloc("background_thread", background)) info.background_purge = background;
    ssize_t decay = -1;
    if (ReadJemalloc("opt.dirty_decay_ms", decay)) info.dirty_decay_ms = decay;
    decay = -1;
    if (ReadJemalloc("opt.muzzy_decay_ms", decay)) info.muzzy_decay_ms = decay;
    unsigned arenas = 0;
    if (ReadJemalloc("opt.narenas", arenas)) info.arenas = arenas;
    bool tcache = false;
    if (ReadJemalloc("opt.tcache", tcache)) info.thread_caches = tcache;
    return info;
  }
#if defined(__GLIBC__)
  info.name = fmt::format("glibc malloc {}", gnu_get_libc_version());
#else
  info.name = "system malloc";
#endif
  return info;
}

}  // namespace powerctl
