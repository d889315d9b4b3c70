#include "core/server/ops.h"

#include "core/server/metrics_registry.h"

#include <nlohmann/json.hpp>

namespace powerctl::server {

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  auto bad = [&text](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, "listen address \"" + text + "\": " + why);
  };
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("want HOST:PORT, e.g. 0.0.0.0:8443");
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() >= 2 && address.host.front() == '[' && address.host.back() == ']')
    address.host = address.host.substr(1, address.host.size() - 2);
  else if (address.host.find(':') != std::string::npos)
    return bad("put an IPv6 address in brackets, e.g. [::]:8443");
  if (address.host.empty()) address.host = "0.0.0.0";
  std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    return bad("the port must be a number from 0 to 65535");
  address.port = std::stoi(port);
  return address;
}

HttpResponse ReadyResponse(const ReadyState& state) {
  nlohmann::json degraded = nlohmann::json::array();
  for (const auto& d : state.degraded) degraded.push_back({{"name", d.name}, {"reason", d.reason}});
  nlohmann::json body = {{"ready", state.ready}, {"degraded", degraded}};
  // Reasons quote what dependencies answered: never let their bytes fail the probe.
  return HttpResponse::Json(
      state.ready ? 200 : 503,
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void AddProbeRoutes(HttpServer& server, const MetricsRegistry& metrics,
                    std::function<ReadyState()> ready, std::function<void()> collect) {
  server.Route("GET", "/healthz",
               [](const HttpRequest&) { return HttpResponse::Text(200, "ok\n"); });
  server.Route("GET", "/readyz",
               [ready = std::move(ready)](const HttpRequest&) { return ReadyResponse(ready()); });
  // Rendering a large registry takes milliseconds: on a worker thread (where the server has
  // them), so that scrapes never queue the probes behind them on the I/O thread.
  server.Route(
      "GET", "/metrics",
      [&metrics, collect = std::move(collect)](const HttpRequest&) {
        if (collect) collect();
        HttpResponse r = HttpResponse::Text(200, metrics.Render());
        r.content_type = MetricsRegistry::kContentType;
        return r;
      },
      RouteThreads::kWorker);
}

}  // namespace powerctl::server
