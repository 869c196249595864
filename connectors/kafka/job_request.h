// A job's request: the pipeline input a Kafka job asks for, checked as the HTTP source checks
// the same body (connectors/http/openai_request.h, retrieval_api.h), so a job line and an HTTP
// request with that body are refused or answered alike.
//
// /v1/chat/completions and /v1/completions: the OpenAI body (a job never streams: "stream" is
// ignored, as OpenAI's Batch API does); /v1/retrieve: {"query"}. /v1/embeddings is refused with
// unsupported_endpoint until Sluice serves embeddings. A model outside `models` (when that is
// not empty) is refused with model_not_found. Every refusal is final: the job is dead-lettered.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "connectors/kafka/job_codec.h"
#include "graph/request.h"

namespace sluice::kafka {

std::optional<JobError> job_request_input(const Job& job, const std::vector<std::string>& models, RequestInput* out);

}  // namespace sluice::kafka
