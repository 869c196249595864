#include "nodes/cache/cached_answer.h"

#include <algorithm>

#include "graph/citation.h"
#include "graph/request_citations.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/node/retrieval_nodes.h"

namespace sluice::cache {

std::size_t CachedAnswer::bytes() const {
  std::size_t n = sizeof(CachedAnswer) + finish_reason.size();
  for (const auto& p : parts) n += sizeof(AnswerPart) + p.type.size() + p.text.size();
  for (const auto& c : cited) n += sizeof(std::string) + c.size();
  return n;
}

void replay(const CachedAnswer& answer, Request& request, Nanos now) {
  request.usage = answer.usage;
  request.finish_reason = answer.finish_reason;
  for (const auto& part : answer.parts) {
    if (part.event) {
      request.emit_event(part.type, part.text);
    } else {
      request.emit_token(part.text, now);
    }
  }
  request.complete(Status::Ok(), now);
}

AnswerRecorder::AnswerRecorder(Store store, std::size_t max_bytes, Nanos now)
    : store_(std::move(store)), max_bytes_(max_bytes), answer_(std::make_shared<CachedAnswer>()) {
  answer_->created = now;
}

void AnswerRecorder::add(AnswerPart part) {
  if (overflow_) return;
  bytes_ += part.type.size() + part.text.size();
  if (bytes_ > max_bytes_) {
    overflow_ = true;
    answer_->parts.clear();
    return;
  }
  answer_->parts.push_back(std::move(part));
}

void AnswerRecorder::on_token(std::string_view piece) { add({false, "", std::string(piece)}); }

void AnswerRecorder::on_event(std::string_view type, std::string_view json) {
  // Keep-alives and progress belong to a connection, not to the answer.
  if (connection_event(type)) return;
  add({true, std::string(type), std::string(json)});
}

void AnswerRecorder::on_complete(const Request& request) {
  if (overflow_ || !request.status().ok()) return;
  if (request.finish_reason != "stop" && request.finish_reason != "length") return;
  answer_->usage = request.usage;
  answer_->finish_reason = request.finish_reason;
  if (request.completed_at > 0) answer_->created = request.completed_at;  // the ttl counts from the answer
  if (const auto snapshot = request.attachment<const retrieval::KbSnapshot>(retrieval::kSnapshotKey)) {
    answer_->kb_version = snapshot->version();
  }
  if (const auto citations = request.attachment<const std::vector<Citation>>(kAnswerCitationsKey)) {
    for (const auto& c : *citations) answer_->cited.push_back(c.chunk_key);
    std::sort(answer_->cited.begin(), answer_->cited.end());
    answer_->cited.erase(std::unique(answer_->cited.begin(), answer_->cited.end()), answer_->cited.end());
  }
  answer_->seconds = request.arrival > 0 && request.completed_at > request.arrival
                         ? static_cast<double>(request.completed_at - request.arrival) / 1e9
                         : 0.0;
  store_(std::move(answer_));
}

}  // namespace sluice::cache
