#include "core/manifests/output.h"

#include "core/common/yaml.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace powerctl::manifests {

std::string FormatManifests(const std::vector<nlohmann::ordered_json>& objects,
                            ManifestFormat format) {
  if (format == ManifestFormat::kYaml) return EmitYamlDocuments(objects);
  if (objects.size() == 1) return objects[0].dump(2) + "\n";
  nlohmann::ordered_json list;
  list["apiVersion"] = "v1";
  list["kind"] = "List";
  list["items"] = objects;
  return list.dump(2) + "\n";
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& content,
                           unsigned mode) {
  // The rename below would replace whatever has the name: a device (/dev/full), a FIFO or a
  // directory is not a file powerctl should swap for a regular one.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    return MakeError(
        ErrorCode::kInvalidInput,
        fmt::format("cannot write {}: it exists and is not a regular file", path.string()));
  }
  std::string tmp = path.string() + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  // The umask may have removed bits; set the exact mode (never more than asked).
  ::fchmod(fd, mode);
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return MakeError(ErrorCode::kIo,
                       fmt::format("cannot write {}: {}", path.string(), std::strerror(saved)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot write {}: {}", path.string(), std::strerror(saved)));
  }
  return OkStatus();
}

namespace {

std::string FileName(Component c, const char* ext, bool out_of_cluster) {
  if (out_of_cluster && c == Component::kScheduler) return fmt::format("scheduler-config.{}", ext);
  return fmt::format("{:02}-{}.{}", static_cast<int>(c) * 10, ComponentName(c), ext);
}

// What powerctl writes: objects with its managed-by label, or the out-of-cluster scheduler
// configuration. Anything else under one of its file names is the user's and stays.
bool WrittenByPowerctl(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string text(1 << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  const bool labelled = text.find("app.kubernetes.io/managed-by") != std::string::npos &&
                        text.find("powerctl") != std::string::npos;
  return labelled || text.find("KubeSchedulerConfiguration") != std::string::npos;
}

constexpr char kKustomizationHeader[] =
    "# Written by `powerctl generate --output-dir`: every manifest powerctl keeps here.\n"
    "# powerctl rewrites this file; list your own additions in a kustomization of yours that\n"
    "# includes this folder.\n";

// The manifest files of powerctl's present in `dir`, in apply order.
std::vector<std::string> PowerctlManifestsIn(const std::filesystem::path& dir, const char* ext) {
  std::vector<std::string> names;
  std::error_code ec;
  for (Component c : AllComponents()) {
    std::string name = FileName(c, ext, false);
    if (std::filesystem::is_regular_file(dir / name, ec) && WrittenByPowerctl(dir / name))
      names.push_back(name);
  }
  return names;
}

// kustomization.yaml beside the manifests; "" or why it was not written.
Result<std::string> WriteKustomization(const std::filesystem::path& dir, const char* ext) {
  std::filesystem::path path = dir / "kustomization.yaml";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::string head(sizeof kKustomizationHeader - 1, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head != kKustomizationHeader)
      return fmt::format("{} is not powerctl's: left as it is", path.string());
  }
  std::string text = kKustomizationHeader;
  text += "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n";
  for (const std::string& name : PowerctlManifestsIn(dir, ext)) text += "- " + name + "\n";
  POWERCTL_CHECK_OK(WriteFileAtomically(path, text, 0644));
  return std::string();
}

}  // namespace

Result<ManifestFiles> WriteManifestFiles(const std::filesystem::path& dir,
                                         const GenerateResult& result, ManifestFormat format,
                                         bool out_of_cluster, bool every_component) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const char* ext = format == ManifestFormat::kYaml ? "yaml" : "json";
  const char* other_ext = format == ManifestFormat::kYaml ? "json" : "yaml";
  ManifestFiles files;
  std::vector<std::string> stale;
  std::vector<Component> written_components;
  for (const GeneratedComponent& c : result.components) {
    std::filesystem::path path = dir / FileName(c.component, ext, out_of_cluster);
    POWERCTL_CHECK_OK(
        WriteFileAtomically(path, FormatManifests(c.objects, format), c.holds_keys ? 0600 : 0644));
    files.written.push_back(path);
    written_components.push_back(c.component);
    stale.push_back(FileName(c.component, other_ext, out_of_cluster));
    if (c.component == Component::kScheduler) {
      stale.push_back(FileName(c.component, ext, !out_of_cluster));
      stale.push_back(FileName(c.component, other_ext, !out_of_cluster));
    }
  }
  if (every_component) {
    for (Component c : AllComponents()) {
      if (IsOptIn(c) || std::find(written_components.begin(), written_components.end(), c) !=
                            written_components.end()) {
        continue;
      }
      for (bool ooc : {false, true}) {
        for (const char* e : {"yaml", "json"}) stale.push_back(FileName(c, e, ooc));
      }
    }
  }
  std::sort(stale.begin(), stale.end());
  stale.erase(std::unique(stale.begin(), stale.end()), stale.end());
  for (const std::string& name : stale) {
    std::filesystem::path path = dir / name;
    if (!std::filesystem::is_regular_file(path, ec) || !WrittenByPowerctl(path)) continue;
    if (!std::filesystem::remove(path, ec) || ec) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("cannot remove the stale {}: {}", path.string(), ec.message()));
    }
    files.removed.push_back(path);
  }
  if (out_of_cluster) return files;  // the scheduler's configuration there is no API object
  POWERCTL_TRY(skipped, WriteKustomization(dir, ext));
  files.kustomization_skipped = skipped;
  if (skipped.empty()) files.written.push_back(dir / "kustomization.yaml");
  return files;
}

}  // namespace powerctl::manifests
