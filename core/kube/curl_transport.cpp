// HttpTransport over libcurl. One easy handle serves every Send (under a mutex) so the
// TCP/TLS connection to the API server is kept alive between requests; each Stream gets
// its own handle because a watch holds its connection for minutes.
//
// Credentials never reach a log or an error message: libcurl's verbose mode stays off,
// and only the method, URL, status and duration are logged.

#include "core/kube/credential_source.h"
#include "core/kube/curl_support.h"
#include "core/kube/transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

namespace powerctl::kube {
namespace {

using Clock = std::chrono::steady_clock;

class CurlTransport : public HttpTransport {
 public:
  CurlTransport(const ClusterConnection& connection, const TransportOptions& options,
                curl::Target target, curl::Handle handle)
      : connection_(connection),
        options_(options),
        target_(std::move(target)),
        credentials_(connection, options.environment),
        handle_(std::move(handle)) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    POWERCTL_TRY(credential, credentials_.Get());
    for (int attempt = 0;; ++attempt) {
      if (Cancelled(request)) return Cancel(request, Clock::now());
      HttpResponse response;
      std::string failure;
      bool cancelled = false;
      bool too_large = false;
      auto start = Clock::now();
      {
        std::lock_guard lock(mu_);
        CURL* handle = handle_.get();
        curl_easy_reset(handle);  // keeps the live connection, clears the last request's options
        curl::Slist headers, connect_to;
        Configure(handle, request, credential, headers, connect_to, error_buffer_);
        curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");  // big lists compress well
        curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, curl::AppendBody);
        curl_easy_setopt(handle, CURLOPT_WRITEDATA, &response.body);
        curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, curl::CollectHeader);
        curl_easy_setopt(handle, CURLOPT_HEADERDATA, &response.headers);
        CURLcode rc = curl_easy_perform(handle);
        if (rc == CURLE_OK) {
          curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
        } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
          cancelled = true;                    // only the cancel flag's progress callback aborts
        } else if (rc == CURLE_WRITE_ERROR) {  // only AppendBody's cap refuses to write
          too_large = true;
          failure = request.method + " " + target_.display + request.path +
                    ": the response is larger than " +
                    std::to_string(curl::kMaxResponseBodyBytes >> 20) + " MiB";
        } else {
          failure = curl::NetworkMessage(rc, handle, error_buffer_, target_.display);
        }
      }
      if (cancelled) return Cancel(request, start);
      LogRequest(request, response.status, failure, start);
      if (!failure.empty())  // a body over the cap is the server's answer: not worth retrying
        return MakeError(too_large ? ErrorCode::kApi : ErrorCode::kNetwork, failure);
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
      if (Cancelled(request)) return Cancel(request, Clock::now());
      curl::Handle handle(curl_easy_init());
      if (!handle) return MakeError(ErrorCode::kInternal, "curl_easy_init failed");
      char error_buffer[CURL_ERROR_SIZE] = "";
      curl::Slist headers, connect_to;
      Configure(handle.get(), request, credential, headers, connect_to, error_buffer);
      curl::StreamState state;
      state.handle = handle.get();
      state.on_line = &on_line;
      curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, curl::StreamWrite);
      curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &state);
      auto start = Clock::now();
      CURLcode rc = curl_easy_perform(handle.get());
      if (state.stopped) {
        LogRequest(request, state.status, "", start);
        return state.status;
      }
      if (rc == CURLE_ABORTED_BY_CALLBACK) {
        return Cancel(request, start);
      }
      if (rc != CURLE_OK) {
        std::string failure = curl::NetworkMessage(rc, handle.get(), error_buffer, target_.display);
        LogRequest(request, 0, failure, start);
        return MakeError(ErrorCode::kNetwork, failure);
      }
      long status = 0;
      curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
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
  void Configure(CURL* handle, const HttpRequest& request, const CurrentCredential& credential,
                 curl::Slist& headers, curl::Slist& connect_to, char* error_buffer) const {
    error_buffer[0] = '\0';
    std::string url = target_.base_url + request.path;
    curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: we are multi-threaded
    curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(handle, CURLOPT_USERAGENT, "powerctl");
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    // Watches are idle for minutes: keepalive probes notice a dead peer instead of a
    // low-speed limit, which would cut healthy idle watches.
    curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
    if (request.cancel != nullptr) {
      curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, curl::AbortIfCancelled);
      // libcurl passes the pointer back untouched; the callback only reads through it.
      curl_easy_setopt(handle, CURLOPT_XFERINFODATA,
                       const_cast<std::atomic<bool>*>(request.cancel));
    }
    if (request.method == "GET") {
      curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.c_str());
    }
    headers.Add("Accept: application/json");
    headers.Add("Expect:");  // no 100-continue round trip for large bodies
    if (!request.content_type.empty()) headers.Add("Content-Type: " + request.content_type);
    if (!credential.token.empty()) headers.Add("Authorization: Bearer " + credential.token);
    if (!target_.host_header.empty()) headers.Add(target_.host_header);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
    if (!target_.connect_to.empty()) {
      connect_to.Add(target_.connect_to);
      curl_easy_setopt(handle, CURLOPT_CONNECT_TO, connect_to.get());
    }
    ConfigureTls(handle, credential);
  }

  void ConfigureTls(CURL* handle, const CurrentCredential& credential) const {
    auto blob = [](const std::string& pem) {
      return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
    };
    if (connection_.insecure_skip_tls_verify) {
      curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!connection_.ca_pem.empty()) {
      // Only the kubeconfig's CA, as in Go: the system store must not vouch for the server.
      curl_easy_setopt(handle, CURLOPT_CAINFO, static_cast<char*>(nullptr));
      curl_easy_setopt(handle, CURLOPT_CAPATH, static_cast<char*>(nullptr));
      curl_blob ca = blob(connection_.ca_pem);
      curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (!credential.cert_pem.empty() && !credential.key_pem.empty()) {
      curl_blob cert = blob(credential.cert_pem);
      curl_blob key = blob(credential.key_pem);
      curl_easy_setopt(handle, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(handle, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
    }
  }

  static bool Cancelled(const HttpRequest& request) {
    return request.cancel != nullptr && request.cancel->load();
  }
  // A cancel is the caller stopping, not a failure: logged as such.
  Error Cancel(const HttpRequest& request, Clock::time_point start) const {
    if (options_.log) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      options_.log->debug("{} {}{} cancelled after {}ms", request.method, target_.display,
                          request.path, ms.count());
    }
    return CancelledError(request.method + " " + target_.display + request.path);
  }

  // Method, URL, status and time only: headers carry the bearer token and bodies may carry
  // Secret data, so neither is logged at any level.
  void LogRequest(const HttpRequest& request, long status, const std::string& failure,
                  Clock::time_point start) const {
    if (!options_.log) return;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
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
  std::mutex mu_;  // guards handle_ and error_buffer_
  curl::Handle handle_;
  char error_buffer_[CURL_ERROR_SIZE] = "";
};

}  // namespace

Result<std::unique_ptr<HttpTransport>> MakeCurlTransport(const ClusterConnection& connection,
                                                         const TransportOptions& options) {
  static const CURLcode global_init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (global_init != CURLE_OK) {
    return MakeError(ErrorCode::kInternal,
                     std::string("curl_global_init failed: ") + curl_easy_strerror(global_init));
  }
  POWERCTL_TRY(target, curl::MakeTarget(connection));
  curl::Handle handle(curl_easy_init());
  if (!handle) return MakeError(ErrorCode::kInternal, "curl_easy_init failed");
  return std::unique_ptr<HttpTransport>(
      std::make_unique<CurlTransport>(connection, options, std::move(target), std::move(handle)));
}

}  // namespace powerctl::kube
