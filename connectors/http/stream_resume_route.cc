// HttpSource's resumable streams (http_source.h, stream_journals.h): the journal a streamed
// completion is written through, the X-Sluice-Resume header that keeps its generation running
// without a client, and GET /v1/streams/{id} with Last-Event-ID.
#include <charconv>

#include "connectors/http/http_source.h"
#include "connectors/http/openai_response.h"

namespace sluice::http {
namespace {

constexpr std::size_t kStreamsPrefix = 12;  // "/v1/streams/"

// Last-Event-ID: the id of the last event the client holds, a decimal number; absent: 0 (all).
std::optional<std::uint64_t> parse_last_event_id(const std::string* header) {
  if (!header || header->empty()) return 0;
  std::uint64_t v = 0;
  const char* end = header->data() + header->size();
  auto [p, ec] = std::from_chars(header->data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

std::string seconds_text(Nanos d) { return std::to_string(d / kNanosPerSecond) + "s"; }

}  // namespace

std::shared_ptr<StreamJournal> HttpSource::stream_journal(Endpoint endpoint, const HttpRequest& http, bool stream,
                                                          const Routing& routing, const std::string& request_id,
                                                          const std::shared_ptr<ResponseWriter>& writer, bool* refused) {
  Nanos keep_running = 0;
  if (const std::string* h = http.header("x-sluice-resume")) {
    auto refuse = [&](const std::string& message) {
      *refused = true;
      respond_error(endpoint, writer, ApiError{400, message, "invalid_request_error", "X-Sluice-Resume", "invalid_value"});
      return nullptr;
    };
    if (!journals_->enabled()) {
      return refuse("this server keeps no streams to resume: its http source '" + name_ + "' has resume.grace 0");
    }
    if (!stream) return refuse("X-Sluice-Resume applies to streamed answers; this request has no \"stream\": true");
    std::optional<Nanos> parsed = parse_timeout_header(*h);
    if (!parsed) return refuse("X-Sluice-Resume '" + *h + "' is not a positive duration such as 30s or 1.5s");
    if (*parsed > journals_->options().max_keep_running) {
      return refuse("X-Sluice-Resume '" + *h + "' is longer than this source allows (resume.max_keep_running " +
                    seconds_text(journals_->options().max_keep_running) + ")");
    }
    keep_running = *parsed;
  }
  if (!stream || !journals_->enabled()) return nullptr;
  return journals_->create(request_id, routing.tenant, keep_running, writer);
}

void HttpSource::handle_stream_resume(const HttpRequest& http, const std::shared_ptr<ResponseWriter>& writer,
                                      const AuthDecision& auth) {
  constexpr Endpoint endpoint = Endpoint::kStreams;
  const std::string id(http.path().substr(kStreamsPrefix));
  auto refuse = [&](int status, const std::string& result, const std::string& message, const std::string& code) {
    journals_->count_resume(result);
    respond_error(endpoint, writer, ApiError{status, message, "invalid_request_error", "", code});
  };
  std::string shown;
  append_json_string_lossy(shown, id.size() > 80 ? id.substr(0, 80) + "..." : id);
  if (!journals_->enabled()) {
    return refuse(404, "not_found", "this server keeps no streams to resume: its http source '" + name_ +
                                        "' has resume.grace 0", "stream_not_found");
  }
  const std::optional<std::uint64_t> after = parse_last_event_id(http.header("last-event-id"));
  if (!after) {
    journals_->count_resume("bad_request");
    return respond_error(endpoint, writer,
                         ApiError{400, "Last-Event-ID '" + *http.header("last-event-id") +
                                           "' is not an event id of this server (a decimal number, as the `id:` lines carry)",
                                  "invalid_request_error", "Last-Event-ID", "invalid_value"});
  }
  // Another tenant's stream is answered as unknown: a key learns nothing of streams it does not own.
  std::shared_ptr<StreamJournal> journal = journals_->find(id, auth.tenant);
  if (!journal) {
    return refuse(404, "not_found", "no stream " + shown + " can be resumed here (never streamed, or forgotten " +
                                        seconds_text(journals_->options().grace) +
                                        " after it ended or its client left: resume.grace)",
                  "stream_not_found");
  }
  // Registered before the replay is posted: a connection that drops during it detaches.
  writer->on_disconnect([weak = std::weak_ptr<StreamJournal>(journal), w = writer.get(), metrics = metrics_] {
    auto j = weak.lock();
    if (!j || j->ended()) return;
    metrics->client_disconnects.inc();
    j->detach(w);
  });
  switch (journal->attach(writer, *after)) {
    case StreamJournal::Attach::kResumed:
      journals_->count_resume("resumed");
      metrics_->count_response(endpoint, 200);
      return;
    case StreamJournal::Attach::kUnknownEvent:
      journals_->count_resume("bad_request");
      return respond_error(endpoint, writer,
                           ApiError{400, "Last-Event-ID " + std::to_string(*after) + " names no event stream " + shown +
                                             " has sent yet",
                                    "invalid_request_error", "Last-Event-ID", "invalid_value"});
    case StreamJournal::Attach::kGone:
      return refuse(410, "gone", "the events of stream " + shown + " after " + std::to_string(*after) +
                                     " are no longer kept (resume.max_stream_bytes); start the request again",
                    "stream_events_dropped");
    case StreamJournal::Attach::kNotKept:
      return refuse(410, "not_kept", "stream " + shown + " kept no events: the server's resume.max_total_bytes was "
                                     "full when it ran; start the request again",
                    "stream_events_dropped");
  }
}

}  // namespace sluice::http
