// The floor of an extender's cost to kube-scheduler: the same HTTP(S) server, mutual TLS and
// wire decoding/encoding as `powerctl schedule-server`, but no decision at all (every node
// passes the filter, every node scores 0). `scheduler_throughput.py --floor` runs
// kube-scheduler against it, so docs/benchmarks.md can say how much of the extender's per-pod cost
// is the extender protocol itself (two HTTPS round trips carrying the Pod and every node name) and
// how much is powerctl's scoring.
//
//   noop_extender --port P --ops-port Q [--tls-cert F --tls-key F --client-ca F] [--threads N]
//
// The ops port answers /readyz ({"degraded":[]}) and /metrics with the same request-duration
// series as schedule-server (powerctl_extender_request_duration_seconds_{sum,count}{verb}),
// so the benchmark reads both the same way. Stops on SIGTERM or SIGINT.

#include "core/extender/wire.h"
#include "core/server/http_server.h"
#include "core/server/stop_waiter.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::extender {
namespace {

// Per-verb totals; request threads add, /metrics reads.
struct VerbTotals {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> micros{0};
};

struct Options {
  int port = 0;
  int ops_port = 0;
  int threads = 2;
  std::string cert, key, client_ca;
};

bool ParseOptions(int argc, char** argv, Options* out) {
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (flag == "--port") {
      out->port = std::atoi(value.c_str());
    } else if (flag == "--ops-port") {
      out->ops_port = std::atoi(value.c_str());
    } else if (flag == "--threads") {
      out->threads = std::atoi(value.c_str());
    } else if (flag == "--tls-cert") {
      out->cert = value;
    } else if (flag == "--tls-key") {
      out->key = value;
    } else if (flag == "--client-ca") {
      out->client_ca = value;
    } else {
      return false;
    }
  }
  return out->port > 0 && out->ops_port > 0 && out->threads > 0 &&
         out->cert.empty() == out->key.empty();
}

server::HttpResponse Filter(const server::HttpRequest& request) {
  auto args = DecodeExtenderArgs(request.body);
  if (!args.ok()) return server::HttpResponse::Json(400, EncodeFilterError(args.error().message));
  return server::HttpResponse::Json(200, EncodeFilterResult(*args, FilterAnswer{}));
}

server::HttpResponse Prioritize(const server::HttpRequest& request) {
  auto args = DecodeExtenderArgs(request.body);
  if (!args.ok()) return server::HttpResponse::Text(400, args.error().message);
  std::vector<HostPriority> list;
  list.reserve(args->node_names.size());
  for (const std::string& name : args->node_names) list.push_back({name, 0});
  return server::HttpResponse::Json(200, EncodeHostPriorityList(list));
}

std::string Metrics(const VerbTotals& filter, const VerbTotals& prioritize) {
  std::string out;
  for (auto [verb, totals] : {std::pair{"filter", &filter}, std::pair{"prioritize", &prioritize}}) {
    out += fmt::format("powerctl_extender_request_duration_seconds_sum{{verb=\"{}\"}} {:.6f}\n",
                       verb, static_cast<double>(totals->micros.load()) / 1e6);
    out += fmt::format("powerctl_extender_request_duration_seconds_count{{verb=\"{}\"}} {}\n", verb,
                       totals->count.load());
  }
  return out;
}

int Run(const Options& options) {
  VerbTotals filter, prioritize;
  server::HttpServerOptions main_options;
  main_options.port = options.port;
  main_options.threads = options.threads;
  if (!options.cert.empty()) {
    main_options.tls = server::TlsOptions{options.cert, options.key, options.client_ca};
  }
  main_options.on_request = [&filter, &prioritize](const server::RequestRecord& r) {
    VerbTotals* totals = nullptr;
    if (r.path.ends_with("/filter")) totals = &filter;
    if (r.path.ends_with("/prioritize")) totals = &prioritize;
    if (totals == nullptr || r.status != 200) return;
    totals->count.fetch_add(1);
    totals->micros.fetch_add(static_cast<std::uint64_t>(r.duration.count()));
  };
  auto main = server::HttpServer::Create(main_options);
  if (!main.ok()) {
    std::fprintf(stderr, "noop_extender: %s\n", main.error().message.c_str());
    return 1;
  }
  (*main)->Route("POST", "/scheduler/filter", Filter);
  (*main)->Route("POST", "/scheduler/prioritize", Prioritize);

  server::HttpServerOptions ops_options;
  ops_options.port = options.ops_port;
  ops_options.threads = 1;
  auto ops = server::HttpServer::Create(ops_options);
  if (!ops.ok()) {
    std::fprintf(stderr, "noop_extender: %s\n", ops.error().message.c_str());
    return 1;
  }
  (*ops)->Route("GET", "/readyz", [](const server::HttpRequest&) {
    return server::HttpResponse::Json(200, R"({"degraded":[]})");
  });
  (*ops)->Route("GET", "/metrics", [&filter, &prioritize](const server::HttpRequest&) {
    return server::HttpResponse::Text(200, Metrics(filter, prioritize));
  });

  server::StopWaiter waiter(/*handle_signals=*/true, std::stop_token{});
  for (server::HttpServer* server : {main->get(), ops->get()}) {
    if (Status started = server->Start(); !started.ok()) {
      std::fprintf(stderr, "noop_extender: %s\n", started.error().message.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "noop_extender: listening on %s, ops on %s\n", (*main)->url().c_str(),
               (*ops)->url().c_str());
  std::fprintf(stderr, "noop_extender: %s\n", waiter.Wait().c_str());
  (*main)->Stop(std::chrono::seconds(2));
  (*ops)->Stop(std::chrono::seconds(0));
  return 0;
}

}  // namespace
}  // namespace powerctl::extender

int main(int argc, char** argv) {
  powerctl::extender::Options options;
  if (!powerctl::extender::ParseOptions(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: noop_extender --port P --ops-port Q [--tls-cert F --tls-key F "
                 "[--client-ca F]] [--threads N]\n");
    return 2;
  }
  return powerctl::extender::Run(options);
}
