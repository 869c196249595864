// The job record codec (connectors/kafka/job_codec.h): OpenAI Batch lines and sluice.jobs.v1.Job
// messages in, with the job id's sources and the retry fields (x_sluice) round-tripping; every
// class of malformed record refused with its code and a message naming the field; results and
// dead letters in the OpenAI Batch output shape and as messages, valid JSON whatever the bytes.
#include "connectors/kafka/job_codec.h"

#include <gmock/gmock.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sluice/jobs.pb.h"

namespace sluice::kafka {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace pb = sluice::jobs::v1;

// The example of the OpenAI Batch API guide (platform.openai.com/docs/guides/batch), one line.
const std::string kOpenAiLine =
    R"({"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-3.5-turbo-0125", )"
    R"("messages": [{"role": "system", "content": "You are a helpful assistant."},{"role": "user", "content": "Hello world!"}],"max_tokens": 1000}})";

const RecordRef kWhere{"jobs", 3, 42, ""};

Job decoded(std::string_view payload, const RecordRef& where = kWhere) {
  DecodedJob d = decode_job(payload, where);
  if (auto* f = std::get_if<DecodeFailure>(&d)) {
    ADD_FAILURE() << "refused: " << f->code << ": " << f->message;
    return Job{};
  }
  return std::get<Job>(d);
}

DecodeFailure refused(std::string_view payload, const RecordRef& where = kWhere) {
  DecodedJob d = decode_job(payload, where);
  if (auto* j = std::get_if<Job>(&d)) {
    ADD_FAILURE() << "accepted, as job " << j->id;
    return DecodeFailure{};
  }
  return std::get<DecodeFailure>(d);
}

json parsed(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not valid JSON: " << text;
  return j;
}

template <class Json>
std::vector<std::string> keys(const Json& object) {
  std::vector<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.push_back(it.key());
  return out;
}

// The top-level keys of a JSON text in the order written (json sorts them).
std::vector<std::string> written_keys(const std::string& text) {
  return keys(nlohmann::ordered_json::parse(text));
}

Job full_job(JobEncoding encoding) {
  Job job;
  job.id = "request-7";
  job.custom_id = "request-7";
  job.endpoint = JobEndpoint::kEmbeddings;
  job.body = R"({"input":"héllo","model":"e5"})";
  job.priority = "P0";
  job.attempt = 2;
  job.not_before_unix_ms = 1'700'000'000'500;
  job.deadline_unix_ms = 1'700'000'060'000;
  job.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  job.tenant = "team-a";
  job.errors = {{"overloaded", "queue full", 429, 1, 1'700'000'000'000}, {"deadline_exceeded", "too slow", 504, 2, 1'700'000'000'400}};
  job.encoding = encoding;
  return job;
}

void expect_same_job(const Job& a, const Job& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.custom_id, b.custom_id);
  EXPECT_EQ(a.endpoint, b.endpoint);
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.not_before_unix_ms, b.not_before_unix_ms);
  EXPECT_EQ(a.deadline_unix_ms, b.deadline_unix_ms);
  EXPECT_EQ(a.traceparent, b.traceparent);
  EXPECT_EQ(a.tenant, b.tenant);
  EXPECT_EQ(a.encoding, b.encoding);
  ASSERT_EQ(a.errors.size(), b.errors.size());
  for (std::size_t i = 0; i < a.errors.size(); ++i) {
    EXPECT_EQ(a.errors[i].code, b.errors[i].code);
    EXPECT_EQ(a.errors[i].message, b.errors[i].message);
    EXPECT_EQ(a.errors[i].status, b.errors[i].status);
    EXPECT_EQ(a.errors[i].attempt, b.errors[i].attempt);
    EXPECT_EQ(a.errors[i].at_unix_ms, b.errors[i].at_unix_ms);
  }
}

// ---- decoding -------------------------------------------------------------------------------

TEST(JobCodec, DecodesTheOpenAiBatchExample) {
  Job job = decoded(kOpenAiLine);
  EXPECT_EQ(job.id, "request-1");
  EXPECT_EQ(job.custom_id, "request-1");
  EXPECT_EQ(job.endpoint, JobEndpoint::kChatCompletions);
  EXPECT_EQ(job.encoding, JobEncoding::kJson);
  EXPECT_EQ(json::parse(job.body), json::parse(kOpenAiLine)["body"]);
  EXPECT_EQ(job.attempt, 0u);
  EXPECT_TRUE(job.priority.empty());
  EXPECT_TRUE(job.errors.empty());
}

TEST(JobCodec, TheBodyKeepsItsMembersInTheOrderWritten) {
  // A JSON schema's properties are generated in their order: a body sorted on the way through
  // (as a tree written out again would be) changes the structured output a job gets.
  const std::string line =
      R"({"custom_id": "s-1", "url": "/v1/chat/completions", "body": {"model": "m", "messages": [], )"
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": )"
      R"({"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}}})";
  const Job job = decoded(line);
  EXPECT_EQ(job.body,
            R"({"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":)"
            R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}})");
  // The retry record carries it as it is, and decodes to the same body.
  const std::string record = encode_job(job);
  EXPECT_NE(record.find(job.body), std::string::npos) << record;
  EXPECT_EQ(decoded(record).body, job.body);
}

TEST(JobCodec, EachUrlIsItsEndpoint) {
  for (JobEndpoint e : {JobEndpoint::kChatCompletions, JobEndpoint::kCompletions, JobEndpoint::kEmbeddings, JobEndpoint::kRetrieve}) {
    const std::string url(endpoint_url(e));
    Job job = decoded(R"({"custom_id":"a","url":")" + url + R"(","body":{}})");
    EXPECT_EQ(job.endpoint, e) << url;
  }
  EXPECT_EQ(endpoint_url(JobEndpoint::kChatCompletions), "/v1/chat/completions");
  EXPECT_EQ(endpoint_url(JobEndpoint::kCompletions), "/v1/completions");
  EXPECT_EQ(endpoint_url(JobEndpoint::kEmbeddings), "/v1/embeddings");
  EXPECT_EQ(endpoint_url(JobEndpoint::kRetrieve), "/v1/retrieve");
}

TEST(JobCodec, IdIsCustomIdElseKeyElseTopicPartitionOffset) {
  const std::string line = R"({"url":"/v1/completions","body":{"prompt":"x"}})";
  EXPECT_EQ(decoded(line, RecordRef{"jobs", 3, 42, ""}).id, "jobs-3-42");
  EXPECT_EQ(decoded(line, RecordRef{"jobs", 3, 42, "user-9/job-1"}).id, "user-9/job-1");
  Job with_custom = decoded(R"({"custom_id":"c-1","url":"/v1/completions","body":{}})", RecordRef{"jobs", 3, 42, "k"});
  EXPECT_EQ(with_custom.id, "c-1");
  EXPECT_EQ(with_custom.custom_id, "c-1");
  // "custom_id": null, as OpenAI's output lines write "none".
  Job null_custom = decoded(R"({"custom_id":null,"url":"/v1/completions","body":{}})");
  EXPECT_EQ(null_custom.id, "jobs-3-42");
  EXPECT_TRUE(null_custom.custom_id.empty());
}

TEST(JobCodec, MethodIsPostWhenAbsentAndUnknownFieldsAreIgnored) {
  Job job = decoded(R"({"custom_id":"a","url":"/v1/embeddings","body":{"input":"x"},"extra":[1,2],"metadata":{"k":"v"}})");
  EXPECT_EQ(job.endpoint, JobEndpoint::kEmbeddings);
  EXPECT_EQ(job.body, R"({"input":"x"})");
  // Unknown members of x_sluice too (a newer writer's).
  EXPECT_EQ(decoded(R"({"custom_id":"a","url":"/v1/embeddings","body":{},"x_sluice":{"attempt":1,"future":true}})").attempt, 1u);
}

TEST(JobCodec, JsonWhitespaceBeforeTheObjectIsJson) {
  Job job = decoded(" \t\r\n" + kOpenAiLine + "\n");
  EXPECT_EQ(job.encoding, JobEncoding::kJson);
  EXPECT_EQ(job.id, "request-1");
}

TEST(JobCodec, XSluiceRoundTrips) {
  Job job = full_job(JobEncoding::kJson);
  const std::string line = encode_job(job);
  json j = parsed(line);
  EXPECT_EQ(written_keys(line), (std::vector<std::string>{"custom_id", "method", "url", "body", "x_sluice"}));
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["url"], "/v1/embeddings");
  EXPECT_EQ(j["body"], json::parse(job.body));
  EXPECT_EQ(j["x_sluice"]["priority"], "P0");
  EXPECT_EQ(j["x_sluice"]["attempt"], 2);
  EXPECT_EQ(j["x_sluice"]["not_before"], 1'700'000'000'500);
  EXPECT_EQ(j["x_sluice"]["deadline"], 1'700'000'060'000);
  EXPECT_EQ(j["x_sluice"]["errors"][1], json::parse(R"({"code":"deadline_exceeded","message":"too slow","status":504,"attempt":2,"at":1700000000400})"));
  EXPECT_FALSE(j["x_sluice"].contains("id")) << "custom_id is the id";
  // A retry record sits at another offset: the same job comes back.
  expect_same_job(decoded(line, RecordRef{"jobs-retry", 0, 9, "other-key"}), job);
}

TEST(JobCodec, EncodeJobOfANewJobIsTheBatchLine) {
  Job job = decoded(kOpenAiLine);
  const std::string line = encode_job(job);
  EXPECT_EQ(written_keys(line), (std::vector<std::string>{"custom_id", "method", "url", "body"})) << line;
  json j = parsed(line);
  json original = json::parse(kOpenAiLine);
  EXPECT_EQ(j, original);
}

TEST(JobCodec, AnIdFromTheKeyOrOffsetSurvivesARetry) {
  const std::string line = R"({"url":"/v1/completions","body":{"prompt":"x"}})";
  for (const RecordRef& first : {RecordRef{"jobs", 3, 42, ""}, RecordRef{"jobs", 3, 42, "key-1"}}) {
    Job job = decoded(line, first);
    job.attempt = 1;
    const std::string retry = encode_job(job);
    EXPECT_EQ(parsed(retry)["x_sluice"]["id"], job.id);
    EXPECT_FALSE(parsed(retry).contains("custom_id"));
    Job again = decoded(retry, RecordRef{"jobs-retry", 0, 7, "another-key"});
    EXPECT_EQ(again.id, job.id);
    EXPECT_TRUE(again.custom_id.empty());
    expect_same_job(again, job);
  }
}

TEST(JobCodec, ProtoRoundTrips) {
  Job job = full_job(JobEncoding::kProto);
  const std::string bytes = encode_job(job);
  pb::Job m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.endpoint(), pb::EMBEDDINGS);
  EXPECT_EQ(m.id(), "request-7");
  EXPECT_EQ(m.errors_size(), 2);
  expect_same_job(decoded(bytes, RecordRef{"jobs-retry", 1, 5, "k"}), job);

  // An id from the key is carried in Job.id, whatever the retry record's key and offset.
  Job keyed = full_job(JobEncoding::kProto);
  keyed.custom_id.clear();
  keyed.id = "from-the-key";
  expect_same_job(decoded(encode_job(keyed), RecordRef{"jobs-retry", 1, 5, "other"}), keyed);
}

TEST(JobCodec, ProtoJobWithoutIdsTakesTheKeyThenTheOffset) {
  pb::Job m;
  m.set_endpoint(pb::RETRIEVE);
  m.set_body(R"({"query":"what is sluice"})");
  const std::string bytes = m.SerializeAsString();
  EXPECT_EQ(decoded(bytes, RecordRef{"jobs", 0, 11, ""}).id, "jobs-0-11");
  Job job = decoded(bytes, RecordRef{"jobs", 0, 11, "k-2"});
  EXPECT_EQ(job.id, "k-2");
  EXPECT_EQ(job.endpoint, JobEndpoint::kRetrieve);
  EXPECT_EQ(job.encoding, JobEncoding::kProto);
}

// A serialized Job starts with its endpoint's tag (0x08) or, with none, another field's; never
// with JSON whitespace followed by '{', whatever the lengths of its strings (an id 123 bytes
// long would put 0x7B right after a 0x0A tag had id been field 1).
TEST(JobCodec, SerializedJobsAreNeverTakenForJson) {
  for (std::size_t len : {9u, 10u, 13u, 32u, 123u}) {
    Job job = full_job(JobEncoding::kProto);
    job.custom_id.clear();
    job.id = "{" + std::string(len - 1, 'x');
    const std::string bytes = encode_job(job);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x08);
    Job back = decoded(bytes);
    EXPECT_EQ(back.encoding, JobEncoding::kProto);
    EXPECT_EQ(back.id, job.id);
  }
  pb::Job no_endpoint;
  no_endpoint.set_id("x");
  no_endpoint.set_body("{}");
  const std::string bytes = no_endpoint.SerializeAsString();
  EXPECT_NE(bytes[0], '{');
  EXPECT_EQ(refused(bytes).code, "unknown_endpoint");
}

TEST(JobCodec, DetectsJsonAndProto) {
  EXPECT_EQ(decoded(kOpenAiLine).encoding, JobEncoding::kJson);
  EXPECT_EQ(decoded(encode_job(full_job(JobEncoding::kProto))).encoding, JobEncoding::kProto);
  EXPECT_EQ(decoded(encode_job(full_job(JobEncoding::kJson))).encoding, JobEncoding::kJson);
}

// ---- malformed records ------------------------------------------------------------------------

struct Malformed {
  const char* name;
  std::string payload;
  const char* code;
  JobEncoding encoding;
  const char* in_message;  // what the message must name
};

std::string truncated_proto() {
  std::string bytes = encode_job(full_job(JobEncoding::kProto));
  return bytes.substr(0, 12);  // in the middle of the id
}

std::vector<Malformed> malformed_records() {
  const std::string ok_tail = R"(,"url":"/v1/chat/completions","body":{"messages":[]}})";
  return {
      {"not JSON", "{custom_id: 1}", "invalid_json", JobEncoding::kJson, "the record is not valid JSON: parse error at line 1, column 2"},
      {"cut JSON", "{\"custom_id\":\"a\"", "invalid_json", JobEncoding::kJson, "is not valid JSON"},
      {"JSON array", "[" + kOpenAiLine + "]", "invalid_job", JobEncoding::kJson, "must be one object (an OpenAI Batch input line), got an array"},
      {"JSON string", "\"hello\"", "invalid_job", JobEncoding::kJson, "got a string"},
      {"missing url", R"({"custom_id":"a","body":{}})", "invalid_job", JobEncoding::kJson, "'url' is missing"},
      {"url not a string", R"({"custom_id":"a","url":7,"body":{}})", "invalid_job", JobEncoding::kJson, "'url' must be a string, got an integer"},
      {"unknown url", R"({"custom_id":"a","url":"/v2/x","body":{}})", "unknown_endpoint", JobEncoding::kJson,
       "'url' \"/v2/x\" is not one of /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/retrieve"},
      {"method GET", R"({"custom_id":"a","method":"GET")" + ok_tail, "invalid_method", JobEncoding::kJson, "'method' \"GET\" is not POST"},
      {"method not a string", R"({"custom_id":"a","method":1)" + ok_tail, "invalid_job", JobEncoding::kJson, "'method' must be a string"},
      {"missing body", R"({"custom_id":"a","url":"/v1/completions"})", "invalid_job", JobEncoding::kJson, "'body' is missing"},
      {"body not an object", R"({"custom_id":"a","url":"/v1/completions","body":"prompt"})", "invalid_job", JobEncoding::kJson,
       "'body' must be a JSON object, got a string"},
      {"1e400 in the body", R"({"custom_id":"a","url":"/v1/completions","body":{"prompt":"x","temperature":1e400}})", "invalid_json",
       JobEncoding::kJson, "'body.temperature' is out of range: number overflow parsing '1e400'"},
      {"1e400 in an array", R"({"custom_id":"a","url":"/v1/completions","body":{"x":[1,2,-1e400]}})", "invalid_json",
       JobEncoding::kJson, "'body.x[2]' is out of range"},
      {"custom_id of the wrong type", R"({"custom_id":42)" + ok_tail, "invalid_job", JobEncoding::kJson,
       "'custom_id' must be a string, got an integer"},
      {"empty custom_id", R"({"custom_id":"")" + ok_tail, "invalid_id", JobEncoding::kJson, "'custom_id' \"\" is not a valid job id: it is empty"},
      {"invalid UTF-8", "{\"custom_id\":\"a\xff\"" + ok_tail, "invalid_json", JobEncoding::kJson, "ill-formed UTF-8"},
      {"600-byte custom_id", R"({"custom_id":")" + std::string(600, 'c') + "\"" + ok_tail, "invalid_id", JobEncoding::kJson,
       "is not a valid job id: it is 600 bytes, over the limit of 512"},
      {"control character in custom_id", R"({"custom_id":"a\u0007b")" + ok_tail, "invalid_id", JobEncoding::kJson,
       "'custom_id' \"a\\u0007b\" is not a valid job id: it contains the control character U+0007"},
      {"x_sluice not an object", R"({"custom_id":"a","x_sluice":[])" + ok_tail, "invalid_job", JobEncoding::kJson,
       "'x_sluice' must be an object, got an array"},
      {"negative attempt", R"({"custom_id":"a","x_sluice":{"attempt":-1})" + ok_tail, "invalid_job", JobEncoding::kJson,
       "'x_sluice.attempt' must not be negative"},
      {"attempt past uint32", R"({"custom_id":"a","x_sluice":{"attempt":4294967296})" + ok_tail, "invalid_job", JobEncoding::kJson,
       "'x_sluice.attempt' 4294967296 is over the maximum of 4294967295"},
      {"fractional deadline", R"({"custom_id":"a","x_sluice":{"deadline":1.5})" + ok_tail, "invalid_job", JobEncoding::kJson,
       "'x_sluice.deadline' must be an integer, got a number"},
      {"bad error entry", R"({"custom_id":"a","x_sluice":{"errors":[{"code":"x"},{"status":"429"}]})" + ok_tail, "invalid_job",
       JobEncoding::kJson, "'x_sluice.errors[1].status' must be an integer, got a string"},
      {"600-byte key", R"({"url":"/v1/completions","body":{}})", "invalid_id", JobEncoding::kJson,
       "the record key \"kkkk"},
      {"deep nesting", R"({"custom_id":"a","url":"/v1/completions","body":)" + std::string(100, '[') + std::string(100, ']') + "}",
       "invalid_json", JobEncoding::kJson, "the record nests deeper than 65 levels"},
      {"NUL after the line", std::string(R"({"custom_id":"a","url":"/v1/completions","body":{}})") + std::string(1, '\0') + "junk",
       "invalid_json", JobEncoding::kJson, "the record is not valid JSON: a NUL byte at byte 51"},
      {"truncated protobuf", truncated_proto(), "invalid_job", JobEncoding::kProto, "nor a serialized sluice.jobs.v1.Job"},
      {"random bytes", std::string("\xff\xfe\x00\x13garbage\x80", 12), "invalid_job", JobEncoding::kProto,
       "nor a serialized sluice.jobs.v1.Job"},
      {"empty record", "", "invalid_job", JobEncoding::kProto, "the record is empty"},
      {"only whitespace", " \n", "invalid_job", JobEncoding::kProto, "only whitespace"},
  };
}

TEST(JobCodec, MalformedRecordsAreRefusedNamingTheField) {
  for (const Malformed& m : malformed_records()) {
    SCOPED_TRACE(m.name);
    RecordRef where = kWhere;
    const std::string long_key(600, 'k');
    if (std::string_view(m.name) == "600-byte key") where.key = long_key;
    DecodeFailure f = refused(m.payload, where);
    EXPECT_EQ(f.code, m.code);
    EXPECT_EQ(f.encoding, m.encoding);
    EXPECT_THAT(f.message, HasSubstr(m.in_message));
    // The message is safe to write anywhere: it survives a JSON dead letter unchanged.
    DeadLetterInput letter;
    letter.original = m.payload;
    letter.source = where;
    letter.reason = {f.code, f.message, 400, 0, 0};
    EXPECT_EQ(parsed(encode_dead_letter(letter))["reason"]["message"], f.message);
  }
}

// A refused record answers under the id it names: its custom_id once read (and valid), else
// the key, else topic-partition-offset; its dead letter and error result carry that custom_id.
TEST(JobCodec, RefusedRecordsKeepTheirCustomIdAndId) {
  DecodeFailure bad_url = refused(R"({"custom_id":"a-7","url":"/v1/nowhere","body":{}})");
  EXPECT_EQ(bad_url.code, "unknown_endpoint");
  EXPECT_EQ(bad_url.custom_id, "a-7");
  EXPECT_EQ(bad_url.id, "a-7");
  DeadLetterInput letter;
  letter.failure = &bad_url;
  letter.original = "x";
  letter.source = kWhere;
  letter.reason = {bad_url.code, bad_url.message, 400, 0, 0};
  const auto d = parsed(encode_dead_letter(letter));
  EXPECT_EQ(d["custom_id"], "a-7");
  EXPECT_EQ(d["id"], "a-7");
  Job undecoded;
  undecoded.id = bad_url.id;
  undecoded.custom_id = bad_url.custom_id;
  JobOutcome outcome;
  outcome.error = letter.reason;
  EXPECT_EQ(parsed(encode_result(undecoded, outcome))["custom_id"], "a-7");

  // Not read (the JSON breaks first): the key, else where the record is.
  RecordRef keyed = kWhere;
  keyed.key = "the-key";
  EXPECT_EQ(refused("{\"custom_id\":", keyed).id, "the-key");
  EXPECT_EQ(refused("{\"custom_id\":", keyed).custom_id, "");
  const std::string by_offset =
      std::string(kWhere.topic) + "-" + std::to_string(kWhere.partition) + "-" + std::to_string(kWhere.offset);
  EXPECT_EQ(refused("{\"custom_id\":").id, by_offset);
  // Read but not a valid id: kept as custom_id (quoted in the message), not used as the key.
  DecodeFailure long_id = refused(R"({"custom_id":")" + std::string(600, 'c') + R"(","url":"/v1/completions","body":{}})");
  EXPECT_EQ(long_id.code, "invalid_id");
  EXPECT_EQ(long_id.id, by_offset);
  // Protobuf: the custom_id is read before the endpoint is checked.
  pb::Job unknown;
  unknown.set_custom_id("p-9");
  unknown.set_endpoint(static_cast<pb::Endpoint>(9));
  unknown.set_body("{}");
  DecodeFailure proto = refused(unknown.SerializeAsString());
  EXPECT_EQ(proto.code, "unknown_endpoint");
  EXPECT_EQ(proto.id, "p-9");
}

TEST(JobCodec, MalformedProtoJobsAreRefusedNamingTheField) {
  auto job = [] {
    pb::Job m;
    m.set_endpoint(pb::COMPLETIONS);
    m.set_custom_id("p-1");
    m.set_body(R"({"prompt":"x"})");
    return m;
  };
  pb::Job unspecified = job();
  unspecified.set_endpoint(pb::ENDPOINT_UNSPECIFIED);
  DecodeFailure f = refused(unspecified.SerializeAsString());
  EXPECT_EQ(f.code, "unknown_endpoint");
  EXPECT_EQ(f.encoding, JobEncoding::kProto);
  EXPECT_THAT(f.message, HasSubstr("'endpoint' is ENDPOINT_UNSPECIFIED"));

  pb::Job unknown = job();
  unknown.set_endpoint(static_cast<pb::Endpoint>(9));
  EXPECT_THAT(refused(unknown.SerializeAsString()).message, HasSubstr("'endpoint' 9 is unknown"));

  pb::Job no_body = job();
  no_body.clear_body();
  EXPECT_THAT(refused(no_body.SerializeAsString()).message, HasSubstr("'body' is missing"));

  pb::Job array_body = job();
  array_body.set_body("[1]");
  f = refused(array_body.SerializeAsString());
  EXPECT_EQ(f.code, "invalid_job");
  EXPECT_THAT(f.message, HasSubstr("'body' must be a JSON object, got an array"));

  pb::Job bad_body = job();
  bad_body.set_body(R"({"prompt":)");
  EXPECT_THAT(refused(bad_body.SerializeAsString()).message, HasSubstr("'body' is not valid JSON"));

  pb::Job huge_body = job();
  huge_body.set_body(R"({"n":1e400})");
  EXPECT_THAT(refused(huge_body.SerializeAsString()).message, HasSubstr("'body.n' is out of range"));

  pb::Job long_id = job();
  long_id.set_custom_id(std::string(600, 'i'));
  f = refused(long_id.SerializeAsString());
  EXPECT_EQ(f.code, "invalid_id");
  EXPECT_THAT(f.message, HasSubstr("'custom_id' \"iiii"));
  EXPECT_THAT(f.message, HasSubstr("it is 600 bytes, over the limit of 512"));
}

// ---- results and dead letters ------------------------------------------------------------------

TEST(JobCodec, OkResultIsAnOpenAiBatchOutputLine) {
  Job job = decoded(kOpenAiLine);
  JobOutcome outcome;
  outcome.ok = true;
  outcome.status_code = 200;
  outcome.request_id = "chatcmpl-7";
  outcome.body = R"({"id":"chatcmpl-7","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"}}]})";
  outcome.attempts = 1;
  outcome.timings_json = R"({"stages":[{"name":"generate","us":1200}],"total_us":1500})";
  const std::string line = encode_result(job, outcome);
  EXPECT_EQ(written_keys(line), (std::vector<std::string>{"id", "custom_id", "response", "error", "x_sluice"}));
  json r = parsed(line);
  EXPECT_EQ(r["id"], "request-1");
  EXPECT_EQ(r["custom_id"], "request-1");
  EXPECT_EQ(r["response"]["status_code"], 200);
  EXPECT_EQ(r["response"]["request_id"], "chatcmpl-7");
  EXPECT_EQ(r["response"]["body"], json::parse(outcome.body));
  EXPECT_TRUE(r["error"].is_null());
  EXPECT_EQ(r["x_sluice"]["attempts"], 1);
  EXPECT_EQ(r["x_sluice"]["timings"]["total_us"], 1500);
}

TEST(JobCodec, AnOkResultCarriesTheAnswersBodyAsTheEndpointWroteIt) {
  Job job = decoded(kOpenAiLine);
  JobOutcome outcome;
  outcome.ok = true;
  outcome.status_code = 200;
  // Not in key order: a body is spliced as it is, not re-sorted through a tree.
  outcome.body = R"({"id":"chatcmpl-7","object":"chat.completion","choices":[],"created":1})";
  std::string line = encode_result(job, outcome);
  EXPECT_NE(line.find(R"("body":{"id":"chatcmpl-7","object":"chat.completion","choices":[],"created":1})"), std::string::npos)
      << line;
  // A body over several lines is still embedded as JSON, and the record stays one line.
  outcome.body = "{\n  \"id\": \"chatcmpl-8\",\n  \"choices\": []\n}";
  line = encode_result(job, outcome);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(parsed(line)["response"]["body"], json::parse(outcome.body));
  // A body that is not JSON (or nests past the bound) is a string, so the line still parses.
  outcome.body = R"({"id": "unterminated)";
  EXPECT_EQ(parsed(encode_result(job, outcome))["response"]["body"], outcome.body);
  outcome.body = std::string("1\0x", 3);  // nlohmann's lexer would stop at the NUL and accept "1"
  EXPECT_EQ(parsed(encode_result(job, outcome))["response"]["body"], outcome.body);
  outcome.body = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(parsed(encode_result(job, outcome))["response"]["body"], outcome.body);
}

// The Kafka source's own results (written_by_sluice): body and timings spliced as written, once
// they are one line of valid UTF-8; a model's text that ends mid-character, or a line break, sends
// them through the checked path, so the line still parses.
TEST(JobCodec, ABodySluiceWroteIsSplicedAsWrittenUnlessItIsNotOneLineOfUtf8) {
  Job job = decoded(kOpenAiLine);
  JobOutcome outcome;
  outcome.ok = true;
  outcome.written_by_sluice = true;
  outcome.body = R"({"id":"chatcmpl-9","choices":[{"message":{"content":"naïve café — ok"}}],"x":"ü€😀"})";
  outcome.timings_json = R"({"stages":[{"name":"answer","service_us":12}],"total_us":15})";
  std::string line = encode_result(job, outcome);
  EXPECT_NE(line.find(R"("body":)" + outcome.body), std::string::npos) << line;
  EXPECT_NE(line.find(R"("timings":)" + outcome.timings_json), std::string::npos) << line;
  EXPECT_EQ(parsed(line)["response"]["body"], json::parse(outcome.body));
  outcome.body.clear();  // no JSON at all: written as an empty string, the line still parses
  EXPECT_EQ(parsed(encode_result(job, outcome))["response"]["body"], "");
  // Long enough for the eight-byte steps, with the break or the bad byte at every offset.
  const std::string long_text(64, 'a');
  for (std::size_t at = 0; at < long_text.size(); ++at) {
    for (const std::string& odd : {std::string("\n"), std::string("\r"), std::string("\xC3"), std::string("\xE2\x82")}) {
      std::string text = long_text;
      text.insert(at, odd);
      outcome.body = "{\"content\":\"" + text + "\"}";
      line = encode_result(job, outcome);
      ASSERT_EQ(line.find('\n'), std::string::npos) << at;
      const json r = parsed(line);
      ASSERT_TRUE(r["response"]["body"].is_string()) << "not spliced: checked, and not JSON as it stands; at " << at;
    }
  }
}

TEST(JobCodec, FailedResultHasAnErrorAndNoResponse) {
  Job job = decoded(R"({"url":"/v1/completions","body":{}})", RecordRef{"jobs", 1, 2, ""});
  JobOutcome outcome;
  outcome.ok = false;
  outcome.error = {"deadline_exceeded", "gave up after 3 attempts", 504, 3, 1'700'000'000'000};
  outcome.attempts = 3;
  json r = parsed(encode_result(job, outcome));
  EXPECT_EQ(r["id"], "jobs-1-2");
  EXPECT_TRUE(r["custom_id"].is_null());
  EXPECT_TRUE(r["response"].is_null());
  EXPECT_EQ(r["error"], json::parse(R"({"code":"deadline_exceeded","message":"gave up after 3 attempts"})"));
  EXPECT_EQ(r["x_sluice"], json::parse(R"({"attempts":3})")) << "no tenant: none written";
  job.tenant = "team-a";
  EXPECT_EQ(parsed(encode_result(job, outcome))["x_sluice"]["tenant"], "team-a");
}

TEST(JobCodec, ResultsAreValidJsonWhateverTheBytes) {
  Job job = decoded(kOpenAiLine);
  job.id = "bad\xff id";
  JobOutcome outcome;
  outcome.ok = true;
  outcome.request_id = "r\xc3";
  outcome.body = "not json \x80";
  outcome.timings_json = "{\"stages\":";
  json r = parsed(encode_result(job, outcome));
  EXPECT_EQ(r["id"], "bad\xEF\xBF\xBD id");
  EXPECT_EQ(r["response"]["request_id"], "r\xEF\xBF\xBD");
  EXPECT_EQ(r["response"]["body"], "not json \xEF\xBF\xBD") << "a body that is not JSON is embedded as a string";
  EXPECT_EQ(r["x_sluice"]["timings"], "{\"stages\":");
}

TEST(JobCodec, ProtoResultParses) {
  Job job = full_job(JobEncoding::kProto);
  JobOutcome outcome;
  outcome.ok = true;
  outcome.status_code = 200;
  outcome.request_id = "emb-3";
  outcome.body = R"({"data":[]})";
  outcome.attempts = 3;
  outcome.timings_json = R"({"total_us":9})";
  pb::JobResult m;
  ASSERT_TRUE(m.ParseFromString(encode_result(job, outcome)));
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(m.job_id(), "request-7");
  EXPECT_EQ(m.custom_id(), "request-7");
  EXPECT_EQ(m.status_code(), 200);
  EXPECT_EQ(m.request_id(), "emb-3");
  EXPECT_EQ(m.body(), outcome.body);
  EXPECT_EQ(m.attempts(), 3u);
  EXPECT_EQ(m.timings_json(), outcome.timings_json);
  EXPECT_EQ(m.tenant(), "team-a");
  EXPECT_FALSE(m.has_error());

  outcome.ok = false;
  outcome.error = {"overloaded", "still full", 429, 3, 5};
  ASSERT_TRUE(m.ParseFromString(encode_result(job, outcome)));
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), "overloaded");
  EXPECT_EQ(m.error().status(), 429);
  EXPECT_EQ(m.error().attempt(), 3u);
}

TEST(JobCodec, DeadLetterOfGarbageIsValidJsonWithTheExactBytes) {
  const std::string garbage("\xff\x00\xfe{\xc3(\x80garbage\n", 15);
  DecodeFailure f = refused(garbage);
  DeadLetterInput letter;
  letter.encoding = JobEncoding::kJson;
  letter.original = garbage;
  letter.source = kWhere;
  letter.reason = {f.code, f.message, 400, 0, 0};
  const std::string text = encode_dead_letter(letter);
  EXPECT_EQ(written_keys(text), (std::vector<std::string>{"id", "custom_id", "reason", "attempts", "errors", "source",
                                                           "original", "original_base64"}));
  json d = parsed(text);
  EXPECT_TRUE(d["id"].is_null());
  EXPECT_TRUE(d["custom_id"].is_null());
  EXPECT_EQ(d["reason"]["code"], "invalid_job");
  EXPECT_EQ(d["attempts"], 0);
  EXPECT_EQ(d["errors"], json::array());
  EXPECT_EQ(d["source"], json::parse(R"({"topic":"jobs","partition":3,"offset":42})"));
  EXPECT_EQ(d["original"], std::string("\xEF\xBF\xBD\x00\xEF\xBF\xBD{\xEF\xBF\xBD(\xEF\xBF\xBDgarbage\n", 23));
  EXPECT_EQ(d["original_base64"], "/wD+e8MogGdhcmJhZ2UK");
}

TEST(JobCodec, DeadLetterBase64PadsEveryLength) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, b64] : cases) {
    DeadLetterInput letter;
    letter.original = bytes;
    EXPECT_EQ(parsed(encode_dead_letter(letter))["original_base64"], b64) << bytes;
  }
}

TEST(JobCodec, DeadLetterOfAJobCarriesItsErrors) {
  Job job = full_job(JobEncoding::kJson);
  const std::string original = encode_job(job);
  DeadLetterInput letter;
  letter.job = &job;
  letter.original = original;
  letter.source = RecordRef{"jobs-retry", 2, 100, ""};
  letter.reason = {"deadline_exceeded", "past its deadline", 504, 3, 7};
  letter.attempts = 3;
  json d = parsed(encode_dead_letter(letter));
  EXPECT_EQ(d["id"], "request-7");
  EXPECT_EQ(d["custom_id"], "request-7");
  EXPECT_EQ(d["reason"], json::parse(R"({"code":"deadline_exceeded","message":"past its deadline"})"));
  EXPECT_EQ(d["attempts"], 3);
  ASSERT_EQ(d["errors"].size(), 2u);
  EXPECT_EQ(d["errors"][0]["code"], "overloaded");
  EXPECT_EQ(d["original"], original);

  // In the job's encoding: a proto job's letter is a DeadLetter message with the bytes exactly.
  Job proto_job = full_job(JobEncoding::kProto);
  const std::string proto_original = encode_job(proto_job);
  letter.job = &proto_job;
  letter.encoding = JobEncoding::kJson;  // ignored: the job says
  letter.original = proto_original;
  pb::DeadLetter m;
  ASSERT_TRUE(m.ParseFromString(encode_dead_letter(letter)));
  EXPECT_EQ(m.original(), proto_original);
  EXPECT_EQ(m.job().id(), "request-7");
  EXPECT_EQ(m.id(), "request-7");
  EXPECT_EQ(m.custom_id(), "request-7");
  EXPECT_EQ(m.source_topic(), "jobs-retry");
  EXPECT_EQ(m.source_partition(), 2);
  EXPECT_EQ(m.source_offset(), 100);
  EXPECT_EQ(m.reason().code(), "deadline_exceeded");
  EXPECT_EQ(m.attempts(), 3u);
  EXPECT_EQ(m.errors_size(), 2);
}

TEST(JobCodec, ProtoDeadLetterOfGarbageKeepsTheBytes) {
  const std::string garbage("\xff\x00\xfe\x80", 4);
  DeadLetterInput letter;
  letter.encoding = JobEncoding::kProto;
  letter.original = garbage;
  letter.source = RecordRef{"jobs\xff", 0, 1, ""};
  letter.reason = {"invalid_job", "not a job", 400, 0, 0};
  pb::DeadLetter m;
  ASSERT_TRUE(m.ParseFromString(encode_dead_letter(letter)));
  EXPECT_FALSE(m.has_job());
  EXPECT_EQ(m.original(), garbage);
  EXPECT_EQ(m.source_topic(), "jobs\xEF\xBF\xBD");
  EXPECT_EQ(m.reason().message(), "not a job");

  // A protobuf record refused after its custom_id was read keeps it, as the JSON letter does.
  pb::Job refused;
  refused.set_endpoint(pb::CHAT_COMPLETIONS);
  refused.set_custom_id("kept-7");
  refused.set_body("[1]");  // not a JSON object
  const std::string bytes = refused.SerializeAsString();
  DecodedJob decoded = decode_job(bytes, RecordRef{"jobs", 0, 2, ""});
  ASSERT_TRUE(std::holds_alternative<DecodeFailure>(decoded));
  const DecodeFailure failure = std::get<DecodeFailure>(decoded);
  DeadLetterInput refused_letter;
  refused_letter.failure = &failure;
  refused_letter.encoding = failure.encoding;
  refused_letter.original = bytes;
  refused_letter.source = RecordRef{"jobs", 0, 2, ""};
  refused_letter.reason = {failure.code, failure.message, 400, 1, 0};
  pb::DeadLetter r;
  ASSERT_TRUE(r.ParseFromString(encode_dead_letter(refused_letter)));
  EXPECT_EQ(r.custom_id(), "kept-7");
  EXPECT_EQ(r.id(), "kept-7");
}

}  // namespace
}  // namespace sluice::kafka
