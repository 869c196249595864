// http_post: one blocking HTTP(S) POST through libcurl, for what Sluice sends out on its own
// (the alert webhook). Not for request paths: it blocks its caller for up to `timeout`.
//
// Contract:
//  - http_url_problem(url) is empty for an absolute http:// or https:// URL with a host, else
//    a sentence saying what is wrong (the validator puts it in the file's error);
//  - http_post(...) sends `body` with `content_type`, follows no redirects, and is OK only for a
//    2xx answer within `timeout` (connect included); otherwise an kUnavailable Status naming the
//    URL (its password, if any, redacted) and what went wrong (curl's error or the status line).
//    Safe to call from several threads (each call has its own handle).
#pragma once

#include <optional>
#include <string>

#include "graph/clock.h"
#include "graph/status.h"

namespace sluice {

std::optional<std::string> http_url_problem(const std::string& url);

Status http_post(const std::string& url, const std::string& content_type, const std::string& body, Nanos timeout);

}  // namespace sluice
