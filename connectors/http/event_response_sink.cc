#include "connectors/http/event_response_sink.h"

#include "connectors/http/openai_response.h"

namespace sluice::http {

void EventResponseSink::on_event(std::string_view type, std::string_view json) {
  if (type == event_type_) event_.assign(json);
}

void EventResponseSink::on_owned_event(std::string_view type, std::string&& json) {
  if (type == event_type_) event_ = std::move(json);
}

void EventResponseSink::on_complete(const Request& request) {
  const Status& status = request.status();
  if (status.code == StatusCode::kCancelled && writer_->closed()) {
    metrics_->count_response(endpoint_, 499);  // the client is gone (nginx's 499)
    return;
  }
  Status outcome = status;
  if (outcome.ok() && (event_.size() < 2 || event_.front() != '{')) outcome = Status::Error(StatusCode::kInternal, missing_);
  if (!outcome.ok()) {
    HttpResponse response = error_response_for_status(outcome, request_id_);
    metrics_->count_response(endpoint_, response.status);
    writer_->send(response);
    return;
  }
  HttpResponse response{200, "application/json", {{"X-Request-Id", request_id_}}, make_body_(std::move(event_))};
  if (request.span.valid()) response.headers.push_back({"traceparent", request.span.traceparent()});
  if (request.want_timings && stage_names_) response.headers.push_back({"X-Sluice-Timings", timings_json(request, *stage_names_)});
  if (stage_names_) {
    if (std::string degraded = degradations_header(request, *stage_names_); !degraded.empty()) {
      response.headers.push_back({"X-Sluice-Degraded", std::move(degraded)});
    }
  }
  metrics_->count_response(endpoint_, 200);
  writer_->send(std::move(response));
}

}  // namespace sluice::http
