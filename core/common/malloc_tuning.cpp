#include "core/common/malloc_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace powerctl {

void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void LimitMallocArenas(int arenas) {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, arenas);
#else
  (void)arenas;
#endif
}

}  // namespace powerctl
