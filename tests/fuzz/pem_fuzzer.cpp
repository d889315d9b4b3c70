// Fuzzes the certificate reader: InspectCertificate (PEM parsing via OpenSSL, then our own
// walk over the subject CN, SANs and notAfter in Describe()).
//
// Two input shapes, so the fuzzer can reach both our code and the DER inside:
//  * input that starts with "-----BEGIN" is passed through as PEM text, as a user's file
//    would be;
//  * anything else is taken as DER, base64-encoded and wrapped in a
//    "-----BEGIN CERTIFICATE-----" envelope first. Mutating base64 text almost never yields
//    a certificate with a new extension, mutating DER does (OpenSSL is not instrumented, so
//    coverage comes from Describe() only).
// The same text also goes through VerifyKeyMaterial as all six PEMs, which exercises the
// private-key reader (PEM_read_bio_PrivateKey skips other blocks, so a cert followed by its
// key gets past parsing into the key-pair and chain checks).
//
// Run: tests/fuzz/run.sh pem_fuzzer

#include "core/manifests/tls.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

std::string PemEnvelope(std::string_view der) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  std::size_t i = 0;
  for (; i + 3 <= der.size(); i += 3) {
    const std::uint32_t n = (static_cast<std::uint8_t>(der[i]) << 16) |
                            (static_cast<std::uint8_t>(der[i + 1]) << 8) |
                            static_cast<std::uint8_t>(der[i + 2]);
    b64 += kAlphabet[(n >> 18) & 63];
    b64 += kAlphabet[(n >> 12) & 63];
    b64 += kAlphabet[(n >> 6) & 63];
    b64 += kAlphabet[n & 63];
  }
  if (const std::size_t rest = der.size() - i; rest > 0) {
    std::uint32_t n = static_cast<std::uint8_t>(der[i]) << 16;
    if (rest == 2) n |= static_cast<std::uint8_t>(der[i + 1]) << 8;
    b64 += kAlphabet[(n >> 18) & 63];
    b64 += kAlphabet[(n >> 12) & 63];
    b64 += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    b64 += '=';
  }
  std::string pem = "-----BEGIN CERTIFICATE-----\n";
  for (std::size_t k = 0; k < b64.size(); k += 64) pem += b64.substr(k, 64) + "\n";
  pem += "-----END CERTIFICATE-----\n";
  return pem;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string pem =
      input.substr(0, 10) == "-----BEGIN" ? std::string(input) : PemEnvelope(input);

  (void)powerctl::manifests::InspectCertificate(pem);

  powerctl::manifests::KeyMaterial material;
  material.ca_cert = material.ca_key = pem;
  material.server_cert = material.server_key = pem;
  material.client_cert = material.client_key = pem;
  (void)powerctl::manifests::VerifyKeyMaterial(material);
  return 0;
}
