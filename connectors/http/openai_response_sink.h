// OpenAiResponseSink: writes one request's answer to its HTTP client, either as one JSON
// response (chat.completion / text_completion) or as an SSE stream of chunks ending with
// `data: [DONE]`.
//
// A stream's head (200, text/event-stream) is sent with the first token or event, not at
// submission, so a request refused at admission still gets its real status (429, 503) and
// an error body. Each token becomes one SSE event, posted to the event loop at once (never
// buffered). A stream that fails after it started gets an error event, then [DONE].
// Side information (a node's named events, e.g. `sources`; the stage timings when asked for
// with X-Sluice-Timings: 1) rides as extra fields "sluice_<type>" on the last object: the
// finish chunk of a stream, the response of a JSON answer (timings there are the header
// X-Sluice-Timings). Never a separate SSE event: OpenAI's SDKs hand every event to the
// caller's loop as a chunk. Optional: the usage chunk (stream_options.include_usage).
//
// Resumable streams: with a journal (SinkOptions::journal, stream_journals.h) the stream is
// written through it, so each event carries an `id:` and is kept for GET /v1/streams/{id};
// a request cancelled because its client left still ends its journal with an error event and
// [DONE], so a late resume learns why the answer stopped.
//
// Thread-safety: a Request serialises its sink calls, which is all this needs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "connectors/http/http_metrics.h"
#include "connectors/http/openai_response.h"
#include "connectors/http/response_writer.h"
#include "connectors/http/stream_journals.h"
#include "graph/request.h"

namespace sluice::http {

struct SinkOptions {
  Endpoint endpoint = Endpoint::kChatCompletions;
  bool stream = false;
  bool include_usage = false;
  bool want_timings = false;
  bool progress = true;    // streams: a comment per "progress" event before the first token
  std::string request_id;  // shown as X-Request-Id
  std::string traceparent; // this request's span (tracing on), shown as traceparent; empty: none
  std::shared_ptr<HttpMetrics> metrics;
  std::shared_ptr<const std::vector<std::string>> stage_names;
  // Called once with the request's usage when it ends (the API key's token budget); may be empty.
  std::function<void(const Usage&)> on_usage;
  // Streams: the journal the stream is written through, and the registry that lists it once
  // the stream starts; both null when resuming is off.
  std::shared_ptr<StreamJournal> journal;
  std::shared_ptr<StreamJournals> journals;
};

class OpenAiResponseSink final : public ResponseSink {
 public:
  OpenAiResponseSink(std::shared_ptr<ResponseWriter> writer, ChunkWriter chunks, SinkOptions options)
      : writer_(std::move(writer)), chunks_(std::move(chunks)), options_(std::move(options)) {}

  void on_token(std::string_view piece) override;
  void on_event(std::string_view type, std::string_view json) override;
  void on_complete(const Request& request) override;

 private:
  void start_stream();
  void write(std::string_view sse);  // to the journal when there is one, else to the writer
  void end_stream();
  bool client_gone() const;
  void send_error(const Status& status);

  std::shared_ptr<ResponseWriter> writer_;
  ChunkWriter chunks_;
  SinkOptions options_;
  bool started_ = false;
  bool content_started_ = false;  // a content chunk went out: progress comments stop
  std::string text_;                                         // non-streaming answer so far
  ChunkWriter::Extras extras_;                               // side events, for the last object
};

}  // namespace sluice::http
