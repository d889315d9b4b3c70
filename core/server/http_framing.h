#pragma once
// How the server frames requests, apart from its sockets: Boost.Beast's parser under the
// server's limits, the read buffer's bound, what a framing error is answered, and the request
// handlers see. The connection (connection.cpp) and the HTTP-framing fuzzer share it, so the
// fuzzer parses exactly as the server does.

#include "core/server/http_server.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace powerctl::server::internal {

using RequestMessage = boost::beast::http::request<boost::beast::http::string_body>;
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// The bound of a connection's read buffer: twice header_bytes. Beyond the body (which the
// parser moves out of the buffer as it arrives) the buffer holds a request head, a chunk-size
// line with its extensions, or the trailer section, plus the start of a pipelined request;
// no parser limit covers the chunk lines and trailers, so this bound is theirs. It keeps every
// field well below Beast's 16-bit field offsets (a field of 65,534 bytes or more throws
// std::length_error): HttpServer::Create refuses header_bytes above kMaxHeaderBytes.
std::size_t ReadBufferLimit(const HttpServerLimits& limits);

// A read buffer bounded by ReadBufferLimit.
boost::beast::flat_buffer MakeReadBuffer(const HttpServerLimits& limits);

// Applies header_bytes and body_bytes to a new parser.
void LimitParser(RequestParser& parser, const HttpServerLimits& limits);

// What a failed read of a request is answered (the connection closes after it): 413 for a
// body over the limit, 431 for a head, chunk line or trailer section over the buffer, 400 for
// anything malformed; nullopt when nobody is left to answer (timeout, end of stream, reset,
// closed by the server).
std::optional<HttpResponse> ReadErrorResponse(const boost::system::error_code& ec);

// After the head is read, before the body: what the framing fields ask for.
//   kRefuse: answer `refusal` and close. A Transfer-Encoding other than exactly `chunked`
//     (`xchunked`, `chunked, identity`, two fields) or with a Content-Length beside it leaves
//     the body's length unknown (RFC 9112 section 6.1: 400 and close), and Beast would read
//     such a request as having no body and the rest as the next request. An Expect other than
//     100-continue is 417.
//   kContinue: the client waits for "100 Continue" before it sends the body (Expect:
//     100-continue on HTTP/1.1 with a body to come): send kContinueLine, then read on.
//   kRead: read the body.
enum class FramingVerdict { kRead, kContinue, kRefuse };
struct Framing {
  FramingVerdict verdict = FramingVerdict::kRead;
  std::optional<HttpResponse> refusal;
};
Framing CheckFraming(const RequestParser& parser);
inline constexpr char kContinueLine[] = "HTTP/1.1 100 Continue\r\n\r\n";

// What handlers see of a parsed request; the body is moved out of `message`.
HttpRequest TranslateRequest(RequestMessage& message, const std::string& client_cn,
                             const std::string& remote);

}  // namespace powerctl::server::internal
