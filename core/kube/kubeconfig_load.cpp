// Finding, reading and merging kubeconfig files, as client-go's loading rules do.

#include "core/common/yaml.h"
#include "core/kube/connection_internal.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>

namespace powerctl::kube::detail {

namespace fs = std::filesystem;

Result<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return MakeError(e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     fmt::format("cannot read {}: {}", path, std::generic_category().message(e)));
  }
  std::string data;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return MakeError(ErrorCode::kIo,
                       fmt::format("cannot read {}: {}", path, std::generic_category().message(e)));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      return Invalid(fmt::format("{} is larger than {} bytes", path, max_bytes));
    }
  }
  ::close(fd);
  return data;
}

Result<std::string> GetString(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(fmt::format("{}: {} must be a string", where, key));
  return it->get<std::string>();
}

Result<bool> GetBool(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return Invalid(fmt::format("{}: {} must be true or false", where, key));
  return it->get<bool>();
}

Status MergeFile(const std::string& path, std::string_view text, Kubeconfig& config) {
  Result<std::vector<Json>> docs = ParseYamlDocuments(text, path);
  if (!docs.ok()) return Invalid(docs.error().message);
  config.files.push_back(path);
  if (docs->empty()) return OkStatus();
  const Json& root = docs->front();
  if (!root.is_object()) return Invalid(path + ": a kubeconfig must be a mapping");
  struct List {
    const char* key;
    const char* item;
    std::map<std::string, Stanza> Kubeconfig::*target;
  };
  static constexpr List kLists[] = {{"clusters", "cluster", &Kubeconfig::clusters},
                                    {"users", "user", &Kubeconfig::users},
                                    {"contexts", "context", &Kubeconfig::contexts}};
  for (const List& list : kLists) {
    auto it = root.find(list.key);
    if (it == root.end() || it->is_null()) continue;
    if (!it->is_array()) return Invalid(fmt::format("{}: {} must be a list", path, list.key));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const Json& entry = (*it)[i];
      const std::string where = fmt::format("{}: {}[{}]", path, list.key, i);
      if (!entry.is_object())
        return Invalid(where + ": must be a mapping with name and " + list.item);
      POWERCTL_TRY(name, GetString(entry, "name", where));
      if (!seen.insert(name).second) {
        return Invalid(fmt::format("{}: duplicate {} name \"{}\"", path, list.item, name));
      }
      auto body = entry.find(list.item);
      Json value = (body == entry.end() || body->is_null()) ? Json::object() : *body;
      if (!value.is_object())
        return Invalid(fmt::format("{}: {} must be a mapping", where, list.item));
      (config.*list.target).try_emplace(name, Stanza{std::move(value), path});
    }
  }
  POWERCTL_TRY(current, GetString(root, "current-context", path));
  if (config.current_context.empty() && !current.empty()) {
    config.current_context = current;
    config.current_context_file = path;
  }
  return OkStatus();
}

std::vector<std::string> KubeconfigPaths(const ConnectionRequest& request) {
  if (!request.kubeconfig_flag.empty()) return {request.kubeconfig_flag};
  const std::string list = Env(request, "KUBECONFIG");
  std::vector<std::string> paths;
  if (!list.empty()) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = std::min(list.find(':', start), list.size());
      std::string path = list.substr(start, end - start);
      if (!path.empty() && std::find(paths.begin(), paths.end(), path) == paths.end()) {
        paths.push_back(std::move(path));
      }
      start = end + 1;
    }
    return paths;
  }
  const std::string home = Env(request, "HOME");
  if (!home.empty()) paths.push_back((fs::path(home) / ".kube" / "config").string());
  return paths;
}

}  // namespace powerctl::kube::detail
