// JobSink: receives one attempt of a Kafka job from the pipeline and hands how it ended to its
// source (KafkaSource::Impl::attempt_ended), with the answer body a client of the HTTP source
// would have got for the same request: a chat.completion / text_completion object
// (ChunkWriter::full_response) or the retrieval object (retrieval_response_body).
//
// A completion inside Pipeline::submit (the pipeline refused the job at intake) is not handed
// over: the consumer thread, which called submit, acts on it when submit returns (it holds the
// job and pauses instead of retrying). JobTask::submitting_thread marks that window.
//
// Thread-safety: a Request serialises its sink calls; take_end() only after completion.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "connectors/kafka/kafka_source_impl.h"
#include "graph/request.h"

namespace sluice::kafka {

class JobSink final : public ResponseSink {
 public:
  JobSink(KafkaSource::Impl* source, JobTaskPtr task, RequestInput::Kind kind, std::string request_id, std::string model,
          const std::vector<std::string>& stage_names);

  void on_token(std::string_view piece) override { text_.append(piece); }
  void on_event(std::string_view type, std::string_view json) override;
  void on_owned_event(std::string_view type, std::string&& json) override;
  void on_complete(const Request& request) override;

  // How the attempt ended (after on_complete).
  AttemptEnd take_end() { return std::move(end_); }

 private:
  KafkaSource::Impl* source_;
  JobTaskPtr task_;
  RequestInput::Kind kind_;
  std::string request_id_, model_;
  const std::vector<std::string>& stage_names_;
  std::string text_;
  std::string retrieval_;
  std::string embeddings_;  // the embeddings node's event (graph/embedding_result.h)
  std::vector<std::pair<std::string, std::string>> events_;
  AttemptEnd end_;
};

}  // namespace sluice::kafka
