// Status: how a request ended, in terms every connector can translate (HTTP status, Kafka
// dead-letter reason). A Status is a value; `cause` says why a request was aborted so metrics
// can count aborts by cause.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // the request itself is wrong (400)
  kNotFound,           // unknown model or resource (404)
  kOverloaded,         // shed at admission; retry later (429)
  kDeadlineExceeded,   // waited or ran past its deadline (504)
  kCancelled,          // the client went away
  kUnavailable,        // draining, unhealthy, abandoned at shutdown (503)
  kInternal,           // a node failed (500)
};

// Why a request did not finish normally; one metric label value each.
enum class AbortCause { kNone, kClientDisconnect, kTimeout, kShed, kFailure, kShutdown };

std::string_view status_code_name(StatusCode code);
std::string_view abort_cause_name(AbortCause cause);
int http_status_for(StatusCode code);

struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;
  AbortCause cause = AbortCause::kNone;
  // For kOverloaded: seconds after which a retry is likely to be admitted.
  double retry_after_seconds = 0;
  // For an error a client should tell apart (OpenAI's `code` and `param`): e.g.
  // context_length_exceeded on `messages`. Empty: the code's name, no param.
  std::string api_code;
  std::string param;

  bool ok() const { return code == StatusCode::kOk; }
  Status& with_api(std::string c, std::string p = {}) & {
    api_code = std::move(c);
    param = std::move(p);
    return *this;
  }
  Status&& with_api(std::string c, std::string p = {}) && { return std::move(with_api(std::move(c), std::move(p))); }
  static Status Ok() { return {}; }
  static Status Error(StatusCode code, std::string message, AbortCause cause = AbortCause::kFailure) {
    return Status{code, std::move(message), cause, 0, {}, {}};
  }
};

}  // namespace sluice
