#pragma once
// glibc malloc settings for a long-running server. No-ops with other C libraries.

namespace powerctl {

// Returns the heap's free pages to the system (glibc malloc_trim). glibc keeps memory freed
// in the middle of a heap, and memory of its other arenas, until asked; after a relist or a
// large rebuild that is tens of MiB of resident memory that nothing uses.
void ReleaseFreeMemory();

// At most `arenas` malloc arenas (glibc M_ARENA_MAX). glibc gives each thread that contends
// for a lock an arena of its own (up to 8 per core), and each keeps what its thread freed;
// a server whose request, watch and telemetry threads allocate briefly and a lot needs few.
// Call before starting threads.
void LimitMallocArenas(int arenas);

}  // namespace powerctl
