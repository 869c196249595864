#include "connectors/http/response_writer.h"

#include <utility>

namespace sluice::http {

bool ResponseWriter::advance(State from, State to) {
  int expected = from;
  return state_.compare_exchange_strong(expected, to, std::memory_order_acq_rel);
}

void ResponseWriter::post(LoopOp::Kind kind, std::string bytes) {
  LoopOp op;
  op.kind = kind;
  op.conn_id = conn_id_;
  op.seq = seq_;
  op.bytes = std::move(bytes);
  mailbox_->post(std::move(op));
}

void ResponseWriter::send(const HttpResponse& response) {
  if (!advance(kIdle, kDone) || closed()) return;
  if (extra_headers_.empty()) return post(LoopOp::Kind::kResponse, serialize_response(response, close_after_));
  HttpResponse with = response;
  with.headers.insert(with.headers.end(), extra_headers_.begin(), extra_headers_.end());
  post(LoopOp::Kind::kResponse, serialize_response(with, close_after_));
}

void ResponseWriter::send(HttpResponse&& response) {
  if (!advance(kIdle, kDone) || closed()) return;
  response.headers.insert(response.headers.end(), extra_headers_.begin(), extra_headers_.end());
  post(LoopOp::Kind::kResponse, serialize_response(std::move(response), close_after_));
}

void ResponseWriter::start_stream(int status, std::string_view content_type, const std::vector<HttpHeader>& headers) {
  if (!advance(kIdle, kStreaming) || closed()) return;
  if (extra_headers_.empty()) {
    return post(LoopOp::Kind::kStreamHead, serialize_head(status, content_type, headers, std::nullopt, close_after_));
  }
  std::vector<HttpHeader> with = headers;
  with.insert(with.end(), extra_headers_.begin(), extra_headers_.end());
  post(LoopOp::Kind::kStreamHead, serialize_head(status, content_type, with, std::nullopt, close_after_));
}

void ResponseWriter::write_chunk(std::string_view data) {
  if (data.empty() || !streaming() || closed()) return;
  std::string bytes;
  bytes.reserve(data.size() + 12);
  append_chunk(bytes, data);
  post(LoopOp::Kind::kChunk, std::move(bytes));
}

void ResponseWriter::end_stream() {
  if (!advance(kStreaming, kDone) || closed()) return;
  post(LoopOp::Kind::kStreamEnd, std::string(kLastChunk));
}

}  // namespace sluice::http
