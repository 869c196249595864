#include "connectors/kafka/job_request.h"

#include <algorithm>

#include "connectors/http/embeddings_api.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/retrieval_api.h"

namespace sluice::kafka {
namespace {

JobError refusal(const http::ApiError& e) {
  std::string message = e.message;
  if (!e.param.empty() && message.find(e.param) == std::string::npos) message += " (body." + e.param + ")";
  return JobError{e.code.empty() ? "invalid_value" : e.code, "body: " + message, e.status};
}

// A model the worker does not serve (every model when it lists none).
std::optional<JobError> unknown_model(const std::vector<std::string>& models, const std::string& model) {
  if (models.empty() || std::find(models.begin(), models.end(), model) != models.end()) return std::nullopt;
  std::string served;
  for (const auto& m : models) served += (served.empty() ? "" : ", ") + m;
  return JobError{"model_not_found", "body.model: the model '" + model + "' does not exist; this worker serves: " + served, 404};
}

}  // namespace

std::optional<JobError> job_request_input(const Job& job, const std::vector<std::string>& models, RequestInput* out) {
  switch (job.endpoint) {
    case JobEndpoint::kChatCompletions:
    case JobEndpoint::kCompletions: {
      const auto kind = job.endpoint == JobEndpoint::kChatCompletions ? RequestInput::Kind::kChat : RequestInput::Kind::kCompletion;
      http::OpenAiRequest parsed;
      if (auto e = http::parse_openai_request(job.body, kind, &parsed)) return refusal(*e);
      if (auto e = unknown_model(models, parsed.input.model)) return e;
      *out = std::move(parsed.input);
      out->stream = false;
      return std::nullopt;
    }
    case JobEndpoint::kRetrieve: {
      RequestInput input;
      input.kind = RequestInput::Kind::kRetrieve;
      if (auto e = http::parse_retrieve_request(job.body, &input.prompt)) return refusal(*e);
      *out = std::move(input);
      return std::nullopt;
    }
    case JobEndpoint::kEmbeddings: {
      http::EmbeddingsRequest parsed;
      if (auto e = http::parse_embeddings_request(job.body, &parsed)) return refusal(*e);
      if (auto e = unknown_model(models, parsed.model)) return e;
      RequestInput input;
      input.kind = RequestInput::Kind::kEmbed;
      input.model = std::move(parsed.model);
      input.inputs = std::move(parsed.inputs);
      input.embeddings_base64 = parsed.base64;
      *out = std::move(input);
      return std::nullopt;
    }
  }
  return JobError{"unsupported_endpoint", "url: not an endpoint this worker serves", 404};
}

}  // namespace sluice::kafka
