#pragma once
// What the scheduler port serves: POST <prefix>/filter, /prioritize, /preempt. The server
// (schedule_server.cpp) routes requests here; an implementation translates the wire JSON to
// the scoring core and back. Methods are called concurrently from the server threads and may
// throw (the client then gets a generic 500).

#include "core/extender/http_server.h"

namespace powerctl::extender {

class ExtenderHandler {
 public:
  virtual ~ExtenderHandler() = default;
  virtual HttpResponse Filter(const HttpRequest& request) = 0;
  virtual HttpResponse Prioritize(const HttpRequest& request) = 0;
  virtual HttpResponse Preempt(const HttpRequest& request) = 0;
};

// Placeholder until the scoring core is wired in: every verb answers 503.
class UnwiredExtenderHandler : public ExtenderHandler {
 public:
  HttpResponse Filter(const HttpRequest&) override { return Unwired(); }
  HttpResponse Prioritize(const HttpRequest&) override { return Unwired(); }
  HttpResponse Preempt(const HttpRequest&) override { return Unwired(); }

 private:
  static HttpResponse Unwired() { return HttpResponse::Text(503, "scheduling core not wired\n"); }
};

}  // namespace powerctl::extender
