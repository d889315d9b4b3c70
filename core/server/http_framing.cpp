#include "core/server/http_framing.h"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <iterator>
#include <string_view>

namespace powerctl::server::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::size_t ReadBufferLimit(const HttpServerLimits& limits) {
  return 2 * limits.header_bytes;
}

beast::flat_buffer MakeReadBuffer(const HttpServerLimits& limits) {
  return beast::flat_buffer(ReadBufferLimit(limits));
}

void LimitParser(RequestParser& parser, const HttpServerLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(limits.body_bytes);
}

std::optional<HttpResponse> ReadErrorResponse(const boost::system::error_code& ec) {
  if (ec == http::error::body_limit) return HttpResponse::Text(413, "request body too large\n");
  if (ec == http::error::header_limit)
    return HttpResponse::Text(431, "request header fields too large\n");
  if (ec == http::error::buffer_overflow)  // a chunk-size line or the trailers outgrew the buffer
    return HttpResponse::Text(431, "chunk extensions or trailers too large\n");
  if (ec == http::error::partial_message)  // the client half-closed mid-request
    return HttpResponse::Text(400, "request truncated: the body ended early\n");
  bool gone = ec == beast::error::timeout || ec == http::error::end_of_stream ||
              ec == net::error::eof || ec == net::ssl::error::stream_truncated ||
              ec.category() == net::error::get_system_category();
  if (gone) return std::nullopt;  // slow, gone or closed by Stop: nobody to answer
  return HttpResponse::Text(400, "bad request\n");
}

namespace {

std::string_view TrimOws(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

Framing CheckFraming(const RequestParser& parser) {
  const auto& head = parser.get();
  Framing out;
  auto refuse = [&](int status, const char* why) {
    out.verdict = FramingVerdict::kRefuse;
    out.refusal = HttpResponse::Text(status, why);
    return out;
  };
  const auto encodings = head.equal_range(http::field::transfer_encoding);
  const auto count = std::distance(encodings.first, encodings.second);
  if (count > 0) {
    const bool only_chunked =
        count == 1 && beast::iequals(TrimOws(encodings.first->value()), "chunked");
    // Beast must have read it as chunked too, or it would frame the body otherwise.
    if (!only_chunked || !parser.chunked()) {
      return refuse(400, "unsupported Transfer-Encoding: only chunked is accepted\n");
    }
    if (head.count(http::field::content_length) > 0) {
      return refuse(400, "Transfer-Encoding and Content-Length together\n");
    }
  }
  const auto expect = head.find(http::field::expect);
  if (expect != head.end()) {
    if (!beast::iequals(TrimOws(expect->value()), "100-continue")) {
      return refuse(417, "only Expect: 100-continue is supported\n");
    }
    const bool body_to_come = parser.chunked() || parser.content_length().value_or(0) > 0;
    if (head.version() >= 11 && body_to_come && !parser.is_done()) {
      out.verdict = FramingVerdict::kContinue;
    }
  }
  return out;
}

HttpRequest TranslateRequest(RequestMessage& message, const std::string& client_cn,
                             const std::string& remote) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  std::string_view target = message.target();
  std::size_t q = target.find('?');
  request.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
  for (const auto& field : message)
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  request.body = std::move(message.body());  // up to body_bytes: move, not copy
  request.client_cn = client_cn;
  request.remote = remote;
  return request;
}

}  // namespace powerctl::server::internal
