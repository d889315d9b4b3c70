// powerctl lb weights SERVICE [-n NS]: per ready endpoint of the Service, its node, the watts
// one more request adds there and the resulting load-balancing weight, with the reason.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/table.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/lb/service_weights.h"

#include <fmt/format.h>

#include <ostream>

namespace powerctl::cli {
namespace {

struct LbWeightsFlags {
  std::string service;
};

std::string Watts(const std::optional<predict::NodePower>& p,
                  std::optional<double> predict::NodePower::*field) {
  if (!p || !((*p).*field)) return "-";
  return fmt::format("{:.1f}", *((*p).*field));
}

std::string Delta(const lb::EndpointRow& row) {
  if (!row.power || !row.power->delta()) return "-";
  return fmt::format("{:+.2f}", *row.power->delta());
}

void PrintTable(const Context& ctx, const lb::ServiceWeights& w, bool wide) {
  *ctx.out << fmt::format("Service {}/{}: {} CPU per request ({}), EndpointSlices {}\n",
                          w.namespace_, w.service, w.cpu_per_request, w.cpu_source, w.slice_api);
  if (!w.answered_by.empty()) *ctx.out << "Predictions: " << w.answered_by << "\n";
  std::string after = fmt::format("+{} CPU", w.cpu_per_request);
  std::vector<std::string> headers = {"ENDPOINT", "NODE", "WATTS", after, "DELTA", "WEIGHT"};
  if (wide) headers.insert(headers.end(), {"POD", "SLICE"});
  headers.push_back("REASON");
  Table table(headers);
  for (const lb::EndpointRow& row : w.endpoints) {
    std::vector<std::string> cells = {row.endpoint.address,
                                      row.node.empty() ? "-" : row.node,
                                      Watts(row.power, &predict::NodePower::watts_now),
                                      Watts(row.power, &predict::NodePower::watts_after),
                                      Delta(row),
                                      std::to_string(row.weight.weight)};
    if (wide) {
      cells.push_back(row.endpoint.pod.empty() ? "-" : row.endpoint.pod);
      cells.push_back(row.endpoint.slice);
    }
    cells.push_back(row.weight.reason);
    table.AddRow(std::move(cells));
  }
  table.Print(*ctx.out);
}

int RunLbWeights(const Context& ctx, const LbWeightsFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = LoadConfigForObjectCommand(ctx);  // -n is the object's namespace here
  if (!config.ok()) return Fail(ctx, config.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();
  report::PredictDependencies deps;
  deps.kube = client->get();
  deps.http = http.get();
  deps.log = ctx.log;
  auto weights = lb::ComputeServiceWeights(ObjectNamespace(ctx), flags.service, *config, deps);
  if (!weights.ok()) return Fail(ctx, weights.error());
  if (!weights->prediction_error.empty()) {
    ctx.Warn("no predictions (" + weights->prediction_error + "); every endpoint has weight " +
             std::to_string(config->lb.unknown_weight));
  }
  if (weights->not_ready > 0) {
    ctx.Warn(fmt::format("{} endpoint(s) not ready: left out", weights->not_ready));
  }
  if (weights->endpoints.empty()) {
    ctx.Warn(
        fmt::format("service {}/{} has no ready endpoints", weights->namespace_, weights->service));
  }

  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    nlohmann::json doc = lb::ServiceWeightsToJson(*weights);
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  } else if (!weights->endpoints.empty()) {
    PrintTable(ctx, *weights, *format == OutputFormat::kWide);
  }
  return weights->complete() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterLb(CLI::App& app, CommandEnv& env) {
  CLI::App* lb = app.add_subcommand("lb", "Power-aware load balancing for Services");
  lb->require_subcommand(1);
  auto flags = std::make_shared<LbWeightsFlags>();
  CLI::App* cmd =
      lb->add_subcommand("weights", "Per-endpoint weights from the watts a request adds");
  cmd->footer(
      "For each ready endpoint of the Service (its EndpointSlices): the node, predicted watts\n"
      "now and after one more request's CPU (annotation powerctl.io/cpu-per-request on the\n"
      "Service, else lb.cpuPerRequest, 100m), the difference, and the weight: 100 for the\n"
      "cheapest node, about 100/k where a request costs k times as much, never below 1.\n"
      "Predictions are computed here from powerctl.yaml's telemetry and predictor settings.\n"
      "Endpoints whose node has no prediction get lb.unknownWeight (50) and the reason.\n"
      "Exit 3 when some endpoint has no prediction.\n"
      "Examples:\n"
      "  powerctl lb weights web -n shop\n"
      "  powerctl lb weights web -n shop -o wide\n"
      "  powerctl lb weights web -n shop -o json");
  cmd->add_option("service", flags->service, "The Service's name")
      ->required()
      ->type_name("SERVICE");
  DeclareOutput(
      *cmd, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunLbWeights(env.ctx, *flags); });
}

}  // namespace powerctl::cli
