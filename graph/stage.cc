#include "graph/stage.h"

namespace sluice {

void retire(Request& r, Nanos now, const std::string& stage) {
  if (r.cancelled()) {
    AbortCause cause = r.cancel_cause();
    r.complete(Status::Error(StatusCode::kCancelled, "request cancelled before stage '" + stage + "'",
                             cause == AbortCause::kNone ? AbortCause::kClientDisconnect : cause),
               now);
    return;
  }
  r.complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed before stage '" + stage + "'",
                           AbortCause::kTimeout),
             now);
}

BatchPtr without_skipped(const Batch& b, std::uint16_t stage) {
  auto sub = std::make_shared<Batch>();
  sub->id = b.id;
  for (const RequestPtr& r : b.requests) {
    if (r->trace().degradation(stage) != Degradation::kSkip) sub->requests.push_back(r);
  }
  return sub;
}

void fail_active(Batch& b, Nanos now, const std::string& stage, const std::string& what) {
  for (auto& r : b.requests) {
    if (r->done()) continue;
    r->complete(Status::Error(StatusCode::kInternal, "node '" + stage + "' failed: " + what, AbortCause::kFailure), now);
  }
}

void answer_forgotten(Batch& b, Clock& clock, const std::string& pipeline) {
  Nanos now = clock.now();
  for (auto& r : b.requests) {
    if (r->done() || retire_if_inactive(*r, now, "end")) continue;
    r->complete(Status::Error(StatusCode::kInternal, "pipeline '" + pipeline + "' ended without answering the request",
                              AbortCause::kFailure),
                now);
  }
}

}  // namespace sluice
