#pragma once
// Standard output as a stream that remembers why a write failed. std::cout only says that one
// did, and after a failed write `errno` may belong to anything since; to tell a reader that
// went away (EPIPE: `powerctl ... | head -1`) from a full disk (ENOSPC) the error is kept
// where it happened.

#include <cstddef>
#include <streambuf>

namespace powerctl::cli {

// A buffered std::streambuf over a file descriptor it does not own. After the first failed
// write every later write fails too, so a stream over it stays bad.
class FdOutputBuffer : public std::streambuf {
 public:
  explicit FdOutputBuffer(int fd);
  ~FdOutputBuffer() override;
  FdOutputBuffer(const FdOutputBuffer&) = delete;
  FdOutputBuffer& operator=(const FdOutputBuffer&) = delete;

  // The errno of the first failed write, 0 while none failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* data, std::streamsize size) override;
  int sync() override;

 private:
  bool WriteAll(const char* data, std::size_t size);
  bool Drain();

  int fd_;
  int error_ = 0;
  char buffer_[16384];
};

}  // namespace powerctl::cli
