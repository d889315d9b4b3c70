# Version, git commit and build date, compiled into core/common/version.
find_package(Git QUIET)
set(POWERCTL_GIT_COMMIT "unknown")
if(GIT_FOUND AND EXISTS ${CMAKE_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _commit
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _commit)
    set(POWERCTL_GIT_COMMIT ${_commit})
  endif()
endif()
# string(TIMESTAMP) honours SOURCE_DATE_EPOCH, which makes the date reproducible.
string(TIMESTAMP POWERCTL_BUILD_DATE "%Y-%m-%dT%H:%M:%SZ" UTC)
set(POWERCTL_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/build_info.cpp)
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_info.cpp.in ${POWERCTL_VERSION_CPP} @ONLY)
