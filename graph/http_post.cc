#include "graph/http_post.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace sluice {
namespace {

// curl_global_init is not thread-safe and must run once before any handle.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UrlFree {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct EasyFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct ListFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// The URL as it may appear in logs and errors: without its password.
std::string redacted(const std::string& url) {
  std::unique_ptr<CURLU, UrlFree> u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "(unparsable URL)";
  char* password = nullptr;
  if (curl_url_get(u.get(), CURLUPART_PASSWORD, &password, 0) == CURLUE_OK) {
    curl_free(password);
    curl_url_set(u.get(), CURLUPART_PASSWORD, "***", 0);
  }
  char* out = nullptr;
  if (curl_url_get(u.get(), CURLUPART_URL, &out, 0) != CURLUE_OK) return "(unparsable URL)";
  std::string s = out;
  curl_free(out);
  return s;
}

}  // namespace

std::optional<std::string> http_url_problem(const std::string& url) {
  init_curl_once();
  std::unique_ptr<CURLU, UrlFree> u(curl_url());
  if (!u) return "cannot parse URLs (out of memory)";
  // Without CURLU_DEFAULT_SCHEME a URL must carry its scheme: "example.com/hook" is refused.
  if (CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0); rc != CURLUE_OK) {
    // Not echoed: the URL may carry a password, and one that does not parse cannot be redacted.
    return std::string("not an absolute URL (") + curl_url_strerror(rc) + "); write e.g. https://alerts.example.com/hook";
  }
  char* scheme = nullptr;
  std::string s;
  if (curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK) {
    s = scheme;
    curl_free(scheme);
  }
  if (s != "http" && s != "https") return "scheme '" + s + "' is not http or https";
  char* host = nullptr;
  if (curl_url_get(u.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) return "the URL has no host";
  curl_free(host);
  return std::nullopt;
}

Status http_post(const std::string& url, const std::string& content_type, const std::string& body, Nanos timeout) {
  init_curl_once();
  std::unique_ptr<CURL, EasyFree> c(curl_easy_init());
  if (!c) return Status::Error(StatusCode::kUnavailable, "POST " + redacted(url) + ": cannot make a curl handle");
  const std::string content_header = "Content-Type: " + content_type;
  std::unique_ptr<curl_slist, ListFree> headers(curl_slist_append(nullptr, content_header.c_str()));
  // No "Expect: 100-continue" round trip for a small body.
  headers.reset(curl_slist_append(headers.release(), "Expect:"));
  char error[CURL_ERROR_SIZE] = {0};
  const long timeout_ms = std::max<long>(1, static_cast<long>(timeout / 1000000));
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c.get(), CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "sluice");
  // The answer's body is not read: discard it rather than have curl print it to stdout.
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  const CURLcode rc = curl_easy_perform(c.get());
  if (rc != CURLE_OK) {
    return Status::Error(StatusCode::kUnavailable,
                         "POST " + redacted(url) + ": " + (error[0] ? error : curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code > 299) {
    return Status::Error(StatusCode::kUnavailable, "POST " + redacted(url) + ": answered HTTP " + std::to_string(code));
  }
  return Status::Ok();
}

}  // namespace sluice
