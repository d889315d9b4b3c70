// ObtainCertDir: a --cert-dir reused, completed from a CA the user brought, or created.

#include "core/manifests/tls.h"
#include "core/manifests/tls_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace powerctl::manifests {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 6> kFiles = {
    kCaCertFile, kCaKeyFile, kServerCertFile, kServerKeyFile, kClientCertFile, kClientKeyFile};

struct Presence {
  std::vector<std::string_view> present, missing;
  bool Has(std::string_view file) const {
    return std::find(present.begin(), present.end(), file) != present.end();
  }
};

Result<Presence> Survey(const fs::path& dir) {
  Presence p;
  for (std::string_view file : kFiles) {
    std::error_code ec;
    const bool exists = fs::exists(dir / file, ec);
    if (ec) return MakeError(ErrorCode::kIo, (dir / file).string() + ": " + ec.message());
    (exists ? p.present : p.missing).push_back(file);
  }
  return p;
}

std::string List(const std::vector<std::string_view>& files) {
  return files.empty() ? "none" : fmt::format("{}", fmt::join(files, ", "));
}

Error InDir(const fs::path& dir, Error e) {
  // Whatever VerifyKeyMaterial found, the fix is in the directory the user named.
  e.code = ErrorCode::kInvalidInput;
  return WithContext(std::move(e), "--cert-dir " + dir.string());
}

Result<CertDirMaterial> Complete(const fs::path& dir, const CertificateRequest& request,
                                 const Presence& p) {
  auto read = [&](std::string_view file) { return detail::ReadPemFile(dir / file); };
  POWERCTL_TRY(ca_cert, read(kCaCertFile));
  POWERCTL_TRY(ca_key, read(kCaKeyFile));
  auto issued = IssueWithCa(request, ca_cert, ca_key);
  if (!issued.ok()) return InDir(dir, issued.error());
  CertDirMaterial out{std::move(*issued), CertDirSource::kSignedWithCa, {}};
  // A whole leaf pair already there is kept; a missing one is the new one.
  const std::pair<std::string_view, std::string_view> pairs[] = {{kServerCertFile, kServerKeyFile},
                                                                 {kClientCertFile, kClientKeyFile}};
  for (const auto& [cert, key] : pairs) {
    if (p.Has(cert)) {
      POWERCTL_TRY(cert_text, read(cert));
      POWERCTL_TRY(key_text, read(key));
      (cert == kServerCertFile ? out.material.server_cert : out.material.client_cert) = cert_text;
      (cert == kServerCertFile ? out.material.server_key : out.material.client_key) = key_text;
    } else {
      out.written.emplace_back(cert);
      out.written.emplace_back(key);
    }
  }
  if (Status valid = VerifyKeyMaterial(out.material, &request); !valid.ok())
    return InDir(dir, valid.error());
  std::vector<std::string_view> files(out.written.begin(), out.written.end());
  POWERCTL_CHECK_OK(WriteKeyMaterialFiles(dir, out.material, files));
  return out;
}

}  // namespace

Result<CertDirMaterial> ObtainCertDir(const fs::path& dir, const CertificateRequest& request) {
  POWERCTL_TRY(p, Survey(dir));
  if (p.missing.empty()) {
    POWERCTL_TRY(loaded, LoadKeyMaterial(dir));
    if (Status valid = VerifyKeyMaterial(loaded, &request); !valid.ok())
      return InDir(dir, valid.error());
    return CertDirMaterial{std::move(loaded), CertDirSource::kReused, {}};
  }
  if (p.present.empty()) {
    POWERCTL_TRY(generated, GenerateKeyMaterial(request));
    POWERCTL_CHECK_OK(WriteKeyMaterial(dir, generated));
    return CertDirMaterial{std::move(generated), CertDirSource::kCreated,
                           std::vector<std::string>(kFiles.begin(), kFiles.end())};
  }
  const bool whole_pairs = p.Has(kServerCertFile) == p.Has(kServerKeyFile) &&
                           p.Has(kClientCertFile) == p.Has(kClientKeyFile);
  if (p.Has(kCaCertFile) && p.Has(kCaKeyFile) && whole_pairs) return Complete(dir, request, p);
  return MakeError(
      ErrorCode::kInvalidInput,
      fmt::format("--cert-dir {} holds {} but not {}: powerctl completes a directory only from "
                  "{} and {} (it signs the missing server and client certificates with that CA, "
                  "each as a .crt and .key pair); add the missing files, or use an empty or new "
                  "directory for new material",
                  dir.string(), List(p.present), List(p.missing), kCaCertFile, kCaKeyFile));
}

}  // namespace powerctl::manifests
