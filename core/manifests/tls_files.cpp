// LoadKeyMaterial and WriteKeyMaterial: the six PEM files in a directory, written with the
// right modes and replaced all together.

#include "core/manifests/tls.h"
#include "core/manifests/tls_internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace powerctl::manifests {
namespace {

namespace fs = std::filesystem;

using detail::kCaCert;
using detail::kCaKey;
using detail::kClientCert;
using detail::kClientKey;
using detail::kServerCert;
using detail::kServerKey;
using detail::Label;
using detail::Part;

// Writes path with exactly `mode` on a fresh inode: any stale file is unlinked, O_EXCL means
// the inode is ours and carries `mode` from creation (a key is never readable by others, not
// even briefly), and fchmod undoes the umask so certificates really are 0644.
Status WriteNewFile(const fs::path& path, const std::string& content, mode_t mode) {
  const auto io_error = [&](const char* op) {
    return MakeError(ErrorCode::kIo, path.string() + ": " + op + ": " + std::strerror(errno));
  };
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("unlink");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return io_error("open");
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  if (::fchmod(fd, mode) != 0) return io_error("fchmod");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return io_error("fsync");
  closer.fd = -1;
  if (::close(fd) != 0) return io_error("close");
  return OkStatus();
}

}  // namespace

namespace detail {

Result<std::string> ReadPemFile(const fs::path& path) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec) return MakeError(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (!exists) return MakeError(ErrorCode::kNotFound, path.string() + ": no such file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return MakeError(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (size > detail::kMaxPemBytes) {
    return MakeError(ErrorCode::kInvalidInput, path.string() + ": larger than 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
    return MakeError(ErrorCode::kIo, path.string() + ": read failed");
  }
  return text;
}

}  // namespace detail

Result<KeyMaterial> LoadKeyMaterial(const fs::path& dir) {
  KeyMaterial m;
  const std::pair<std::string_view, std::string*> files[] = {
      {kCaCertFile, &m.ca_cert},         {kCaKeyFile, &m.ca_key},
      {kServerCertFile, &m.server_cert}, {kServerKeyFile, &m.server_key},
      {kClientCertFile, &m.client_cert}, {kClientKeyFile, &m.client_key}};
  for (const auto& [name, field] : files) {
    POWERCTL_TRY(text, detail::ReadPemFile(dir / name));
    *field = std::move(text);
  }
  return m;
}

Status WriteKeyMaterial(const fs::path& dir, const KeyMaterial& material) {
  return WriteKeyMaterialFiles(
      dir, material,
      {kCaCertFile, kCaKeyFile, kServerCertFile, kServerKeyFile, kClientCertFile, kClientKeyFile});
}

Status WriteKeyMaterialFiles(const fs::path& dir, const KeyMaterial& material,
                             const std::vector<std::string_view>& names) {
  const std::pair<Part, const std::string*> all[] = {
      {kCaCert, &material.ca_cert},         {kCaKey, &material.ca_key},
      {kServerCert, &material.server_cert}, {kServerKey, &material.server_key},
      {kClientCert, &material.client_cert}, {kClientKey, &material.client_key}};
  std::vector<std::pair<Part, const std::string*>> files;
  for (std::string_view name : names) {
    const auto* found = std::find_if(std::begin(all), std::end(all),
                                     [&](const auto& file) { return file.first.file == name; });
    if (found == std::end(all)) {
      return MakeError(ErrorCode::kInternal, "no key material file " + std::string(name));
    }
    files.push_back(*found);
  }
  for (const auto& [part, content] : files) {
    if (content->empty()) return MakeError(ErrorCode::kInvalidInput, Label(part) + ": is empty");
  }
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (!fs::exists(status)) {
    if (const fs::path parent = dir.parent_path(); !parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) return MakeError(ErrorCode::kIo, parent.string() + ": " + ec.message());
    }
    // chmod as well because the umask may have cleared bits of 0700.
    if ((::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) || ::chmod(dir.c_str(), 0700) != 0) {
      return MakeError(ErrorCode::kIo,
                       dir.string() + ": creating directory: " + std::strerror(errno));
    }
  } else if (!fs::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kIo, dir.string() + ": not a directory");
  }
  // Stage every file first and rename only when all are written, so a failure leaves the old
  // set in place rather than a mix of old and new material.
  std::vector<std::pair<fs::path, fs::path>> staged;
  for (const auto& [part, content] : files) {
    const fs::path target = dir / part.file;
    const fs::path temp = dir / ("." + std::string(part.file) + ".tmp");
    const bool is_key = part.file.ends_with(".key");
    if (Status written = WriteNewFile(temp, *content, is_key ? 0600 : 0644); !written.ok()) {
      for (const auto& [t, unused] : staged) ::unlink(t.c_str());
      ::unlink(temp.c_str());
      return written.error();
    }
    staged.emplace_back(temp, target);
  }
  for (const auto& [temp, target] : staged) {
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      return MakeError(ErrorCode::kIo, target.string() + ": rename: " + std::strerror(errno));
    }
  }
  // Make the renames durable too.
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return OkStatus();
}

}  // namespace powerctl::manifests
