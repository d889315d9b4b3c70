// A target for testing the corpus replay itself (tests/fuzz/CMakeLists.txt): an input starting
// with "overread" reads one byte past the end of the buffer, "hang" never returns, anything else
// is harmless. The replay must report the first under memcheck and stop the second at its
// timeout, so a replay that passes means the corpus really ran clean.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.starts_with("overread")) {
    const volatile std::uint8_t past_the_end = data[size];
    static_cast<void>(past_the_end);
  } else if (input.starts_with("hang")) {
    for (;;) pause();
  }
  return 0;
}
