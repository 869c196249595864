#include "connectors/kafka/job_sink.h"

#include <chrono>
#include <thread>

#include "connectors/http/embeddings_api.h"
#include "connectors/http/openai_response.h"
#include "connectors/http/retrieval_response_sink.h"

namespace sluice::kafka {

JobSink::JobSink(KafkaSource::Impl* source, JobTaskPtr task, RequestInput::Kind kind, std::string request_id,
                 std::string model, const std::vector<std::string>& stage_names)
    : source_(source),
      task_(std::move(task)),
      kind_(kind),
      request_id_(std::move(request_id)),
      model_(std::move(model)),
      stage_names_(stage_names) {}

void JobSink::on_event(std::string_view type, std::string_view json) {
  if (type == "retrieval") {
    retrieval_.assign(json);
  } else if (type == kEmbeddingEvent) {
    embeddings_.assign(json);
  } else if (!connection_event(type)) {
    events_.emplace_back(std::string(type), std::string(json));
  }
}

void JobSink::on_owned_event(std::string_view type, std::string&& json) {
  if (type == "retrieval") {
    retrieval_ = std::move(json);
  } else if (type == kEmbeddingEvent) {
    embeddings_ = std::move(json);
  } else {
    on_event(type, json);
  }
}

void JobSink::on_complete(const Request& request) {
  end_.status = request.status();
  end_.request_id = request_id_;
  end_.timings_json = http::timings_json(request, stage_names_);
  if (end_.status.ok()) {
    if (kind_ == RequestInput::Kind::kEmbed) {
      if (embeddings_.size() < 2 || embeddings_.front() != '{') {
        end_.status = Status::Error(StatusCode::kInternal,
                                    "the pipeline finished the embeddings job without vectors; its path must pass an "
                                    "`embeddings` node");
      } else {
        end_.body = http::embeddings_response_body(std::move(embeddings_), model_);
      }
    } else if (kind_ == RequestInput::Kind::kRetrieve) {
      if (retrieval_.size() < 2 || retrieval_.front() != '{') {
        end_.status = Status::Error(StatusCode::kInternal,
                                    "the pipeline finished the retrieve job without ranked chunks; its path must end in an "
                                    "answer node");
      } else {
        end_.body = http::retrieval_response_body(request_id_, std::move(retrieval_));
      }
    } else {
      const auto created =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      http::ChunkWriter writer(kind_, request_id_, model_, created);
      writer.shape_for(request.input().structured);
      end_.body = writer.full_response(text_, request.finish_reason, request.usage, events_);
    }
  }
  if (task_->submitting_thread.load(std::memory_order_acquire) == std::this_thread::get_id()) {
    task_->completed_in_submit = true;  // the consumer thread acts once submit returns
    return;
  }
  source_->attempt_ended(task_, take_end());
}

}  // namespace sluice::kafka
