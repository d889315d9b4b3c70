#include "core/manifests/output.h"

#include "core/common/yaml.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Result<std::vector<std::filesystem::path>> WriteManifestFiles(const std::filesystem::path& dir,
                                                              const GenerateResult& result,
                                                              ManifestFormat format,
                                                              bool out_of_cluster) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const char* ext = format == ManifestFormat::kYaml ? "yaml" : "json";
  std::vector<std::filesystem::path> written;
  for (const GeneratedComponent& c : result.components) {
    std::string name;
    if (out_of_cluster && c.component == Component::kScheduler) {
      name = fmt::format("scheduler-config.{}", ext);
    } else {
      name = fmt::format("{:02}-{}.{}", static_cast<int>(c.component) * 10,
                         ComponentName(c.component), ext);
    }
    std::filesystem::path path = dir / name;
    POWERCTL_CHECK_OK(
        WriteFileAtomically(path, FormatManifests(c.objects, format), c.holds_keys ? 0600 : 0644));
    written.push_back(path);
  }
  return written;
}

}  // namespace powerctl::manifests
