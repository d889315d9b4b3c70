#pragma once
// What the scheduler port serves: POST <prefix>/filter, /prioritize, /preempt. The server
// (schedule_server.cpp) routes requests here; an implementation translates the wire JSON to
// the scoring core and back. Methods are called concurrently from the server threads and may
// throw (the client then gets a generic 500).

#include "core/server/http_server.h"

namespace powerctl::extender {

class ExtenderHandler {
 public:
  virtual ~ExtenderHandler() = default;
  virtual server::HttpResponse Filter(const server::HttpRequest& request) = 0;
  virtual server::HttpResponse Prioritize(const server::HttpRequest& request) = 0;
  virtual server::HttpResponse Preempt(const server::HttpRequest& request) = 0;
};

// Placeholder until the scoring core is wired in: every verb answers 503.
class UnwiredExtenderHandler : public ExtenderHandler {
 public:
  server::HttpResponse Filter(const server::HttpRequest&) override { return Unwired(); }
  server::HttpResponse Prioritize(const server::HttpRequest&) override { return Unwired(); }
  server::HttpResponse Preempt(const server::HttpRequest&) override { return Unwired(); }

 private:
  static server::HttpResponse Unwired() {
    return server::HttpResponse::Text(503, "scheduling core not wired\n");
  }
};

}  // namespace powerctl::extender
