// libFuzzer target for the JSON request bodies (run by scripts/fuzz): each input is decoded as
// all four bodies, the OpenAI chat and completion requests (openai_request.h) and Sluice's
// /v1/documents and /v1/retrieve (retrieval_api.h), and read as an X-Request-Timeout and a
// traceparent header value. Every input must give a value or an ApiError: an exception that
// escapes (nlohmann's out_of_range for 1e400 once did, and aborted the server) crashes the
// fuzzer, which is the point, so nothing here catches. Besides:
//  - an error is a 400 with a message, and its body (error_body) is valid JSON;
//  - a decoded request holds what the decoder promises (messages or a prompt, ranges);
//  - the encoders of the answer (openai_response.h) given the decoded strings as model name
//    and token text write valid JSON that carries them back unchanged: the SSE chunks
//    ("data: {...}\n\n", one line), the usage and finish chunks, the whole response and a
//    stream's error event;
//  - a structured-output grammar (response_format, tools) can always be completed: from the
//    start, a byte that lowers the matcher's min_remaining by one always exists, and after
//    min_bytes of them the text is accepted and parses as JSON (the budget rule's premise); the
//    input's own bytes run through the matcher without harm; a tool call's answer encodes;
//  - parse_timeout_header gives a positive duration of at most a day, or nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "connectors/http/embeddings_api.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/openai_response.h"
#include "connectors/http/retrieval_api.h"
#include "inference/constrain/json_matcher.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice;
using namespace sluice::http;
using nlohmann::json;
using sluice::fuzzing::must_parse;

void check_error(const ApiError& e) {
  FUZZ_CHECK(e.status == 400);
  FUZZ_CHECK(!e.message.empty());
  json j = must_parse(error_body(e), "error body");
  FUZZ_CHECK(j["error"]["message"].is_string());
  FUZZ_CHECK(e.param.empty() ? j["error"]["param"].is_null() : j["error"]["param"] == e.param);
}

// One SSE event "data: <json>\n\n" whose JSON parses; returns it.
json sse_payload(const std::string& event) {
  FUZZ_CHECK(event.rfind("data: ", 0) == 0);
  FUZZ_CHECK(event.size() >= 8 && event.compare(event.size() - 2, 2, "\n\n") == 0);
  std::string payload = event.substr(6, event.size() - 8);
  FUZZ_CHECK(payload.find('\n') == std::string::npos && payload.find('\r') == std::string::npos);
  return must_parse(payload, "SSE chunk");
}

// The decoded strings, written back by the answer's encoders, must come back unchanged.
void check_encoders(const OpenAiRequest& req, RequestInput::Kind kind) {
  const RequestInput& in = req.input;
  const bool chat = kind == RequestInput::Kind::kChat;
  std::vector<std::string> pieces;
  if (chat) {
    for (const ChatMessage& m : in.messages) pieces.push_back(m.content);
  } else {
    pieces.push_back(in.prompt);
  }
  for (const std::string& s : in.stop) pieces.push_back(s);

  ChunkWriter writer(kind, chat ? "chatcmpl-1" : "cmpl-1", in.model, 1700000000);
  std::string text;
  for (const std::string& piece : pieces) {
    json chunk = sse_payload(writer.content_event(piece));
    FUZZ_CHECK(chunk["model"] == in.model);
    const json& choice = chunk["choices"][0];
    FUZZ_CHECK(chat ? choice["delta"]["content"] == piece : choice["text"] == piece);
    text += piece;
  }
  const std::string& finish = pieces.empty() ? in.model : pieces.back();  // fuzzed text as a finish reason
  FUZZ_CHECK(sse_payload(writer.finish_event(finish))["choices"][0]["finish_reason"] == finish);
  const Usage usage{static_cast<int>(text.size() & 0xffff), static_cast<int>(pieces.size())};
  FUZZ_CHECK(sse_payload(writer.usage_event(usage))["usage"]["total_tokens"] == usage.prompt_tokens + usage.completion_tokens);

  std::string event_data = "{\"text\":";
  append_json_string(event_data, in.model);
  event_data += '}';
  json full = must_parse(writer.full_response(text, finish, usage, {{in.model, event_data}}), "full response");
  FUZZ_CHECK(full["model"] == in.model);
  FUZZ_CHECK(chat ? full["choices"][0]["message"]["content"] == text : full["choices"][0]["text"] == text);
  FUZZ_CHECK(full["sluice_" + in.model]["text"] == in.model);
  FUZZ_CHECK(sse_payload(writer.finish_event(finish, {{in.model, event_data}}))["sluice_" + in.model]["text"] == in.model);

  ApiError failed{500, text, "server_error", in.model, ""};
  FUZZ_CHECK(sse_payload(ChunkWriter::error_event(failed))["error"]["message"] == text);
}

void check_grammar(const constrain::JsonGrammar& g, std::string_view body) {
  constrain::JsonMatcher m(g);
  constrain::MatchState s = m.start(), next;
  for (unsigned char c : body) {  // arbitrary bytes: dead or alive, never a crash
    m.advance(s, c, next);
    if (next.empty()) break;
    std::swap(s, next);
  }
  if (g.min_bytes() > 512) return;
  s = m.start();
  std::string text;
  while (!m.accepts(s)) {
    const std::uint32_t need = m.min_remaining(s);
    bool stepped = false;
    for (int c = 0; c < 256 && !stepped; ++c) {
      m.advance(s, std::uint8_t(c), next);
      if (!next.empty() && m.min_remaining(next) + 1 == need) {
        std::swap(s, next);
        text += char(c);
        stepped = true;
      }
    }
    FUZZ_CHECK(stepped);
    FUZZ_CHECK(text.size() <= g.min_bytes());
  }
  FUZZ_CHECK(text.size() == g.min_bytes());
  FUZZ_CHECK(json::accept(text));
}

void check_request(const OpenAiRequest& req, RequestInput::Kind kind, std::string_view body) {
  const RequestInput& in = req.input;
  FUZZ_CHECK(in.kind == kind);
  if (kind == RequestInput::Kind::kChat) {
    FUZZ_CHECK(!in.messages.empty());
    for (const ChatMessage& m : in.messages) FUZZ_CHECK(!m.role.empty());
  }
  FUZZ_CHECK(in.max_tokens == -1 || (in.max_tokens >= 1 && in.max_tokens <= (1 << 24)));
  FUZZ_CHECK(in.sampling.temperature >= 0 && in.sampling.temperature <= 2);
  FUZZ_CHECK(in.sampling.top_p >= 0 && in.sampling.top_p <= 1);
  FUZZ_CHECK(in.sampling.top_k >= 0);
  FUZZ_CHECK(in.stop.size() <= 16);
  FUZZ_CHECK((in.structured.kind == StructuredOutput::Kind::kText) == (in.structured.grammar == nullptr));
  if (in.structured.grammar) check_grammar(*in.structured.grammar, body);
  if (in.structured.kind == StructuredOutput::Kind::kToolCall) {
    ChunkWriter writer(kind, "chatcmpl-1", in.model, 1700000000);
    writer.shape_for(in.structured);
    json full = must_parse(writer.full_response(in.model, "stop", Usage{}, {}), "tool call response");
    FUZZ_CHECK(full["choices"][0]["finish_reason"] == "tool_calls");
    FUZZ_CHECK(full["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].is_string());
    sse_payload(writer.tool_call_event(in.model));
  }
  check_encoders(req, kind);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  for (RequestInput::Kind kind : {RequestInput::Kind::kChat, RequestInput::Kind::kCompletion}) {
    OpenAiRequest req;
    if (auto e = parse_openai_request(body, kind, &req)) {
      check_error(*e);
    } else {
      check_request(req, kind, body);
    }
  }

  DocumentChanges changes;
  if (auto e = parse_documents_request(body, &changes)) {
    check_error(*e);
  } else {
    FUZZ_CHECK(!changes.upserts.empty() || !changes.deletes.empty());
    for (const DocumentUpsert& u : changes.upserts) FUZZ_CHECK(!u.id.empty() && !u.text.empty());
    for (const std::string& id : changes.deletes) FUZZ_CHECK(!id.empty());
  }

  std::string query;
  if (auto e = parse_retrieve_request(body, &query)) {
    check_error(*e);
  } else {
    FUZZ_CHECK(query.find_first_not_of(" \t\r\n") != std::string::npos);
  }

  // Embeddings: a parsed request has texts and a model; the response body built around its
  // vectors must be valid JSON with every input's row, in both encodings.
  EmbeddingsRequest er;
  if (auto e = parse_embeddings_request(body, &er)) {
    check_error(*e);
  } else {
    FUZZ_CHECK(!er.inputs.empty());
    EmbeddingResult result;
    result.dimension = 3;
    for (size_t i = 0; i < std::min<size_t>(er.inputs.size(), 8); ++i)
      for (int k = 0; k < 3; ++k) result.vectors.push_back(float(er.inputs[i].size()) * (k - 1) / 7.0f);
    result.prompt_tokens = int(er.inputs.size());
    for (bool base64 : {false, true}) {
      json j = must_parse(embeddings_response_body(embedding_event_json(result, base64), er.model), "embeddings body");
      FUZZ_CHECK(j["data"].size() == result.vectors.size() / 3 && j["model"] == er.model);
    }
  }

  if (auto t = parse_timeout_header(body)) FUZZ_CHECK(*t > 0 && *t <= 86400LL * 1'000'000'000);
  (void)valid_traceparent(body);
  return 0;
}
