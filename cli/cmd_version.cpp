// powerctl version: version, git commit, build date and the memory allocator linked in.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "core/common/build_info.h"
#include "core/common/malloc_tuning.h"
#include "core/common/yaml.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace powerctl::cli {
namespace {

int RunVersion(const Context& ctx, bool short_form) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  const BuildInfo& info = GetBuildInfo();
  if (short_form) {
    *ctx.out << info.version << "\n";
    return kExitOk;
  }
  const AllocatorInfo allocator = DescribeAllocator();
  nlohmann::ordered_json doc = {{"version", info.version},
                                {"gitCommit", info.git_commit},
                                {"buildDate", info.build_date},
                                {"allocator", allocator.name}};
  switch (*format) {
    case OutputFormat::kJson:
      *ctx.out << doc.dump(2) << "\n";
      break;
    case OutputFormat::kYaml:
      *ctx.out << EmitYaml(doc);
      break;
    default:
      *ctx.out << "powerctl " << info.version << " (commit " << info.git_commit << ", built "
               << info.build_date << ")\n"
               << "allocator: " << allocator.name << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterVersion(CLI::App& app, CommandEnv& env) {
  auto short_form = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "version", "Print powerctl's version, git commit, build date and memory allocator");
  cmd->add_flag("--short", *short_form, "Print only the version number");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, short_form] { env.exit_code = RunVersion(env.ctx, *short_form); });
}

}  // namespace powerctl::cli
