# libFuzzer targets for the parsers of untrusted input (tests/fuzz/*_fuzzer.cpp).
#
# Include once from the top-level CMakeLists.txt, anywhere after project(): the work is deferred
# to the end of that file, when powerctl_core is complete. It compiles powerctl_core's sources
# again (read from the target's SOURCES, so the embedded templates and build_info come along)
# with coverage instrumentation and ASan/UBSan as powerctl_core_fuzz, with the same include
# dirs, definitions and link libraries, and links each fuzzer against that. Needs clang with
# libFuzzer (Debian: clang + libclang-rt-<ver>-dev):
#
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
#     -DPOWERCTL_BUILD_FUZZ=ON -DPOWERCTL_BUILD_TESTS=OFF
#   cmake --build build-fuzz --target powerctl_fuzzers
#   ctest --test-dir build-fuzz -L fuzz        # replay the committed corpora
#
# tests/fuzz/run.sh does all of that and then fuzzes each target for a while. The suite
# (packaging/test.sh) does not build this: it replays the corpora through the regular build
# under valgrind (tests/fuzz/CMakeLists.txt), so CI compiles core/ once.

option(POWERCTL_BUILD_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
if(NOT POWERCTL_BUILD_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "POWERCTL_BUILD_FUZZ=ON needs clang (libFuzzer); ${CMAKE_CXX_COMPILER_ID} "
                      "was found. Configure a separate build dir with CC=clang CXX=clang++.")
endif()

set(POWERCTL_FUZZ_SANITIZERS "address,undefined")
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,${POWERCTL_FUZZ_SANITIZERS}")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,${POWERCTL_FUZZ_SANITIZERS}")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] POWERCTL_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT POWERCTL_HAVE_LIBFUZZER)
  message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer,${POWERCTL_FUZZ_SANITIZERS}: install "
                      "libclang-rt-<version>-dev (Debian) or compiler-rt.")
endif()

# Flags for everything in the fuzzers' process that we compile:
#  * UBSan findings abort (by default they only print, and libFuzzer would not notice);
#  * asserts stay on (-UNDEBUG: CMAKE_BUILD_TYPE RelWithDebInfo defines NDEBUG), including
#    nlohmann::json's JSON_ASSERT, and libstdc++ bounds-checks operator[], front(), back()
#    (_GLIBCXX_ASSERTIONS does not change the ABI, so the Debian libraries still link).
set(_powerctl_fuzz_flags -fno-omit-frame-pointer -fno-sanitize-recover=undefined -UNDEBUG
    -D_GLIBCXX_ASSERTIONS)

# At directory scope, not in the function below: enable_testing() works by setting a variable.
enable_testing()

function(_powerctl_add_fuzzers)
  # --- core, compiled again with coverage instrumentation -------------------------------------
  get_target_property(_sources powerctl_core SOURCES)
  # The HTTP server's Boost.Asio coroutines (co_await) do not compile with clang 14 under these
  # flags ("Cannot represent a difference across sections"). No fuzzer links the HTTP server;
  # the request decoder it feeds (wire.cpp) is fuzzed directly.
  list(FILTER _sources EXCLUDE REGEX "/core/server/(http_server|connection)\\.cpp$")
  add_library(powerctl_core_fuzz STATIC ${_sources})
  target_compile_options(powerctl_core_fuzz PRIVATE
                         -fsanitize=fuzzer-no-link,${POWERCTL_FUZZ_SANITIZERS}
                         ${_powerctl_fuzz_flags})
  # Same include dirs, definitions and dependencies as powerctl_core, read from the target so
  # the two cannot drift. The private ones become public here: only fuzzers link this library.
  foreach(_prop INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES)
    get_target_property(_value powerctl_core ${_prop})
    if(_value)
      target_include_directories(powerctl_core_fuzz PUBLIC ${_value})
    endif()
  endforeach()
  foreach(_prop COMPILE_DEFINITIONS INTERFACE_COMPILE_DEFINITIONS)
    get_target_property(_value powerctl_core ${_prop})
    if(_value)
      target_compile_definitions(powerctl_core_fuzz PUBLIC ${_value})
    endif()
  endforeach()
  get_target_property(_value powerctl_core LINK_LIBRARIES)
  if(_value)
    target_link_libraries(powerctl_core_fuzz PUBLIC ${_value})
  endif()
  # embedded_templates.cpp is the OUTPUT of a custom command attached to powerctl_core. Ninja
  # runs such a rule once however many targets use it; Makefile generators would run it once
  # per target, possibly at the same time, so order the two there.
  if(NOT CMAKE_GENERATOR MATCHES "Ninja")
    add_dependencies(powerctl_core_fuzz powerctl_core)
  endif()

  # --- one executable and one replay test per tests/fuzz/<name>_fuzzer.cpp ----------------------
  set(POWERCTL_FUZZ_DIR ${CMAKE_SOURCE_DIR}/tests/fuzz)
  file(GLOB _powerctl_fuzz_sources CONFIGURE_DEPENDS ${POWERCTL_FUZZ_DIR}/*_fuzzer.cpp)
  add_custom_target(powerctl_fuzzers)
  foreach(_source ${_powerctl_fuzz_sources})
    get_filename_component(_name ${_source} NAME_WE)  # e.g. yaml_fuzzer
    add_executable(${_name} ${_source})
    target_link_libraries(${_name} PRIVATE powerctl_core_fuzz powerctl_warnings)
    target_compile_options(${_name} PRIVATE -fsanitize=fuzzer,${POWERCTL_FUZZ_SANITIZERS}
                           ${_powerctl_fuzz_flags})
    target_link_options(${_name} PRIVATE -fsanitize=fuzzer,${POWERCTL_FUZZ_SANITIZERS})
    add_dependencies(powerctl_fuzzers ${_name})
    # Replay: with -runs=0 libFuzzer executes every file of the corpus once and stops (it
    # writes nothing into the directory). A crash, sanitizer report, leak or a single input
    # running longer than -timeout fails the test.
    if(EXISTS ${POWERCTL_FUZZ_DIR}/corpus/${_name})
      add_test(NAME fuzz.${_name}.replay
               COMMAND ${_name} -runs=0 -timeout=30 -rss_limit_mb=2048
                       ${POWERCTL_FUZZ_DIR}/corpus/${_name})
      set_tests_properties(fuzz.${_name}.replay PROPERTIES LABELS fuzz TIMEOUT 300)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _powerctl_add_fuzzers)
