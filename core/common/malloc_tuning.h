#pragma once
// Memory allocator settings for the long-running programs (schedule-server, lb-agent).
//
// The powerctl binary is linked with jemalloc (cmake/Allocator.cmake): its settings are the
// `malloc_conf` string in malloc_tuning.cpp, and MALLOC_CONF in the environment still
// overrides them. Built without it (POWERCTL_JEMALLOC=OFF, the fuzz build), glibc malloc
// is used and the glibc settings below apply. Which one is linked is found at run time, so
// core/ needs no build flag for it.

#include <cstdint>
#include <string>

namespace powerctl {

// Returns the heap's free pages to the system now: jemalloc purges every arena's unused
// dirty pages; glibc trims (malloc_trim). For after a relist or a large rebuild, which
// frees tens of MiB at once: jemalloc would return them within about a second anyway, glibc
// never (it keeps memory freed in the middle of a heap, and memory of its other arenas).
void ReleaseFreeMemory();

// At most `arenas` glibc malloc arenas (M_ARENA_MAX). glibc gives each thread that contends
// for a lock an arena of its own (up to 8 per core), and each keeps what its thread freed;
// a server whose request, watch and telemetry threads allocate briefly and a lot needs few.
// Call before starting threads. jemalloc takes its arena count from malloc_conf instead.
void LimitMallocArenas(int arenas);

// What `powerctl version` reports, and what the unit tests check took effect.
struct AllocatorInfo {
  std::string name;                  // "jemalloc 5.3.0-0-g54eaed1d...", "glibc malloc 2.36"
  bool background_purge = false;     // jemalloc returns freed pages from its own thread
  std::int64_t dirty_decay_ms = -1;  // jemalloc: how long freed pages stay mapped; -1 never
  std::int64_t muzzy_decay_ms = -1;  // jemalloc: the same for pages already advised away
  unsigned arenas = 0;               // jemalloc's arena count; 0 for glibc (set per process)
  bool thread_caches = false;        // jemalloc's per-thread caches (tcache)
};
AllocatorInfo DescribeAllocator();

// The heap as the allocator sees it, in bytes, for /metrics: what the program holds
// (`allocated`) against what the allocator keeps in memory for it (`resident`), the difference
// being free pages not yet returned and fragmentation. jemalloc fills all four; glibc fills
// `allocated` (in use) and `mapped` (obtained from the system), the others stay 0.
struct HeapStats {
  std::uint64_t allocated = 0;
  std::uint64_t active = 0;    // jemalloc: pages holding live allocations
  std::uint64_t resident = 0;  // jemalloc: pages it has in RAM (data and metadata)
  std::uint64_t mapped = 0;    // jemalloc: mapped in active extents; glibc: heap and mmap'd
};
HeapStats ReadHeapStats();

}  // namespace powerctl
