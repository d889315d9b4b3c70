#pragma once
// A scripted HttpTransport for client tests: responses and watch streams are played back
// in order and every request is recorded.

#include "core/kube/client.h"
#include "core/kube/transport.h"

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::kube::fake {

// Scripted responses in order; every request (Send and Stream) is recorded.
class FakeTransport : public HttpTransport {
 public:
  struct StreamScript {
    Result<long> status = 200L;
    std::vector<std::string> lines;
    std::string error_body;
  };

  Result<HttpResponse> Send(const HttpRequest& request) override {
    requests.push_back(request);
    if (responses.empty()) return MakeError(ErrorCode::kInternal, "unscripted " + request.path);
    Result<HttpResponse> next = std::move(responses.front());
    responses.pop_front();
    return next;
  }

  Result<long> Stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) override {
    requests.push_back(request);
    if (streams.empty())
      return MakeError(ErrorCode::kInternal, "unscripted stream " + request.path);
    StreamScript next = std::move(streams.front());
    streams.pop_front();
    for (const std::string& line : next.lines) {
      if (!on_line(line)) break;
    }
    if (error_body != nullptr) *error_body = next.error_body;
    return next.status;
  }

  std::deque<Result<HttpResponse>> responses;
  std::deque<StreamScript> streams;
  std::vector<HttpRequest> requests;
};

inline HttpResponse ApiReply(long status, const json& body,
                             std::map<std::string, std::string> headers = {}) {
  return HttpResponse{status, body.dump(), std::move(headers)};
}

inline json StatusBody(long code, const std::string& reason, const std::string& message,
                       json details = nullptr) {
  json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                 {"message", message}, {"reason", reason},   {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status;
}

inline json Pod(const std::string& name, const std::string& rv, const std::string& uid = "") {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"uid", uid.empty() ? name : uid}}}};
}

inline json PodList(std::vector<json> items, const std::string& rv, const std::string& next = "") {
  json list = {{"kind", "PodList"},
               {"apiVersion", "v1"},
               {"metadata", {{"resourceVersion", rv}}},
               {"items", items}};
  if (!next.empty()) list["metadata"]["continue"] = next;
  return list;
}

inline std::string Event(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

inline Error NetworkError(const std::string& detail) {
  return MakeError(ErrorCode::kNetwork, "cannot connect to https://10.0.0.1:6443: " + detail);
}

}  // namespace powerctl::kube::fake
