// Request/response helpers and route dispatch (no Boost here, so it compiles fast).
#include "core/server/http_server_internal.h"

#include <algorithm>
#include <cctype>
#include <exception>

namespace powerctl::server {

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

namespace internal {

const RouteEntry* FindRoute(const std::vector<RouteEntry>& routes, const HttpRequest& request,
                            HttpResponse& miss, std::string& matched) {
  matched.clear();
  std::string allow;
  for (const RouteEntry& route : routes) {
    if (route.path != request.path) continue;
    if (route.method != request.method) {
      allow += (allow.empty() ? "" : ", ") + route.method;
      continue;
    }
    matched = route.path;
    return &route;
  }
  if (allow.empty()) {
    miss = HttpResponse::Text(404, "not found\n");
    return nullptr;
  }
  matched = request.path;
  miss = HttpResponse::Text(405, "method not allowed\n");
  miss.headers.emplace_back("Allow", allow);
  return nullptr;
}

HttpResponse RunHandler(const RouteEntry& route, const HttpRequest& request) {
  try {
    return route.handler(request);
  } catch (...) {
    // Never echo the exception: it may quote the request (pods carry secrets in env values).
    return HttpResponse::Text(500, "internal error\n");
  }
}

const char* RecordedMethod(std::string_view method) {
  for (const char* known : kKnownMethods) {
    if (method == known) return known;
  }
  return "other";
}

}  // namespace internal
}  // namespace powerctl::server
