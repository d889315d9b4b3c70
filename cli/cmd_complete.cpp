// powerctl __complete ARGS... PARTIAL: the candidates for the word being typed, for the bash,
// zsh and fish scripts of `powerctl completion`. The protocol is cobra's (kubectl, helm,
// istioctl, cilium), so the scripts stay small and the candidates live in one place, the
// binary: candidates one a line ("value\tdescription" unless __completeNoDesc), then
// ":DIRECTIVE". Names from the cluster are asked of the API server with a short timeout; any
// failure gives no candidates and no message, as the shell is the user's prompt.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "core/common/json_bounds.h"
#include "core/kube/connection.h"
#include "core/kube/kubeconfig_contexts.h"
#include "core/kube/transport.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <ostream>

namespace powerctl::cli {
namespace {

// cobra's ShellCompDirective bits.
constexpr int kDirectiveDefault = 0;  // the shell may complete file names
constexpr int kDirectiveNoSpace = 2;
constexpr int kDirectiveNoFileComp = 4;
constexpr int kDirectiveFilterDirs = 16;

// A lookup answers within this or offers nothing: the user is waiting at a prompt.
constexpr std::chrono::milliseconds kLookupTimeout{2000};

struct Candidate {
  std::string value;
  std::string description;
};

struct Completion {
  std::vector<Candidate> candidates;
  int directive = kDirectiveNoFileComp;
};

// The command line up to the word being completed, read as the parser would.
struct Walk {
  const CLI::App* command = nullptr;
  std::string path;  // "lb weights"; "" at the root
  std::vector<std::string> positionals;
  const CLI::Option* pending = nullptr;  // a flag that still waits for its value
  GlobalOptions globals;                 // --kubeconfig, --context and -n as given so far
};

bool IsVisible(const CLI::App* app) {
  return !app->get_group().empty();
}

const CLI::App* FindSubcommand(const CLI::App& parent, const std::string& word) {
  for (const CLI::App* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
    if (IsVisible(sub) && sub->check_name(word)) return sub;
  }
  return nullptr;
}

// A flag of `command` or of a command above it (global flags fall through).
const CLI::Option* FindFlag(const CLI::App* command, const std::string& name) {
  for (const CLI::App* c = command; c != nullptr; c = c->get_parent()) {
    for (const CLI::Option* option : c->get_options()) {
      if (option->nonpositional() && option->check_name(name)) return option;
    }
  }
  return nullptr;
}

bool TakesValue(const CLI::Option* option) {
  return option->get_items_expected_max() != 0;
}

std::string LongName(const CLI::Option* option) {
  return option->get_lnames().empty() ? "-" + option->get_snames().front()
                                      : "--" + option->get_lnames().front();
}

void Remember(Walk& walk, const CLI::Option* option, const std::string& value) {
  if (option->check_lname("kubeconfig")) walk.globals.kubeconfig = value;
  if (option->check_lname("context")) walk.globals.context = value;
  if (option->check_lname("namespace")) walk.globals.namespace_ = value;
}

Walk WalkWords(const CLI::App& root, const std::vector<std::string>& words) {
  Walk walk;
  walk.command = &root;
  bool only_positionals = false;
  for (const std::string& word : words) {
    if (walk.pending != nullptr) {
      Remember(walk, walk.pending, word);
      walk.pending = nullptr;
      continue;
    }
    if (!only_positionals && word == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && word.size() > 1 && word[0] == '-') {
      const std::size_t eq = word.find('=');
      if (word[1] == '-' && eq != std::string::npos) {
        if (const CLI::Option* o = FindFlag(walk.command, word.substr(0, eq)))
          Remember(walk, o, word.substr(eq + 1));
        continue;
      }
      if (word[1] != '-' && word.size() > 2) {  // -nshop: the value is attached
        if (const CLI::Option* o = FindFlag(walk.command, word.substr(0, 2)); o && TakesValue(o))
          Remember(walk, o, word.substr(2));
        continue;
      }
      if (const CLI::Option* o = FindFlag(walk.command, word); o != nullptr && TakesValue(o)) {
        walk.pending = o;
      }
      continue;
    }
    if (walk.positionals.empty()) {
      if (const CLI::App* sub = FindSubcommand(*walk.command, word)) {
        walk.command = sub;
        walk.path = walk.path.empty() ? sub->get_name() : walk.path + " " + sub->get_name();
        continue;
      }
    }
    walk.positionals.push_back(word);
  }
  return walk;
}

// Names of the cluster's objects, or none on any failure.
std::vector<std::string> ClusterLookup(ClusterNames kind, const Walk& walk, const Context& ctx) {
  kube::ConnectionRequest request;
  request.kubeconfig_flag = walk.globals.kubeconfig;
  request.context_flag = walk.globals.context;
  request.environment = ctx.environment;
  if (kind == ClusterNames::kContexts) return kube::KubeconfigContexts(request);
  auto connection = kube::ResolveConnection(request);
  if (!connection.ok()) return {};
  const std::string ns =
      walk.globals.namespace_.empty() ? connection->namespace_ : walk.globals.namespace_;
  std::string path;
  switch (kind) {
    case ClusterNames::kNodes:
      path = "/api/v1/nodes";
      break;
    case ClusterNames::kNamespaces:
      path = "/api/v1/namespaces";
      break;
    case ClusterNames::kPods:
      path = "/api/v1/namespaces/" + ns + "/pods";
      break;
    case ClusterNames::kServices:
      path = "/api/v1/namespaces/" + ns + "/services";
      break;
    case ClusterNames::kContexts:
      return {};
  }
  kube::TransportOptions options;
  options.log = ctx.log;
  options.environment = ctx.environment;
  options.connect_timeout = kLookupTimeout;
  auto transport = kube::MakeCurlTransport(*connection, options);
  if (!transport.ok()) return {};
  kube::HttpRequest get;
  get.method = "GET";
  get.path = path + "?limit=500";
  get.timeout = kLookupTimeout;
  auto response = (*transport)->Send(get);
  if (!response.ok() || response->status != 200) return {};
  const nlohmann::json list = ParseJsonBounded(response->body, kKubeJsonLimits);
  std::vector<std::string> names;
  if (list.is_discarded() || !list.is_object() || !list.contains("items")) return names;
  for (const nlohmann::json& item : list["items"]) {
    const nlohmann::json* name = nullptr;
    if (item.is_object() && item.contains("metadata") && item["metadata"].is_object() &&
        item["metadata"].contains("name")) {
      name = &item["metadata"]["name"];
    }
    if (name != nullptr && name->is_string()) names.push_back(name->get<std::string>());
  }
  return names;
}

// NODE and SERVICE arguments and flags name cluster objects wherever they appear.
std::optional<ClusterNames> ClusterSource(const CompletionHints& hints, const std::string& key,
                                          const std::string& type_name) {
  if (auto it = hints.cluster.find(key); it != hints.cluster.end()) return it->second;
  if (type_name == "NODE") return ClusterNames::kNodes;
  if (type_name == "SERVICE") return ClusterNames::kServices;
  return std::nullopt;
}

class Completer {
 public:
  Completer(const CLI::App& root, const CommandEnv& env, Walk walk)
      : root_(root), env_(env), walk_(std::move(walk)) {}

  Completion Complete(const std::string& partial) {
    if (walk_.pending != nullptr) return FlagValues(walk_.pending, partial, "");
    if (partial.rfind("--", 0) == 0 && partial.find('=') != std::string::npos) {
      const std::string name = partial.substr(0, partial.find('='));
      const CLI::Option* option = FindFlag(walk_.command, name);
      if (option == nullptr || !TakesValue(option)) return {};
      return FlagValues(option, partial.substr(name.size() + 1), name + "=");
    }
    if (!partial.empty() && partial[0] == '-') return Flags(partial);
    return Arguments(partial);
  }

 private:
  // The values of `option` starting with `partial`, each written after `prefix`.
  Completion FlagValues(const CLI::Option* option, const std::string& partial,
                        const std::string& prefix) {
    Completion completion;
    const std::string name = LongName(option);
    const std::string key = walk_.path.empty() ? name : walk_.path + " " + name;
    std::vector<std::string> values;
    if (option->check_lname("output")) {
      auto spec = env_.outputs.find(walk_.command);
      values = spec != env_.outputs.end() ? spec->second.Names() : Values(name);
    } else if (auto fixed = env_.hints.values.find(key); fixed != env_.hints.values.end()) {
      values = fixed->second;
    } else if (auto global = env_.hints.values.find(name); global != env_.hints.values.end()) {
      values = global->second;
    } else if (auto source = Source(key, name, option->get_type_name())) {
      values = ClusterLookup(*source, walk_, env_.ctx);
    } else {
      const std::string type = option->get_type_name();
      if (type == "FILE" || type == "PATH") completion.directive = kDirectiveDefault;
      if (type == "DIR") completion.directive = kDirectiveFilterDirs;
      return completion;
    }
    bool all_open = true;  // "jsonpath=" is completed further: no space after it
    for (const std::string& value : values) {
      if (value.rfind(partial, 0) != 0) continue;
      completion.candidates.push_back({prefix + value, ""});
      all_open = all_open && !value.empty() && value.back() == '=';
    }
    if (all_open && !completion.candidates.empty()) completion.directive |= kDirectiveNoSpace;
    return completion;
  }

  std::vector<std::string> Values(const std::string& key) const {
    auto it = env_.hints.values.find(key);
    return it == env_.hints.values.end() ? std::vector<std::string>{} : it->second;
  }

  std::optional<ClusterNames> Source(const std::string& key, const std::string& global,
                                     const std::string& type_name) const {
    if (auto source = ClusterSource(env_.hints, key, type_name)) return source;
    if (auto it = env_.hints.cluster.find(global); it != env_.hints.cluster.end()) {
      return it->second;
    }
    return std::nullopt;
  }

  // --long flags of the command and the commands above it; -s too when only "-" is typed.
  Completion Flags(const std::string& partial) {
    Completion completion;
    for (const CLI::App* c = walk_.command; c != nullptr; c = c->get_parent()) {
      for (const CLI::Option* option : c->get_options()) {
        if (!option->nonpositional()) continue;
        std::vector<std::string> names;
        for (const std::string& l : option->get_lnames()) names.push_back("--" + l);
        if (partial == "-") {
          for (const std::string& s : option->get_snames()) names.push_back("-" + s);
        }
        const std::string description = option->get_description();
        for (const std::string& n : names) {
          if (n.rfind(partial, 0) == 0) {
            completion.candidates.push_back({n, description.substr(0, description.find('\n'))});
          }
        }
      }
    }
    return completion;
  }

  Completion Arguments(const std::string& partial) {
    Completion completion;
    // `help lb w`: the words of `help` are commands.
    if (walk_.command->get_name() == "help" && walk_.command->get_parent() == &root_) {
      const CLI::App* command = &root_;
      for (const std::string& word : walk_.positionals) {
        command = FindSubcommand(*command, word);
        if (command == nullptr) return completion;
      }
      AddSubcommands(*command, partial, completion);
      return completion;
    }
    if (walk_.positionals.empty()) AddSubcommands(*walk_.command, partial, completion);
    const CLI::Option* argument = Positional();
    if (argument == nullptr) return completion;
    std::vector<std::string> values = Values(walk_.path);
    if (auto source = ClusterSource(env_.hints, walk_.path, argument->get_type_name())) {
      values = ClusterLookup(*source, walk_, env_.ctx);
    } else if (values.empty()) {
      const std::string type = argument->get_type_name();
      if (type == "FILE" || type == "PATH") completion.directive = kDirectiveDefault;
      if (type == "DIR") completion.directive = kDirectiveFilterDirs;
    }
    for (const std::string& value : values) {
      if (value.rfind(partial, 0) == 0) completion.candidates.push_back({value, ""});
    }
    return completion;
  }

  // The command's positional argument still open for the next word, or nullptr.
  const CLI::Option* Positional() const {
    std::size_t taken = walk_.positionals.size();
    for (const CLI::Option* option : walk_.command->get_options()) {
      if (option->nonpositional()) continue;
      const int expected = option->get_items_expected_max();
      // Arguments that take many values (components, node names) stay open.
      if (expected >= CLI::detail::expected_max_vector_size || taken < std::size_t(expected)) {
        return option;
      }
      taken -= std::size_t(expected);
    }
    return nullptr;
  }

  void AddSubcommands(const CLI::App& command, const std::string& partial,
                      Completion& completion) const {
    for (const CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
      if (IsVisible(sub) && sub->get_name().rfind(partial, 0) == 0) {
        completion.candidates.push_back({sub->get_name(), sub->get_description()});
      }
    }
  }

  const CLI::App& root_;
  const CommandEnv& env_;
  Walk walk_;
};

}  // namespace

int RunComplete(const CLI::App& root, const CommandEnv& env, const std::vector<std::string>& args,
                bool descriptions) {
  // The shells always pass the word being completed, "" for a new one.
  const std::string partial = args.empty() ? "" : args.back();
  const std::vector<std::string> words(args.begin(), args.empty() ? args.end() : args.end() - 1);
  Completion completion = Completer(root, env, WalkWords(root, words)).Complete(partial);
  std::ostream& out = *env.ctx.out;
  for (const Candidate& c : completion.candidates) {
    out << c.value;
    if (descriptions && !c.description.empty()) out << '\t' << c.description;
    out << '\n';
  }
  out << ':' << completion.directive << '\n';
  return kExitOk;
}

}  // namespace powerctl::cli
