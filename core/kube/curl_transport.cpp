// HttpTransport over libcurl (core/common/curl_easy.h). One easy handle serves every Send
// (under a mutex) so the TCP/TLS connection to the API server is kept alive between
// requests; each Stream gets its own handle because a watch holds its connection for minutes.
//
// Credentials never reach a log or an error message: libcurl's verbose mode stays off,
// and only the method, URL, status and duration are logged.

#include "core/common/curl_easy.h"
#include "core/kube/credential_source.h"
#include "core/kube/curl_support.h"
#include "core/kube/transport.h"

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace powerctl::kube {
namespace {

using SteadyClock = std::chrono::steady_clock;
using powerctl::curl::Handle;
using powerctl::curl::Transfer;

class CurlTransport : public HttpTransport {
 public:
  CurlTransport(const ClusterConnection& connection, const TransportOptions& options,
                curl::Target target, Handle handle)
      : connection_(connection),
        options_(options),
        target_(std::move(target)),
        credentials_(connection, options.environment),
        handle_(std::move(handle)) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    POWERCTL_TRY(credential, credentials_.Get());
    for (int attempt = 0;; ++attempt) {
      if (Cancelled(request)) return Cancel(request, SteadyClock::now());
      HttpResponse response;
      std::string failure;
      ErrorCode code = ErrorCode::kNetwork;
      bool cancelled = false;
      auto start = SteadyClock::now();
      {
        powerctl::curl::Request options = Options(request, credential);
        options.accept_compressed = true;  // big lists compress well
        std::lock_guard lock(mu_);
        Transfer transfer(handle_.get(), options);
        transfer.KeepResponse(&response.body, curl::kMaxResponseBodyBytes, &response.headers);
        CURLcode rc = transfer.Perform();
        if (rc == CURLE_OK) {
          response.status = transfer.status();
        } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
          cancelled = true;  // only the cancel flag's progress callback aborts
        } else if (transfer.body_too_large()) {
          // The server's answer, not worth retrying.
          code = ErrorCode::kApi;
          failure = request.method + " " + target_.display + request.path +
                    ": the response is larger than " +
                    std::to_string(curl::kMaxResponseBodyBytes >> 20) + " MiB";
        } else {
          failure = NetworkMessage(transfer, rc);
        }
      }
      if (cancelled) return Cancel(request, start);
      LogRequest(request, response.status, failure, start);
      if (!failure.empty()) return MakeError(code, failure);
      if (response.status == 401 && attempt == 0 && credentials_.Invalidate(credential.token)) {
        POWERCTL_TRY(refreshed, credentials_.Get());
        credential = std::move(refreshed);
        continue;
      }
      return response;
    }
  }

  Result<long> Stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) override {
    POWERCTL_TRY(credential, credentials_.Get());
    for (int attempt = 0;; ++attempt) {
      if (Cancelled(request)) return Cancel(request, SteadyClock::now());
      POWERCTL_TRY(handle, powerctl::curl::NewHandle());
      const powerctl::curl::Request options = Options(request, credential);
      curl::StreamState state;
      state.handle = handle.get();
      state.on_line = &on_line;
      long status = 0;
      std::string failure;
      auto start = SteadyClock::now();
      CURLcode rc;
      {
        Transfer transfer(handle.get(), options);
        transfer.WriteTo(curl::StreamWrite, &state);
        rc = transfer.Perform();
        if (rc == CURLE_OK) {
          status = transfer.status();
        } else if (!state.stopped && rc != CURLE_ABORTED_BY_CALLBACK) {
          failure = NetworkMessage(transfer, rc);
        }
      }
      if (state.stopped) {
        LogRequest(request, state.status, "", start);
        return state.status;
      }
      if (rc == CURLE_ABORTED_BY_CALLBACK) {
        return Cancel(request, start);
      }
      if (rc != CURLE_OK) {
        LogRequest(request, 0, failure, start);
        return MakeError(ErrorCode::kNetwork, failure);
      }
      LogRequest(request, status, "", start);
      if (status == 200) {
        curl::DeliverLine(state, state.buffer);  // a last line without '\n'
        return status;
      }
      if (status == 401 && attempt == 0 && credentials_.Invalidate(credential.token)) {
        POWERCTL_TRY(refreshed, credentials_.Get());
        credential = std::move(refreshed);
        continue;
      }
      if (error_body != nullptr) *error_body = std::move(state.error_body);
      return status;
    }
  }

 private:
  // The request as libcurl options: the API server's address and TLS from the connection,
  // the credential as a bearer token or client certificate.
  powerctl::curl::Request Options(const HttpRequest& request,
                                  const CurrentCredential& credential) const {
    powerctl::curl::Request options;
    options.url = target_.base_url + request.path;
    options.method = request.method;
    options.body = request.body;
    options.content_type = request.content_type;
    options.headers.push_back("Accept: application/json");
    if (!credential.token.empty()) {
      options.headers.push_back("Authorization: Bearer " + credential.token);
    }
    if (!target_.host_header.empty()) options.headers.push_back(target_.host_header);
    options.timeout = request.timeout;
    options.connect_timeout = options_.connect_timeout;
    options.tcp_keepalive = true;  // watches are idle for minutes
    options.connect_to = target_.connect_to;
    options.tls.insecure_skip_verify = connection_.insecure_skip_tls_verify;
    options.tls.ca_pem = connection_.ca_pem;
    options.tls.cert_pem = credential.cert_pem;
    options.tls.key_pem = credential.key_pem;
    options.cancel = request.cancel;
    return options;
  }

  // The shared message, with where a kubeconfig sets whom to trust.
  std::string NetworkMessage(const Transfer& transfer, CURLcode rc) const {
    std::string message = transfer.NetworkError(rc, target_.display).message;
    if (rc == CURLE_PEER_FAILED_VERIFICATION) {
      message += " (check certificate-authority-data and tls-server-name)";
    }
    return message;
  }

  static bool Cancelled(const HttpRequest& request) {
    return request.cancel != nullptr && request.cancel->load();
  }
  // A cancel is the caller stopping, not a failure: logged as such.
  Error Cancel(const HttpRequest& request, SteadyClock::time_point start) const {
    if (options_.log) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
      options_.log->debug("{} {}{} cancelled after {}ms", request.method, target_.display,
                          request.path, ms.count());
    }
    return CancelledError(request.method + " " + target_.display + request.path);
  }

  // Method, URL, status and time only: headers carry the bearer token and bodies may carry
  // Secret data, so neither is logged at any level.
  void LogRequest(const HttpRequest& request, long status, const std::string& failure,
                  SteadyClock::time_point start) const {
    if (!options_.log) return;
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
    if (failure.empty()) {
      options_.log->debug("{} {}{} {} {}ms", request.method, target_.display, request.path, status,
                          ms);
    } else {
      options_.log->debug("{} {}{} failed after {}ms: {}", request.method, target_.display,
                          request.path, ms, failure);
    }
  }

  const ClusterConnection connection_;
  const TransportOptions options_;
  const curl::Target target_;
  CredentialSource credentials_;
  std::mutex mu_;  // guards handle_
  Handle handle_;
};

}  // namespace

Result<std::unique_ptr<HttpTransport>> MakeCurlTransport(const ClusterConnection& connection,
                                                         const TransportOptions& options) {
  POWERCTL_CHECK_OK(powerctl::curl::GlobalInit());
  POWERCTL_TRY(target, curl::MakeTarget(connection));
  POWERCTL_TRY(handle, powerctl::curl::NewHandle());
  return std::unique_ptr<HttpTransport>(
      std::make_unique<CurlTransport>(connection, options, std::move(target), std::move(handle)));
}

}  // namespace powerctl::kube
