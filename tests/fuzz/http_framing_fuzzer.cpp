// Fuzzes the HTTP/1.1 request framing of powerctl's servers (the extender's scheduler and ops
// ports, the lb-agent's ops port): the bytes a client sends on one connection, read request
// after request (pipelining) through the same parser set-up, read buffer and error answers
// as the server's connections (core/server/http_framing.h), delivered in reads of varying
// sizes. Nothing may throw (a std::length_error from Beast once aborted the process), the
// read buffer never exceeds its bound, an accepted body never exceeds the body limit, a
// failed read is answered 413/431/400 or not at all, and no accepted request carries a
// header or trailer field longer than the buffer.
//
// Run: tests/fuzz/run.sh http_framing_fuzzer

// Beast 1.81's parse_chunk_header asserts n >= 5 when it resumes a body that began with the
// last chunk ("0\r\n") and whose trailer part arrives one byte at a time, with four bytes in
// hand; the code after the assertion handles four bytes (the input that showed it,
// corpus/http_framing_fuzzer/last_chunk_byte_by_byte, runs clean under ASan and UBSan with
// NDEBUG). The server is built with NDEBUG, which turns BOOST_ASSERT off; so is this target,
// so that what it finds is what the server would do. (The parser's templates are
// instantiated here only: no other translation unit of the fuzzer calls them.)
#define BOOST_DISABLE_ASSERTS

#include "core/server/http_framing.h"
#include "core/server/http_server_internal.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace server = powerctl::server;
using server::HttpServerLimits;
namespace framing = powerctl::server::internal;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "http_framing_fuzzer: %s\n", what);
  __builtin_trap();
}

// A SyncReadStream over the input: each read returns at most `step` bytes (the client's
// segments), then end of stream.
class InputStream {
 public:
  InputStream(std::string_view data, std::size_t step) : data_(data), step_(step) {}

  template <typename Buffers>
  std::size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    if (data_.empty()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    std::size_t n = boost::asio::buffer_copy(
        buffers, boost::asio::buffer(data_.data(), std::min(step_, data_.size())));
    data_.remove_prefix(n);
    ec = {};
    return n;
  }
  template <typename Buffers>
  std::size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    std::size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  std::string_view data_;
  std::size_t step_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Small limits, so that inputs of a few KiB reach every one of them.
  server::HttpServerLimits limits;
  limits.header_bytes = 1024;
  limits.body_bytes = 2048;
  const std::size_t step = 1 + data[0] % 64 * (data[0] >= 128 ? 64 : 1);
  InputStream stream(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), step);
  beast::flat_buffer buffer = framing::MakeReadBuffer(limits);
  if (buffer.max_size() != framing::ReadBufferLimit(limits)) Fail("the buffer is not bounded");
  try {
    for (int requests = 0; requests < 64; ++requests) {
      framing::RequestParser parser;
      framing::LimitParser(parser, limits);
      boost::system::error_code ec;
      http::read_header(stream, buffer, parser, ec);
      if (!ec) {
        framing::Framing verdict = framing::CheckFraming(parser);
        if (verdict.verdict == framing::FramingVerdict::kRefuse) {
          if (!verdict.refusal ||
              (verdict.refusal->status != 400 && verdict.refusal->status != 417))
            Fail("a framing refusal with an unexpected status");
          return 0;  // the server closes after it
        }
        // Whatever is left must be framed as the one length Beast and the check agree on.
        const auto& head = parser.get();
        if (head.count(http::field::transfer_encoding) > 0 && !parser.chunked())
          Fail("a Transfer-Encoding other than chunked got past the check");
        http::read(stream, buffer, parser, ec);
      }
      if (buffer.size() > framing::ReadBufferLimit(limits)) Fail("the buffer outgrew its bound");
      if (ec) {
        auto answer = framing::ReadErrorResponse(ec);
        if (answer && answer->status != 400 && answer->status != 413 && answer->status != 431)
          Fail("a read error answered with an unexpected status");
        return 0;
      }
      framing::RequestMessage message = parser.release();
      const bool keep_alive = message.keep_alive();
      server::HttpRequest request = framing::TranslateRequest(message, "", "127.0.0.1:1");
      if (request.body.size() > limits.body_bytes) Fail("a body over the limit was accepted");
      for (const auto& [name, value] : request.headers) {
        if (name.size() + value.size() > framing::ReadBufferLimit(limits))
          Fail("a field longer than the read buffer was accepted");
      }
      std::string_view recorded = framing::RecordedMethod(request.method);
      if (recorded != "other" && recorded != request.method)
        Fail("a recorded method is neither the request's known method nor \"other\"");
      if (!keep_alive) return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_framing_fuzzer: exception: %s\n", e.what());
    Fail("the framing threw");
  }
  return 0;
}
