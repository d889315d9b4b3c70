# The memory allocator of the long-running programs (schedule-server, lb-agent): jemalloc.
#
# glibc malloc keeps what a thread freed in that thread's arena until malloc_trim, so a
# 5,000-node extender that had answered a burst of requests stayed at 113-122 MiB resident
# with 31 MiB of live heap. jemalloc (Debian 12: libjemalloc-dev) returns freed pages from a
# background thread about a second after they were last used (the settings are in
# core/common/malloc_tuning.cpp): 76 MiB after the same burst, 50 MiB idle, at the same or
# better latency. docs/benchmarks.md has the measurements.
#
# powerctl_allocator is an INTERFACE target for executables: the powerctl binary, the unit
# tests (which check the settings took effect) and powerctl_bench link it. powerctl_core does
# not, so the libFuzzer build keeps ASan's allocator.
if(POWERCTL_BUILD_FUZZ)
  set(_powerctl_jemalloc_default OFF)
else()
  set(_powerctl_jemalloc_default ON)
endif()
option(POWERCTL_JEMALLOC "Link the powerctl binary with jemalloc (libjemalloc-dev)"
       ${_powerctl_jemalloc_default})

add_library(powerctl_allocator INTERFACE)
if(POWERCTL_JEMALLOC)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
  target_link_libraries(powerctl_allocator INTERFACE PkgConfig::JEMALLOC)
  target_compile_definitions(powerctl_allocator INTERFACE POWERCTL_JEMALLOC=1)
endif()
