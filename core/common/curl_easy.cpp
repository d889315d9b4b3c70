#include "core/common/curl_easy.h"

#include <algorithm>
#include <cctype>
#include <system_error>

namespace powerctl::curl {

Status GlobalInit() {
  // A function static runs it once, before the first handle; concurrent first calls wait.
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) {
    return MakeError(ErrorCode::kInternal,
                     std::string("curl_global_init failed: ") + curl_easy_strerror(init));
  }
  return OkStatus();
}

Result<Handle> NewHandle() {
  POWERCTL_CHECK_OK(GlobalInit());
  Handle handle(curl_easy_init());
  if (!handle) return MakeError(ErrorCode::kInternal, "curl_easy_init failed");
  return handle;
}

size_t AppendCapped(char* data, size_t size, size_t count, void* capped_body) {
  auto* body = static_cast<CappedBody*>(capped_body);
  const std::size_t n = size * count;
  if (body->data->size() + n > body->max_bytes) {
    body->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  body->data->append(data, n);
  return n;
}

size_t CollectHeader(char* data, size_t size, size_t count, void* headers) {
  auto* collected = static_cast<std::map<std::string, std::string>*>(headers);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    collected->clear();
    return size * count;
  }
  std::size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t begin = line.find_first_not_of(" \t", colon + 1);
  std::size_t end = line.find_last_not_of(" \t\r\n");
  std::string value =
      begin == std::string::npos || end < begin ? "" : line.substr(begin, end - begin + 1);
  auto [it, inserted] = collected->emplace(name, value);
  if (!inserted) it->second += ", " + value;
  return size * count;
}

int AbortIfCancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}

namespace {

void SetTls(CURL* handle, const TlsOptions& tls) {
  // CURL_BLOB_COPY: libcurl keeps its own copy, the PEM text may go when setopt returns.
  auto blob = [](std::string_view pem) {
    return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  };
  if (tls.insecure_skip_verify) {
    curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!tls.ca_pem.empty()) {
    // Only this CA, as in Go: the system store must not vouch for the server.
    curl_easy_setopt(handle, CURLOPT_CAINFO, static_cast<char*>(nullptr));
    curl_easy_setopt(handle, CURLOPT_CAPATH, static_cast<char*>(nullptr));
    curl_blob ca = blob(tls.ca_pem);
    curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!tls.cert_pem.empty() && !tls.key_pem.empty()) {
    curl_blob cert = blob(tls.cert_pem);
    curl_blob key = blob(tls.key_pem);
    curl_easy_setopt(handle, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(handle, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

}  // namespace

Transfer::Transfer(CURL* handle, const Request& request)
    : handle_(handle), timeout_(request.timeout), connect_timeout_(request.connect_timeout) {
  curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer_);
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: callers are multi-threaded
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_USERAGENT, "powerctl");
  if (timeout_.count() > 0) {
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  }
  if (connect_timeout_.count() > 0) {
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(connect_timeout_.count()));
  }
  if (request.tcp_keepalive) curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  if (request.accept_compressed) curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
  if (request.cancel != nullptr) {
    curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, AbortIfCancelled);
    // libcurl passes the pointer back untouched; the callback only reads through it.
    curl_easy_setopt(handle, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(request.cancel));
  }
  if (request.method == "GET") {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
  } else {
    curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (request.method != "GET" && (!request.body.empty() || request.method == "POST" ||
                                  request.method == "PUT" || request.method == "PATCH")) {
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    // Never null: a null POSTFIELDS would make libcurl read the body from stdin.
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
  }
  headers_.Add("Expect:");  // no 100-continue round trip for large bodies
  if (!request.content_type.empty()) headers_.Add("Content-Type: " + request.content_type);
  for (const std::string& line : request.headers) headers_.Add(line);
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers_.get());
  if (!request.connect_to.empty()) {
    connect_to_.Add(request.connect_to);
    curl_easy_setopt(handle, CURLOPT_CONNECT_TO, connect_to_.get());
  }
  SetTls(handle, request.tls);
}

Transfer::~Transfer() {
  // The error buffer, header lists and body die with this object: the handle must not keep
  // pointing at them. Resetting keeps the live connection.
  curl_easy_reset(handle_);
}

void Transfer::KeepResponse(std::string* body, std::size_t max_body_bytes,
                            std::map<std::string, std::string>* headers) {
  body_ = CappedBody{body, max_body_bytes, false};
  curl_easy_setopt(handle_, CURLOPT_WRITEFUNCTION, AppendCapped);
  curl_easy_setopt(handle_, CURLOPT_WRITEDATA, &body_);
  curl_easy_setopt(handle_, CURLOPT_HEADERFUNCTION, CollectHeader);
  curl_easy_setopt(handle_, CURLOPT_HEADERDATA, headers);
}

void Transfer::WriteTo(curl_write_callback write, void* data) {
  curl_easy_setopt(handle_, CURLOPT_WRITEFUNCTION, write);
  curl_easy_setopt(handle_, CURLOPT_WRITEDATA, data);
}

long Transfer::status() const {
  long status = 0;
  curl_easy_getinfo(handle_, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

Error Transfer::NetworkError(CURLcode code, const std::string& where) const {
  std::string detail = error_buffer_[0] != '\0' ? error_buffer_ : curl_easy_strerror(code);
  auto fail = [](std::string message) {
    return MakeError(ErrorCode::kNetwork, std::move(message));
  };
  switch (code) {
    case CURLE_COULDNT_CONNECT: {
      // The system's words ("Connection refused"), not libcurl's longer sentence around them.
      long os_errno = 0;
      curl_easy_getinfo(handle_, CURLINFO_OS_ERRNO, &os_errno);
      if (os_errno != 0) {
        detail = std::error_code(static_cast<int>(os_errno), std::generic_category()).message();
      }
      return fail("cannot connect to " + where + ": " + detail);
    }
    case CURLE_COULDNT_RESOLVE_HOST:
      return fail("cannot resolve the host of " + where + ": " + detail);
    case CURLE_OPERATION_TIMEDOUT: {
      // Which of the two timeouts ran out: the time taken is at least that timeout, and the
      // connect timeout counts only when it is the shorter one. Halfway between tells them
      // apart without depending on how exactly libcurl measures either.
      curl_off_t elapsed_us = 0;
      curl_easy_getinfo(handle_, CURLINFO_TOTAL_TIME_T, &elapsed_us);
      const auto elapsed = std::chrono::microseconds(elapsed_us);
      const bool connecting =
          connect_timeout_.count() > 0 &&
          (timeout_.count() == 0 ||
           (connect_timeout_ < timeout_ && 2 * elapsed < connect_timeout_ + timeout_));
      if (connecting) {
        return fail("connecting to " + where + " timed out after " +
                    std::to_string(connect_timeout_.count()) + "ms");
      }
      if (timeout_.count() > 0) {
        return fail("request to " + where + " timed out after " + std::to_string(timeout_.count()) +
                    "ms");
      }
      return fail("request to " + where + " timed out: " + detail);
    }
    case CURLE_PEER_FAILED_VERIFICATION:
      return fail("the TLS certificate of " + where + " is not trusted: " + detail);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CLIENTCERT:
      return fail("TLS handshake with " + where + " failed: " + detail);
    default:
      return fail("request to " + where + " failed: " + detail);
  }
}

}  // namespace powerctl::curl
