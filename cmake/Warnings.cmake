# Warning flags for powerctl's own code (not for third-party headers).
add_library(powerctl_warnings INTERFACE)
target_compile_options(powerctl_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused
                       -Woverloaded-virtual -Wimplicit-fallthrough
                       -Wno-missing-field-initializers)
if(POWERCTL_WARNINGS_AS_ERRORS)
  target_compile_options(powerctl_warnings INTERFACE -Werror)
endif()
