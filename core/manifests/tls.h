#pragma once
// TLS key material for the scheduler extender: a private CA, the extender's serving
// certificate and kube-scheduler's client certificate for mutual TLS. Everything is PEM
// text so it can go straight into a Secret, a kubeconfig-style file or onto disk.

#include "core/common/result.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::manifests {

struct KeyMaterial {  // PEM text
  std::string ca_cert, ca_key;
  std::string server_cert, server_key;  // the extender's serving certificate
  std::string client_cert, client_key;  // kube-scheduler's client certificate for mTLS

  bool operator==(const KeyMaterial&) const = default;
};

struct CertificateRequest {
  std::string ca_common_name = "powerctl-ca";
  // e.g. "powerctl-extender.powerctl.svc". If it is a DNS name or IP it is also put in the
  // SANs, because Go (kube-scheduler) ignores the CN when checking the host name. If empty,
  // the first DNS name (or IP) is used as the CN.
  std::string server_common_name;
  std::vector<std::string> server_dns_names;     // SANs; "*.example" wildcards allowed
  std::vector<std::string> server_ip_addresses;  // SANs, IPv4 or IPv6 text
  std::string client_common_name = "powerctl-scheduler";
  int ca_validity_days = 3650;
  int leaf_validity_days = 825;  // must not exceed ca_validity_days
};

// ECDSA P-256 keys, SHA-256 signatures, random serials, notBefore five minutes in the past.
// Errors: kInvalidInput for a bad request, kInternal when OpenSSL fails.
Result<KeyMaterial> GenerateKeyMaterial(const CertificateRequest& request);

// Bring-your-own CA: new server and client keys and certificates signed by the given CA, whose
// PEM text is copied into the result unchanged. A leaf never outlives the CA: its notAfter is
// the CA's when the CA expires sooner. Errors: kInvalidInput naming ca.crt / ca.key when a PEM
// does not parse, the key is not the certificate's, the certificate is not a CA or has expired,
// or the request is bad; kInternal when OpenSSL fails.
Result<KeyMaterial> IssueWithCa(const CertificateRequest& request, std::string_view ca_cert,
                                std::string_view ca_key);

// File names used by LoadKeyMaterial / WriteKeyMaterial inside a directory.
inline constexpr std::string_view kCaCertFile = "ca.crt";
inline constexpr std::string_view kCaKeyFile = "ca.key";
inline constexpr std::string_view kServerCertFile = "server.crt";
inline constexpr std::string_view kServerKeyFile = "server.key";
inline constexpr std::string_view kClientCertFile = "client.crt";
inline constexpr std::string_view kClientKeyFile = "client.key";

// Reads the six files (ca.crt ca.key server.crt server.key client.crt client.key). Only reads:
// call VerifyKeyMaterial to check the contents. kNotFound if a file is missing.
Result<KeyMaterial> LoadKeyMaterial(const std::filesystem::path& dir);

// Writes the six files, replacing each atomically (temporary file + rename). *.key files are
// created 0600 and certificates 0644; dir is created 0700 if missing (an existing dir keeps
// its mode).
Status WriteKeyMaterial(const std::filesystem::path& dir, const KeyMaterial& material);

// WriteKeyMaterial for some of the six files only (names from the k*File constants); the
// others are left as they are, so a CA key the user brought is never rewritten.
Status WriteKeyMaterialFiles(const std::filesystem::path& dir, const KeyMaterial& material,
                             const std::vector<std::string_view>& files);

// A --cert-dir, made usable:
//   all six files           reused, after VerifyKeyMaterial against `request`
//   ca.crt and ca.key, and  the missing server and/or client pair signed with that CA and
//   whole leaf pairs        written (the CA files are not touched)
//   none (or no directory)  a new CA and leaves, written (directory 0700, keys 0600)
// Anything else, a half pair or leaves without the CA key, cannot be completed: kInvalidInput
// naming the files present and missing. Material that does not verify (a CA key that is not
// the CA certificate's, a leaf from another CA, SANs that miss a name) is kInvalidInput too,
// naming the dir: it is the --cert-dir argument that is wrong.
enum class CertDirSource { kReused, kSignedWithCa, kCreated };
struct CertDirMaterial {
  KeyMaterial material;
  CertDirSource source = CertDirSource::kReused;
  std::vector<std::string> written;  // file names written into the dir, in writing order
};
Result<CertDirMaterial> ObtainCertDir(const std::filesystem::path& dir,
                                      const CertificateRequest& request);

// Checks: every PEM parses; each key matches its certificate; the server and client certs
// are signed by the CA and chain to it for their purpose at the current time; the CA has
// basicConstraints CA:TRUE; the server cert has extendedKeyUsage serverAuth and SANs
// covering every name/IP in `request` (if given); the client cert has clientAuth.
// Errors: kInvalidInput if a PEM does not parse, kCheckFailed listing every failed check.
// Messages name the file (and KeyMaterial field) and what is wrong, never key bytes.
Status VerifyKeyMaterial(const KeyMaterial& material, const CertificateRequest* request = nullptr);

// Reads the notAfter / SANs for display and tests.
struct CertificateInfo {
  std::string subject_cn;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;  // canonical text ("::1", "10.0.0.1")
  std::int64_t not_after_unix = 0;
  bool is_ca = false;
};
Result<CertificateInfo> InspectCertificate(std::string_view pem);

}  // namespace powerctl::manifests
