#include "connectors/http/openai_response_sink.h"

namespace sluice::http {

void OpenAiResponseSink::start_stream() {
  if (started_) return;
  started_ = true;
  std::vector<HttpHeader> headers{
      {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}, {"X-Request-Id", options_.request_id}};
  if (!options_.traceparent.empty()) headers.push_back({"traceparent", options_.traceparent});
  if (options_.journal) {
    options_.journal->start(200, std::move(headers));
    if (options_.journals) options_.journals->add(options_.journal);
    return;
  }
  writer_->start_stream(200, "text/event-stream", headers);
}

void OpenAiResponseSink::write(std::string_view sse) {
  if (options_.journal) return options_.journal->write(sse);
  writer_->write_chunk(sse);
}

void OpenAiResponseSink::end_stream() {
  if (options_.journal) return options_.journal->end();
  writer_->end_stream();
}

bool OpenAiResponseSink::client_gone() const {
  return options_.journal ? !options_.journal->client_attached() : writer_->closed();
}

void OpenAiResponseSink::on_token(std::string_view piece) {
  if (!options_.stream || chunks_.tool_call()) {  // a tool call goes out whole, at the end
    text_ += piece;
    return;
  }
  start_stream();
  content_started_ = true;
  write(chunks_.content_event(piece));
}

void OpenAiResponseSink::on_event(std::string_view type, std::string_view json) {
  // A heartbeat keeps a queued or long-prefilling stream alive through proxies: an SSE
  // comment, which clients ignore. Non-streamed answers have nothing to keep alive.
  if (type == "heartbeat") {
    if (options_.stream) {
      start_stream();
      write(": ping\n\n");
    }
    return;
  }
  // Progress before the first token (which stages a stream has passed), also as a comment:
  // ": progress {"stage":"fuse"}". Once tokens flow they say enough.
  if (type == "progress") {
    if (options_.stream && options_.progress && !content_started_) {
      start_stream();
      std::string comment = ": progress ";
      comment.append(json);
      comment += "\n\n";
      write(comment);
    }
    return;
  }
  // Side information waits for the answer's last object (the finish chunk, or the whole
  // response), where it is an extra field: a separate SSE event is what stock clients choke on.
  for (auto& [t, j] : extras_) {
    if (t == type) {
      j = json;
      return;
    }
  }
  extras_.emplace_back(type, json);
}

void OpenAiResponseSink::send_error(const Status& status) {
  HttpResponse response = error_response_for_status(status, options_.request_id);
  if (!options_.traceparent.empty()) response.headers.push_back({"traceparent", options_.traceparent});
  options_.metrics->count_response(options_.endpoint, response.status);
  writer_->send(response);
}

void OpenAiResponseSink::on_complete(const Request& request) {
  // Tokens spent count against the key's budget whatever became of the answer (a cancelled
  // request used what it computed).
  if (options_.on_usage) options_.on_usage(request.usage);
  const Status& status = request.status();
  if (status.code == StatusCode::kCancelled && client_gone()) {
    // The client is gone; nothing can reach it. Counted as nginx does, 499. A journal still
    // records why the answer stopped, for a client that reconnects within the grace period.
    options_.metrics->count_response(options_.endpoint, 499);
    if (options_.journal && started_) {
      write(ChunkWriter::error_event(error_for_status(status)));
      write(ChunkWriter::kDoneEvent);
    }
    if (options_.journal) options_.journal->end();
    return;
  }
  std::string timings;
  if (options_.want_timings && options_.stage_names) timings = timings_json(request, *options_.stage_names);

  if (options_.stream && (started_ || status.ok())) {
    start_stream();
    if (status.ok()) {
      if (!timings.empty()) extras_.emplace_back("timings", timings);
      // A stream's headers left before any stage ran: a degradation is said in the last chunk.
      if (options_.stage_names) {
        if (std::string degraded = degradations_json(request, *options_.stage_names); !degraded.empty()) {
          extras_.emplace_back("degraded", std::move(degraded));
        }
      }
      std::string tail = chunks_.tool_call() ? chunks_.tool_call_event(text_) : std::string();
      tail += chunks_.finish_event(request.finish_reason, extras_);
      if (options_.include_usage) tail += chunks_.usage_event(request.usage);
      write(tail);
    } else {
      std::string tail;
      if (!timings.empty()) tail += chunks_.timings_event(timings);
      tail += ChunkWriter::error_event(error_for_status(status));
      write(tail);
    }
    write(ChunkWriter::kDoneEvent);
    end_stream();
    options_.metrics->count_response(options_.endpoint, 200);
    return;
  }
  if (!status.ok()) {
    if (options_.journal) options_.journal->end();  // nothing streamed: nothing to resume
    return send_error(status);
  }

  HttpResponse response;
  response.headers.push_back({"X-Request-Id", options_.request_id});
  if (!options_.traceparent.empty()) response.headers.push_back({"traceparent", options_.traceparent});
  if (!timings.empty()) response.headers.push_back({"X-Sluice-Timings", timings});
  if (options_.stage_names) {
    if (std::string degraded = degradations_header(request, *options_.stage_names); !degraded.empty()) {
      response.headers.push_back({"X-Sluice-Degraded", std::move(degraded)});
    }
  }
  response.body = chunks_.full_response(text_, request.finish_reason, request.usage, extras_);
  options_.metrics->count_response(options_.endpoint, 200);
  writer_->send(response);
}

}  // namespace sluice::http
